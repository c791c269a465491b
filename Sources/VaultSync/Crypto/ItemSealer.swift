public import Crypto
import Foundation

/// Seals items for the server, which must learn nothing secret: each version of an item is
/// encrypted (AES-256-GCM) with a fresh item key, and that key is wrapped by the vault key.
///
/// - **Two parts, sealed apart** (1Password's overview and details): the overview holds what lists
///   and AutoFill need — title, services, user, folder (with their earlier versions, which merges
///   need), and whether the item is deleted — so they decrypt it alone; the details hold the rest
///   (password and its history, notes, TOTP secret, passkeys, sign-in link) and the tombstone.
///   Each part is a record of its own, and their merge is the item.
/// - **Bound to their place**: each part's associated data is the vault id, the item id, the
///   version and the part's name, so the server cannot hand one item's ciphertext out as another's,
///   an old version as a newer one, another vault's item as this vault's, or swap two parts.
/// - **Padded to buckets** (``SizeBuckets``), so a length tells little.
/// - **A fresh item key per version**: a version is sealed once (its version number is part of the
///   associated data anyway), so a key never seals more than three messages and random nonces are
///   safe; rotating the vault key re-wraps nothing old and re-seals lazily, at the next write.
///
/// Keys and nonces come from the injected generator (the system's in production): tests replay
/// sealing exactly, and nothing here reads randomness of its own.
public struct ItemSealer: Sendable {
    /// The fields of the overview part (the rest, and all history, are the details).
    public static let overviewFields: Set<FieldKey> = [.title, .services, .user, .folder]

    let vaultKey: SymmetricKey
    public let vault: VaultID

    /// A sealer for the vault `vault` whose key is `vaultKey` (256 bits).
    public init(vaultKey: SymmetricKey, vault: VaultID) {
        self.vaultKey = vaultKey
        self.vault = vault
    }

    /// Seals `record` as version `version` of its item.
    public func seal(
        _ record: SyncRecord,
        version: UInt64,
        using generator: inout some RandomNumberGenerator
    ) throws(VaultSyncError) -> SealedItem {
        let itemKeyBytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let itemKey = SymmetricKey(data: itemKeyBytes)
        let (overview, details) = Self.split(record)
        return SealedItem(
            item: record.id,
            version: version,
            wrappedKey: try box(
                itemKeyBytes,
                key: vaultKey,
                part: "key",
                item: record.id,
                version: version,
                &generator
            ),
            overview: try box(
                SizeBuckets.pad([record.isDeleted ? 1 : 0] + overview.canonicalBytes),
                key: itemKey,
                part: "overview",
                item: record.id,
                version: version,
                &generator
            ),
            details: try box(
                SizeBuckets.pad(details.canonicalBytes),
                key: itemKey,
                part: "details",
                item: record.id,
                version: version,
                &generator
            )
        )
    }

    /// Opens the whole record of `sealed`, which the server said is version `version` of `item`.
    ///
    /// - Throws: ``VaultSyncError/Code/cannotOpen`` when anything does not authenticate (another
    ///   item, version or vault, a swapped part, an altered byte, another vault key).
    public func open(_ sealed: SealedItem, item: ItemID, version: UInt64) throws(VaultSyncError) -> SyncRecord {
        let itemKey = try unwrapKey(sealed, item: item, version: version)
        let overview = try part(sealed.overview, key: itemKey, name: "overview", item: item, version: version)
        let details = try part(sealed.details, key: itemKey, name: "details", item: item, version: version)
        guard overview.first.map({ $0 <= 1 }) == true else { throw cannotOpen(item, version) }
        let record = try SyncRecord(canonicalBytes: Array(overview.dropFirst()))
            .merged(with: SyncRecord(canonicalBytes: details))
        guard record.id == item else { throw cannotOpen(item, version) }
        return record
    }

    /// Opens only the overview (what lists and AutoFill need): its fields and whether the item is
    /// deleted. The details stay sealed.
    public func openOverview(
        _ sealed: SealedItem,
        item: ItemID,
        version: UInt64
    ) throws(VaultSyncError) -> (record: SyncRecord, isDeleted: Bool) {
        let itemKey = try unwrapKey(sealed, item: item, version: version)
        let overview = try part(sealed.overview, key: itemKey, name: "overview", item: item, version: version)
        guard let flag = overview.first, flag <= 1 else { throw cannotOpen(item, version) }
        return (try SyncRecord(canonicalBytes: Array(overview.dropFirst())), flag == 1)
    }

    /// The overview's fields with their history; the other fields with theirs, and the tombstone.
    static func split(_ record: SyncRecord) -> (overview: SyncRecord, details: SyncRecord) {
        let overview = SyncRecord(
            id: record.id,
            fields: record.fields.filter { overviewFields.contains($0.key) },
            history: record.history.filter { overviewFields.contains($0.key) },
            tombstone: nil
        )
        let details = SyncRecord(
            id: record.id,
            fields: record.fields.filter { !overviewFields.contains($0.key) },
            history: record.history.filter { !overviewFields.contains($0.key) },
            tombstone: record.tombstone
        )
        return (overview, details)
    }

    /// The associated data of one part: what it is and where it belongs.
    static func associatedData(vault: VaultID, part: String, item: ItemID, version: UInt64) -> [UInt8] {
        Array("keyhaven/sync/item/v1|\(part)|".utf8) + vault.bytes + item.bytes
            + (0..<8).map { UInt8(truncatingIfNeeded: version >> (56 - 8 * UInt64($0))) }
    }

    private func box(
        _ plaintext: [UInt8],
        key: SymmetricKey,
        part: String,
        item: ItemID,
        version: UInt64,
        _ generator: inout some RandomNumberGenerator
    ) throws(VaultSyncError) -> [UInt8] {
        let nonceBytes = (0..<12).map { _ in UInt8.random(in: 0...255, using: &generator) }
        do {
            let sealed = try AES.GCM.seal(
                plaintext,
                using: key,
                nonce: AES.GCM.Nonce(data: nonceBytes),
                authenticating: Self.associatedData(vault: vault, part: part, item: item, version: version)
            )
            return Array(sealed.nonce) + Array(sealed.ciphertext) + Array(sealed.tag)
        } catch {
            throw VaultSyncError(.cannotSeal, "item \(item) version \(version) could not be sealed", details: item)
        }
    }

    private func unwrapKey(_ sealed: SealedItem, item: ItemID, version: UInt64) throws(VaultSyncError) -> SymmetricKey {
        let bytes = try open(sealed.wrappedKey, key: vaultKey, part: "key", item: item, version: version)
        guard bytes.count == 32 else { throw cannotOpen(item, version) }
        return SymmetricKey(data: bytes)
    }

    private func part(
        _ box: [UInt8],
        key: SymmetricKey,
        name: String,
        item: ItemID,
        version: UInt64
    ) throws(VaultSyncError) -> [UInt8] {
        guard let plaintext = SizeBuckets.unpad(try open(box, key: key, part: name, item: item, version: version))
        else { throw cannotOpen(item, version) }
        return plaintext
    }

    private func open(
        _ box: [UInt8],
        key: SymmetricKey,
        part: String,
        item: ItemID,
        version: UInt64
    ) throws(VaultSyncError) -> [UInt8] {
        do {
            let sealed = try AES.GCM.SealedBox(combined: box)
            return Array(
                try AES.GCM.open(
                    sealed,
                    using: key,
                    authenticating: Self.associatedData(vault: vault, part: part, item: item, version: version)
                )
            )
        } catch {
            throw cannotOpen(item, version)
        }
    }

    private func cannotOpen(_ item: ItemID, _ version: UInt64) -> VaultSyncError {
        VaultSyncError(
            .cannotOpen,
            "item \(item) version \(version) does not open with this vault's key: it was altered, or it is "
                + "another item's, version's or vault's; nothing of it was used",
            details: item
        )
    }
}
