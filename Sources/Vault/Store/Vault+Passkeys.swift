import Foundation
import GRDB
public import Passkeys
import _KeyhavenSupport

/// Passkeys in the vault (issue 16): each sealed like a credential, under a row id that is a keyed
/// hash of its relying party and credential id, with a keyed tag of the relying party for lookups —
/// neither the sites nor the handles are in the clear. Covered by the integrity check (when any
/// exists, so older vaults still verify) and re-sealed by `passwd`.
extension Vault {
    static func passkeyAD(_ id: String, version: Int64) -> String {
        "keyhaven/passkey/v1|\(id)|\(version)"
    }

    /// The passkey's row id (hex): stable for one relying party and credential id.
    public func passkeyID(_ passkey: PasskeyCredential) -> String { Self.passkeyID(passkey, keys: keys) }

    static func passkeyID(_ passkey: PasskeyCredential, keys: VaultKeys) -> String {
        Hex.encode(keys.tag("passkey", passkey.rpID + "\u{0}" + Base64URL.encode(passkey.credentialID)))
    }

    /// Writes `passkey` (its JSON, `content`) sealed under `keys` as row `version`, replacing any
    /// row with its id; returns that id. The one place a passkey row is written: saves, imports and
    /// re-keying.
    @discardableResult
    static func writePasskeyRow(
        _ passkey: PasskeyCredential,
        content: Data,
        version: Int64,
        created: Double,
        keys: VaultKeys,
        _ db: Database
    ) throws -> String {
        let id = passkeyID(passkey, keys: keys)
        try db.execute(
            sql: "INSERT OR REPLACE INTO passkey (id, rpTag, version, sealed, created) VALUES (?, ?, ?, ?, ?)",
            arguments: [
                id, keys.tag("passkey-rp", passkey.rpID), version,
                try keys.seal(content, associatedData: passkeyAD(id, version: version)), created,
            ]
        )
        return id
    }

    /// Saves `passkey`, replacing the one with the same relying party and credential id.
    public func savePasskey(_ passkey: PasskeyCredential) throws(VaultError) {
        try guarded {
            try authenticatedWrite { db in try writePasskey(passkey, db) }
        }
    }

    /// ``savePasskey(_:)`` inside a write (an upgrade's completion saves its passkey with the rest).
    func writePasskey(_ passkey: PasskeyCredential, _ db: Database) throws {
        var content = try JSONEncoder().encode(passkey)
        defer { content.resetBytes(in: 0..<content.count) }
        let stored = try Int64.fetchOne(
            db,
            sql: "SELECT version FROM passkey WHERE id = ?",
            arguments: [passkeyID(passkey)]
        )
        try Self.writePasskeyRow(
            passkey,
            content: content,
            version: (stored ?? 0) + 1,
            created: passkey.created.timeIntervalSince1970,
            keys: keys,
            db
        )
    }

    /// Inserts `passkey` unless one with its relying party and credential id is stored (imports).
    func insertPasskeyIfNew(_ passkey: PasskeyCredential, _ db: Database) throws -> Bool {
        let id = passkeyID(passkey)
        guard try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM passkey WHERE id = ?", arguments: [id]) == 0 else {
            return false
        }
        var content = try JSONEncoder().encode(passkey)
        defer { content.resetBytes(in: 0..<content.count) }
        try Self.writePasskeyRow(
            passkey,
            content: content,
            version: 1,
            created: passkey.created.timeIntervalSince1970,
            keys: keys,
            db
        )
        return true
    }

    /// The passkeys of one relying party (all when nil), oldest first.
    public func passkeys(rpID: String? = nil) throws(VaultError) -> [PasskeyCredential] {
        try guarded {
            let keys = self.keys
            let rows = try database.read { db in
                if let rpID {
                    return try Row.fetchAll(
                        db,
                        sql: "SELECT id, version, sealed FROM passkey WHERE rpTag = ? ORDER BY created, id",
                        arguments: [keys.tag("passkey-rp", rpID)]
                    )
                }
                return try Row.fetchAll(db, sql: "SELECT id, version, sealed FROM passkey ORDER BY created, id")
            }
            return try rows.map { row in
                let id: String = row["id"]
                let content = try keys.open(row["sealed"], associatedData: Self.passkeyAD(id, version: row["version"]))
                return try JSONDecoder().decode(PasskeyCredential.self, from: content)
            }
        }
    }

    /// Removes a passkey by its row id (``passkeyID(_:)``); false when there was none.
    @discardableResult
    public func removePasskey(id: String) throws(VaultError) -> Bool {
        try deleteRows("DELETE FROM passkey WHERE id = ?", arguments: [id])
    }

    /// Re-seals every passkey under `newKeys`; their row ids and tags are keyed hashes, so they are
    /// computed again with the new lookup key.
    func rekeyPasskeys(_ db: Database, from oldKeys: VaultKeys, to newKeys: VaultKeys) throws {
        let rows = try Row.fetchAll(db, sql: "SELECT id, version, sealed, created FROM passkey")
        for row in rows {
            let id: String = row["id"]
            let version: Int64 = row["version"]
            guard
                var plaintext = try? oldKeys.open(row["sealed"], associatedData: Self.passkeyAD(id, version: version)),
                let passkey = try? JSONDecoder().decode(PasskeyCredential.self, from: plaintext)
            else { continue }
            defer { plaintext.resetBytes(in: 0..<plaintext.count) }
            try db.execute(sql: "DELETE FROM passkey WHERE id = ?", arguments: [id])
            try Self.writePasskeyRow(
                passkey,
                content: plaintext,
                version: version,
                created: row["created"],
                keys: newKeys,
                db
            )
        }
    }
}

extension PasskeyCredential {
    /// Whether this passkey belongs to `credential`'s account (see
    /// ``belongs(rpID:userName:to:)``). `list --json`, the Bitwarden export and the web app attach
    /// passkeys to accounts by it.
    public func belongs(to credential: Credential) -> Bool {
        Self.belongs(rpID: rpID, userName: userName, to: credential)
    }

    /// Whether a passkey for `rpID` and `userName` belongs to `credential`'s account: the relying
    /// party is one of its sites' hosts or a parent of one, and the user names agree (or the
    /// credential has none). For callers that keep a passkey's facts without its key.
    public static func belongs(rpID: String, userName: String, to credential: Credential) -> Bool {
        guard userName == credential.user || credential.user.isEmpty else { return false }
        return credential.services.contains { service in
            guard let host = service.host?.lowercased() else { return false }
            return host == rpID || host.hasSuffix("." + rpID)
        }
    }
}
