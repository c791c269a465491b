import Foundation
import GRDB

extension Vault {
    /// Changes the master password and re-keys the vault.
    ///
    /// A new random vault key replaces the old one: every credential, password-history entry,
    /// upgrade-journal row, provider session, agent record, passkey and the sync state is re-sealed under it (and
    /// every lookup tag re-computed; site records, a cache of what websites said, are dropped), the
    /// new key is wrapped under the new password with `kdf`, and the key check and integrity HMAC
    /// are rewritten — all in one transaction, so a crash leaves the old vault intact.
    /// Whoever learned the old password and kept a copy of the file (a backup, a sync history) can
    /// read that copy, but nothing written afterwards: the old key opens none of it, and an old
    /// header spliced into the new file gives `keyChanged`.
    ///
    /// Rows that were already damaged (they fail authentication under the old key) keep their
    /// bytes and stay unreadable; they are not re-sealed.
    ///
    /// - Parameters:
    ///   - kdf: fresh scrypt parameters (calibrated by default), never below the floor unless
    ///     `allowInsecureKDF`.
    /// - Throws: ``VaultError`` `insecureKDF`, `invalidInput`, `tampered`, `keyChanged`.
    public func changeMasterPassword(
        to newPassword: String,
        kdf: KDFParameters = .calibrated(),
        allowInsecureKDF: Bool = false
    ) throws(VaultError) {
        guard !newPassword.isEmpty else {
            throw VaultError(.invalidInput, "the master password must not be empty")
        }
        try kdf.checkFloor(allowInsecure: allowInsecureKDF, "the new key derivation")
        try guarded {
            let newKeys = VaultKeys.generate()
            // scrypt before the transaction: the lock is held only for the re-sealing.
            let wrapped = try newKeys.wrap(password: newPassword, kdf: kdf)
            let kdfJSON = String(decoding: try JSONEncoder().encode(kdf), as: UTF8.self)
            try database.write { db in
                let oldKeys = self.keys
                try VaultIntegrity.verify(db, keys: oldKeys)
                try reseal(db, from: oldKeys, to: newKeys, kdfJSON: kdfJSON, wrapped: wrapped)
            }
        }
    }

    /// Re-seals every record under `newKeys`, writes the new header (and `format`, when given),
    /// seals the integrity check, and swaps the keys inside the transaction, so no write of this
    /// vault seals with the old key after the commit; undone if the commit fails. Shared by
    /// `passwd` and the format upgrade.
    func reseal(
        _ db: Database,
        from oldKeys: VaultKeys,
        to newKeys: VaultKeys,
        kdfJSON: String,
        wrapped: Data,
        format: Int? = nil
    ) throws {
        try rekeyCredentials(db, from: oldKeys, to: newKeys)
        for table in Self.resealedInPlace {
            try table.reseal(db, from: oldKeys, to: newKeys)
        }
        try rekeyProviderSessions(db, from: oldKeys, to: newKeys)
        try rekeyPasskeys(db, from: oldKeys, to: newKeys)
        try rekeySiteRecords(db)
        if let format {
            try db.execute(
                sql: "UPDATE vault SET format = ?, kdf = ?, wrappedKey = ? WHERE id = 1",
                arguments: [format, kdfJSON, wrapped]
            )
        } else {
            try db.execute(sql: "UPDATE vault SET kdf = ?, wrappedKey = ? WHERE id = 1", arguments: [kdfJSON, wrapped])
        }
        try VaultIntegrity.seal(db, keys: newKeys)
        replaceKeys(newKeys)
        db.afterNextTransaction(onCommit: { _ in }, onRollback: { [self] _ in replaceKeys(oldKeys) })
    }

    func rekeyCredentials(_ db: Database, from oldKeys: VaultKeys, to newKeys: VaultKeys) throws {
        let rows = try Row.fetchAll(db, sql: "SELECT id, version, sealed FROM credential")
        for row in rows {
            let rawID: String = row["id"]
            let version: Int64 = row["version"]
            guard let id = CredentialID(rawValue: rawID),
                let content = try? Self.openContent(row["sealed"], id, version: version, keys: oldKeys)
            else {
                // Damaged: its bytes stay, unreadable as before; its lookup tags were the old key's.
                try db.execute(sql: "DELETE FROM credentialService WHERE credentialID = ?", arguments: [rawID])
                continue
            }
            try db.execute(
                sql: "UPDATE credential SET sealed = ?, contentTag = ? WHERE id = ?",
                arguments: [try seal(content, id, version: version, keys: newKeys), newKeys.contentTag(content), rawID]
            )
            try db.execute(sql: "DELETE FROM credentialService WHERE credentialID = ?", arguments: [rawID])
            try writeServiceTags(content, id, db, keys: newKeys)
        }
    }

    /// A table whose rows are re-sealed where they are: ids, versions and everything else stay.
    struct InPlaceTable: Sendable {
        var name: String
        /// Reads the rows' `id`, `sealed` and what the associated data needs.
        var select: String
        /// A row's associated data; nil when the row cannot be opened (it keeps its bytes).
        var associatedData: @Sendable (Row) -> String?

        /// The rows of `name` (those matching `filter`), with `id`, `sealed` and `columns`.
        init(
            _ name: String,
            columns: String,
            where filter: String? = nil,
            associatedData: @escaping @Sendable (Row) -> String?
        ) {
            self.name = name
            select = "SELECT id, \(columns), sealed FROM \(name)" + (filter.map { " WHERE \($0)" } ?? "")
            self.associatedData = associatedData
        }

        /// Opens each row under `oldKeys` and seals it under `newKeys` with the same associated
        /// data. Rows that do not open (damaged) keep their bytes, unreadable as before.
        func reseal(_ db: Database, from oldKeys: VaultKeys, to newKeys: VaultKeys) throws {
            for row in try Row.fetchAll(db, sql: select) {
                guard let associatedData = associatedData(row),
                    var plaintext = try? oldKeys.open(row["sealed"], associatedData: associatedData)
                else { continue }
                defer { plaintext.resetBytes(in: 0..<plaintext.count) }
                let id: DatabaseValue = row["id"]
                try db.execute(
                    sql: "UPDATE \(name) SET sealed = ? WHERE id = ?",
                    arguments: [try newKeys.seal(plaintext, associatedData: associatedData), id]
                )
            }
        }
    }

    /// Password history, the upgrade journal, agent records and the sync state: their rows are found by id, so
    /// re-sealing them changes nothing else.
    static let resealedInPlace = [
        InPlaceTable("passwordHistory", columns: "credentialID") { row in
            CredentialID(rawValue: row["credentialID"]).map { Vault.historyAD($0, row["id"]) }
        },
        InPlaceTable("upgradeJournal", columns: "version", where: "version > 0") { row in
            Vault.journalAD(row["id"], version: row["version"])
        },
        InPlaceTable("agentRecord", columns: "version", where: "version > 0") { row in
            Vault.agentRecordAD(row["id"], version: row["version"])
        },
        InPlaceTable("syncState", columns: "version", where: "version > 0") { row in
            Vault.syncStateAD(row["id"], version: row["version"])
        },
    ]

    /// Provider sessions are found by a keyed hash of the issuer, so each row moves to its new tag.
    func rekeyProviderSessions(_ db: Database, from oldKeys: VaultKeys, to newKeys: VaultKeys) throws {
        let rows = try Row.fetchAll(
            db,
            sql: "SELECT tag, version, sealed, created FROM providerSession WHERE version > 0"
        )
        for row in rows {
            let oldTag: Data = row["tag"]
            let version: Int64 = row["version"]
            guard
                var plaintext = try? oldKeys.open(
                    row["sealed"],
                    associatedData: Self.providerAD(oldTag, version: version)
                ),
                let session = try? JSONDecoder().decode(ProviderSession.self, from: plaintext)
            else { continue }
            defer { plaintext.resetBytes(in: 0..<plaintext.count) }
            let newTag = newKeys.tag("provider-session", session.issuer)
            try db.execute(sql: "DELETE FROM providerSession WHERE tag = ?", arguments: [oldTag])
            try db.execute(
                sql: "INSERT INTO providerSession (tag, version, sealed, created) VALUES (?, ?, ?, ?)",
                arguments: [
                    newTag, version,
                    try newKeys.seal(plaintext, associatedData: Self.providerAD(newTag, version: version)),
                    row["created"],
                ]
            )
        }
    }
}
