import Foundation
import Passkeys
import Vault
import VaultSync
import VaultSyncBridge

/// Moves credentials between the vault and a device's replica, inside one vault transaction.
///
/// The vault is where the person edits; the replica is what syncs. A credential's edits since the
/// last sync are the fields where the vault differs from the replica's credential as it was when
/// the vault last matched it (`base`); only those are written into the replica, so a field another
/// device changed meanwhile is never written back over with the old value.
enum VaultReplicaFold {
    /// Counts of what ``writeBack(_:into:)`` did to the vault.
    struct Written {
        var created = 0
        var updated = 0
        var deleted = 0
        var restored = 0
        /// Whether any credential of the vault changed.
        var changed: Bool { created + updated + deleted + restored > 0 }
    }

    /// The items of the vault's rows that cannot be read (damaged).
    static func damagedRows(_ listing: Vault.Listing) -> Set<ItemID> {
        Set(listing.failures.compactMap { $0.record.map(ItemID.init) })
    }

    /// What each readable item of `replica` holds as a credential; items this Keyhaven cannot read
    /// (a newer one wrote a field) in `unreadable`, left alone both ways.
    static func credentials(
        of replica: SyncReplica
    ) -> (
        credentials: [ItemID: SyncedCredential], unreadable: Set<ItemID>
    ) {
        var credentials: [ItemID: SyncedCredential] = [:]
        var unreadable: Set<ItemID> = []
        for item in replica.records.keys {
            if let credential = try? replica.credential(item) {
                credentials[item] = credential
            } else {
                unreadable.insert(item)
            }
        }
        return (credentials, unreadable)
    }

    /// Writes the vault's edits since `base` into `replica`: a credential new to the replica is
    /// adopted with its history and dates; a changed one gets one write per changed field; one
    /// moved to recently deleted, or gone from the vault, is deleted. Records the vault cannot
    /// read are left alone (never taken for deletions).
    static func fold(
        _ transaction: VaultSyncTransaction,
        into replica: inout SyncReplica,
        base: [ItemID: SyncedCredential],
        unreadable: Set<ItemID>,
        now: UInt64
    ) throws {
        let listing = try transaction.credentials()
        let damaged = damagedRows(listing)
        var seen: Set<ItemID> = []
        for credential in listing.credentials {
            let item = ItemID(credential.id)
            seen.insert(item)
            guard !unreadable.contains(item) else { continue }
            guard let before = base[item], replica.records[item] != nil else {
                try replica.adopt(
                    SyncedCredential(
                        content: credential.content,
                        passwordHistory: try transaction.history(credential.id),
                        created: credential.created,
                        deleted: credential.deleted
                    ),
                    as: item,
                    now: now
                )
                continue
            }
            let mine = try CredentialRecordMapping.fieldValues(
                of: credential.content,
                passkeys: before.passkeys,
                item: item
            )
            let old = try CredentialRecordMapping.fieldValues(of: before.content, passkeys: before.passkeys, item: item)
            for key in Set(mine.keys).union(old.keys).sorted() where mine[key] != old[key] {
                try replica.set(key, to: mine[key] ?? .absent, in: item, now: now)
            }
            if credential.deleted != nil, before.deleted == nil, replica.records[item]?.isDeleted == false {
                try replica.delete(item, now: now)
            }
            // Restored from recently deleted: a write the deletion has not seen, or the next
            // write-back would move it to recently deleted again.
            if credential.deleted == nil, before.deleted != nil {
                try replica.restore(item, now: now)
            }
        }
        // Gone from the vault for good (purged after 30 days in recently deleted): gone everywhere.
        for (item, before) in base
        where before.deleted == nil && !seen.contains(item) && !damaged.contains(item)
            && replica.records[item]?.isDeleted == false
        {
            try replica.delete(item, now: now)
        }
    }

    /// Makes the vault hold what the replica holds, through the vault's own writes: new items
    /// created, changed ones updated (a replaced password goes to the history), deleted ones moved
    /// to recently deleted, and ones a merge brought back (delete versus edit keeps the edit)
    /// restored. A new item comes with its password history. Rows of the vault that cannot be
    /// read (damaged) are left alone: the replica keeps their last synced state, and the other
    /// credentials still sync.
    static func writeBack(_ replica: SyncReplica, into transaction: VaultSyncTransaction) throws -> Written {
        var written = Written()
        let (credentials, _) = credentials(of: replica)
        let damaged = damagedRows(try transaction.credentials())
        for item in credentials.keys.sorted() where !damaged.contains(item) {
            let credential = credentials[item]!
            switch try transaction.put(
                CredentialID(item),
                content: credential.content,
                passwordHistory: credential.passwordHistory,
                deleted: credential.deleted != nil
            ) {
            case .unchanged: break
            case .created: written.created += 1
            case .updated: written.updated += 1
            case .deleted: written.deleted += 1
            case .restored: written.restored += 1
            }
        }
        return written
    }
}

extension ItemID {
    /// The item of a credential: the same 128 bits (a credential id is a UUID).
    init(_ id: CredentialID) {
        let uuid = UUID(uuidString: id.rawValue)!.uuid
        self.init(bytes: withUnsafeBytes(of: uuid) { Array($0) })!
    }
}

extension CredentialID {
    /// The credential of an item: the same 128 bits, written as a UUID.
    init(_ item: ItemID) {
        let bytes = item.bytes
        let uuid = UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9],
                bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            )
        )
        self.init(uuid)
    }
}
