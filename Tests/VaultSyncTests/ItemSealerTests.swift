import Crypto
import KeyhavenTesting
import Testing
import VaultSync

/// Per-item keys under the vault key, overview and details apart, bound to item, version and
/// vault, padded to buckets.
struct ItemSealerTests {
    static func record(id: ItemID, notes: String = "the notes", device: DeviceID = DeviceID(1)) -> SyncRecord {
        var clock = HybridLogicalClock(device: device)
        var record = SyncRecord.created(
            id: id,
            values: [
                .title: .text("Bank"), .services: .list(["https://bank.example"]), .user: .text("ada"),
                .password: .text("MARKER-password"), .notes: .text(notes), .totp: .text("MARKERTOTPSECRET"),
                .folder: .text("Finance"), .passkey("k1"): .bytes(Array("MARKER-passkey".utf8)),
            ],
            stamp: clock.send(now: 1_000)
        )
        record.set(.password, to: .text("MARKER-new-password"), stamp: clock.send(now: 2_000))
        record.set(.title, to: .text("Bank (renamed)"), stamp: clock.send(now: 2_001))
        return record
    }

    let id = ItemID(high: 1, low: 1)

    static func key(_ generator: inout SeededRandomNumberGenerator) -> SymmetricKey {
        SymmetricKey(data: (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    /// A sealer for a new vault, and its vault key.
    static func sealer(_ generator: inout SeededRandomNumberGenerator) -> (ItemSealer, SymmetricKey) {
        let vaultKey = key(&generator)
        return (ItemSealer(vaultKey: vaultKey, vault: VaultID(using: &generator)), vaultKey)
    }

    @Test func sealsAndOpensTheWholeRecordAndTheOverviewAlone() throws {
        var generator = SeededRandomNumberGenerator(seed: 28)
        let (sealer, _) = Self.sealer(&generator)
        let record = Self.record(id: id)
        let sealed = try sealer.seal(record, version: 3, using: &generator)
        #expect(try sealer.open(sealed, item: id, version: 3).canonicalBytes == record.canonicalBytes)

        let overview = try sealer.openOverview(sealed, item: id, version: 3)
        #expect(!overview.isDeleted)
        #expect(Set(overview.record.fields.keys) == ItemSealer.overviewFields)
        #expect(overview.record[.title] == .text("Bank (renamed)"))
        #expect(overview.record[.password] == .absent)  // the details stay sealed
    }

    @Test func aSwappedItemVersionVaultOrPartDoesNotOpen() throws {
        var generator = SeededRandomNumberGenerator(seed: 28)
        let (sealer, vaultKey) = Self.sealer(&generator)
        let other = ItemID(high: 2, low: 2)
        let sealed = try sealer.seal(Self.record(id: id), version: 3, using: &generator)
        let sealedOther = try sealer.seal(Self.record(id: other), version: 3, using: &generator)
        let sealedNext = try sealer.seal(Self.record(id: id), version: 4, using: &generator)
        let cannotOpen = VaultSyncError(.cannotOpen, "")

        #expect(throws: cannotOpen) { try sealer.open(sealed, item: other, version: 3) }  // another item's
        #expect(throws: cannotOpen) { try sealer.open(sealed, item: id, version: 4) }  // replayed as newer
        #expect(throws: cannotOpen) { try sealer.open(sealed, item: id, version: 2) }
        let otherVault = ItemSealer(vaultKey: vaultKey, vault: VaultID(using: &generator))
        #expect(throws: cannotOpen) { try otherVault.open(sealed, item: id, version: 3) }  // another vault's
        let otherKey = ItemSealer(vaultKey: Self.key(&generator), vault: sealer.vault)
        #expect(throws: cannotOpen) { try otherKey.open(sealed, item: id, version: 3) }

        var swapped = sealed
        swapped.details = sealedOther.details  // another item's details
        #expect(throws: cannotOpen) { try sealer.open(swapped, item: id, version: 3) }
        swapped = sealed
        swapped.details = sealedNext.details  // the same item's next version's details
        #expect(throws: cannotOpen) { try sealer.open(swapped, item: id, version: 3) }
        swapped = sealed
        swapped.overview = sealed.details  // the parts exchanged
        swapped.details = sealed.overview
        #expect(throws: cannotOpen) { try sealer.openOverview(swapped, item: id, version: 3) }
        for index in [0, 20, sealed.details.count - 1] {
            var altered = sealed
            altered.details[index] ^= 1
            #expect(throws: cannotOpen) { try sealer.open(altered, item: id, version: 3) }
        }
        do {
            _ = try sealer.open(sealed, item: other, version: 3)
        } catch {
            #expect(!String(reflecting: error).contains("MARKER"))
        }
    }

    @Test func sizesFallInBucketsAndLengthsDoNotShow() throws {
        var generator = SeededRandomNumberGenerator(seed: 28)
        let (sealer, _) = Self.sealer(&generator)
        let overhead = 12 + 16  // nonce and tag
        var detailSizes: Set<Int> = []
        var overviewSizes: Set<Int> = []
        for length in [0, 1, 10, 50, 100, 200, 400, 1_000, 3_000] {
            let record = Self.record(id: id, notes: String(repeating: "n", count: length))
            let sealed = try sealer.seal(record, version: 1, using: &generator)
            for part in [sealed.overview, sealed.details] {
                let padded = part.count - overhead
                #expect(padded >= SizeBuckets.smallest && padded & (padded - 1) == 0, "\(padded) is not a bucket")
            }
            #expect(sealed.wrappedKey.count == 32 + overhead)
            detailSizes.insert(sealed.details.count)
            overviewSizes.insert(sealed.overview.count)
        }
        #expect(overviewSizes.count == 1)  // the notes are in the details
        #expect(detailSizes.count < 9)  // notes of 0…100 bytes share one size
        #expect(SizeBuckets.bucket(for: 0) == 128 && SizeBuckets.bucket(for: 124) == 128)
        #expect(SizeBuckets.bucket(for: 125) == 256 && SizeBuckets.bucket(for: 5_000) == 8_192)
    }

    /// The server's view: no marker of any field type appears in what it stores.
    @Test func theSealedItemCarriesNoPlaintext() throws {
        var generator = SeededRandomNumberGenerator(seed: 28)
        let (sealer, _) = Self.sealer(&generator)
        let sealed = try sealer.seal(Self.record(id: id), version: 1, using: &generator)
        let stored = sealed.wrappedKey + sealed.overview + sealed.details
        for marker in ["MARKER", "Bank", "ada", "Finance", "bank.example", "notes"] {
            let bytes = Array(marker.utf8)
            let found = stored.indices.dropLast(bytes.count - 1).contains {
                Array(stored[$0..<$0 + bytes.count]) == bytes
            }
            #expect(!found, "\(marker) is readable in the sealed item")
        }
    }

    @Test func theStoredFormReadsBackAndRefusesAnythingElse() throws {
        var generator = SeededRandomNumberGenerator(seed: 28)
        let (sealer, _) = Self.sealer(&generator)
        let sealed = try sealer.seal(Self.record(id: id), version: 5, using: &generator)
        let bytes = sealed.bytes
        #expect(try SealedItem(bytes: bytes, item: id, version: 5) == sealed)
        let cannotOpen = VaultSyncError(.cannotOpen, "")
        #expect(throws: cannotOpen) { try SealedItem(bytes: Array(bytes.dropLast()), item: id, version: 5) }
        #expect(throws: cannotOpen) { try SealedItem(bytes: [2] + bytes.dropFirst(), item: id, version: 5) }
        #expect(throws: cannotOpen) { try SealedItem(bytes: [1, 0, 0], item: id, version: 5) }
        // Through the codec devices use: what one seals, another opens; the server's bytes do not
        // open as another revision.
        var codec = SealedPayloads(sealer: sealer, generator: generator)
        let record = Self.record(id: id)
        let payload = try codec.encode(record, version: 9)
        #expect(try codec.decode(payload, item: id, version: 9).canonicalBytes == record.canonicalBytes)
        #expect(throws: cannotOpen) { try codec.decode(payload, item: id, version: 8) }
    }

    @Test func aDeletedItemSaysSoInItsOverview() throws {
        var generator = SeededRandomNumberGenerator(seed: 28)
        let (sealer, _) = Self.sealer(&generator)
        var record = Self.record(id: id)
        record.delete(stamp: HLCTimestamp(physical: 9_000, counter: 0, device: DeviceID(1)))
        let sealed = try sealer.seal(record, version: 2, using: &generator)
        #expect(try sealer.openOverview(sealed, item: id, version: 2).isDeleted)
        #expect(try sealer.open(sealed, item: id, version: 2).isDeleted)
    }
}
