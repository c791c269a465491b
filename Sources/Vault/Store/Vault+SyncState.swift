public import Foundation
import GRDB

/// A device's sync state (issue 28; docs/sync.md "On the device"): what the vault keeps for
/// `keyhaven sync`, as parts named by the caller (`device`, `replica`), each sealed like the
/// credentials (its name and a version as associated data), covered by the integrity check and
/// re-sealed by `passwd`. The vault does not read them: their encoding is sync's.
extension Vault {
    static func syncStateAD(_ id: String, version: Int64) -> String {
        "keyhaven/sync-state/v1|\(id)|\(version)"
    }

    /// The sync state part named `id`, nil when there is none.
    public func syncState(_ id: String) throws(VaultError) -> Data? {
        try guarded { try database.read { db in try loadSyncState(id, db) } }
    }

    /// Forgets the whole sync state (the device leaves sync); false when there was none.
    @discardableResult
    public func removeSyncState() throws(VaultError) -> Bool {
        try deleteRows("DELETE FROM syncState")
    }

    /// Runs `body` in one write transaction of the vault: what sync reads of the credentials, the
    /// credentials it writes and the state it saves are one commit — all or nothing, and no other
    /// writer (another process included) comes in between. The integrity check is verified first
    /// and sealed last, as for every write.
    public func syncTransaction<T>(_ body: (VaultSyncTransaction) throws -> T) throws -> T {
        do {
            return try authenticatedWrite { db in try body(VaultSyncTransaction(vault: self, db: db)) }
        } catch let error as VaultError {
            throw error
        } catch let error as DatabaseError {
            throw Self.mapped(error)
        }
    }

    /// Runs `body` on one read-only snapshot of the vault (`keyhaven sync status`): nothing is
    /// written, so nothing changes on disk; ``VaultSyncTransaction/put(_:content:deleted:)`` and
    /// ``VaultSyncTransaction/saveState(_:_:)`` fail in it.
    public func syncSnapshot<T>(_ body: (VaultSyncTransaction) throws -> T) throws -> T {
        do {
            return try database.read { db in try body(VaultSyncTransaction(vault: self, db: db)) }
        } catch let error as VaultError {
            throw error
        } catch let error as DatabaseError {
            throw Self.mapped(error)
        }
    }

    func loadSyncState(_ id: String, _ db: Database) throws -> Data? {
        guard let row = try Row.fetchOne(db, sql: "SELECT version, sealed FROM syncState WHERE id = ?", arguments: [id])
        else { return nil }
        do {
            return try keys.open(row["sealed"], associatedData: Self.syncStateAD(id, version: row["version"]))
        } catch {
            throw VaultError(
                .corruptRecord,
                "the sync state (\(id)) cannot be decrypted: it was altered or damaged; turn sync off and on again"
            )
        }
    }

    func saveSyncState(_ id: String, _ content: Data, _ db: Database) throws {
        let version =
            (try Int64.fetchOne(db, sql: "SELECT version FROM syncState WHERE id = ?", arguments: [id]) ?? 0) + 1
        try db.execute(
            sql: "INSERT OR REPLACE INTO syncState (id, version, sealed, created) VALUES (?, ?, ?, ?)",
            arguments: [
                id, version, try keys.seal(content, associatedData: Self.syncStateAD(id, version: version)),
                now().timeIntervalSince1970,
            ]
        )
    }
}

/// The vault inside one ``Vault/syncTransaction(_:)`` (or a read-only ``Vault/syncSnapshot(_:)``):
/// valid only while its body runs.
public struct VaultSyncTransaction {
    let vault: Vault
    let db: Database

    /// What ``put(_:content:deleted:)`` did.
    public enum Change: Hashable, Sendable {
        case unchanged, created, updated, deleted, restored
    }

    /// Every credential, recently deleted ones included, and the records that could not be read.
    public func credentials() throws -> Vault.Listing {
        vault.decodeAll(try Row.fetchAll(db, sql: "SELECT * FROM credential ORDER BY created, id"))
    }

    /// A credential's password history, oldest first.
    public func history(_ id: CredentialID) throws -> [PasswordHistoryEntry] {
        try vault.loadHistory(id, db)
    }

    /// The sync state part `id`, nil when there is none.
    public func state(_ id: String) throws -> Data? {
        try vault.loadSyncState(id, db)
    }

    /// How many times the sync state part `id` was saved (nil when there is none): a process that
    /// read the state compares it before it saves, to find a save another process made meanwhile.
    public func stateVersion(_ id: String) throws -> Int64? {
        try Int64.fetchOne(db, sql: "SELECT version FROM syncState WHERE id = ?", arguments: [id])
    }

    /// Removes every part of the sync state (the device leaves sync).
    public func removeState() throws {
        try db.execute(sql: "DELETE FROM syncState")
    }

    /// Saves the sync state part `id` (sealed, replacing the one before).
    public func saveState(_ id: String, _ content: Data) throws {
        try vault.saveSyncState(id, content, db)
    }

    /// Makes credential `id` hold `content` (and be in "recently deleted" or not) through the
    /// vault's own writes: created when new (unless deleted: nothing is made to be deleted) with
    /// `passwordHistory` as its history, its content replaced when it differs (a changed password
    /// goes to the history), moved to or back from "recently deleted".
    @discardableResult
    public func put(
        _ id: CredentialID,
        content: CredentialContent,
        passwordHistory: [PasswordHistoryEntry] = [],
        deleted: Bool
    ) throws -> Change {
        guard
            let row = try Row.fetchOne(db, sql: "SELECT * FROM credential WHERE id = ?", arguments: [id.rawValue])
        else {
            if deleted { return .unchanged }
            _ = try vault.insert(content, db, id: id)
            for entry in passwordHistory {
                try vault.appendHistory(id, password: entry.password, replaced: entry.replaced, db)
            }
            return .created
        }
        var credential = try vault.decode(row)
        var change = Change.unchanged
        if credential.content != content {
            try vault.replace(&credential, with: content, db)
            change = .updated
        }
        if deleted != (credential.deleted != nil) {
            try db.execute(
                sql: "UPDATE credential SET deleted = ? WHERE id = ?",
                arguments: [deleted ? vault.now().timeIntervalSince1970 : nil, id.rawValue]
            )
            change = deleted ? .deleted : .restored
        }
        return change
    }
}
