import Crypto
import Foundation
import GRDB
import _KeyhavenSupport

/// The keyed check over a vault's clear state (format 2).
///
/// Everything a vault stores in clear and that carries meaning — each credential's id, version,
/// dates, `deleted` time and content tag, the service lookup tags, each history entry's owner and
/// date, each upgrade-journal row's and provider session's key, version and date — goes through one
/// HMAC-SHA256 under the integrity key (derived from the vault key), kept in the header with
/// ``VaultKeys/keyCheck``. Each credential, journal row and session binds its key and version in
/// the associated data of its sealed content, so together:
///
/// - rolling a record back to an older row (ciphertext and version) changes the set: `tampered`;
/// - putting an older ciphertext under the current version fails authentication — and when it opens
///   under an earlier version (or the format-1 associated data) it is named a rollback: `tampered`;
/// - resurrecting a purged record, flipping `deleted`, dropping a history row or a lookup tag:
///   `tampered`.
///
/// The check is made on open (before anything is written, and before the purge, which therefore
/// acts on authenticated state only) and again at the start of every write transaction, so a write
/// never re-authenticates tampered rows. A copy of the *whole* file from earlier stays a consistent
/// earlier vault: no file format can tell a restored backup from a rollback.
enum VaultIntegrity {
    /// The clear state, section by section, in a fixed order: each section is its name and its rows
    /// in primary-key order, each value typed and length-prefixed (no two states share an encoding).
    private static let sections: [(name: String, sql: String)] = [
        ("vault", "SELECT format, created FROM vault WHERE id = 1"),
        (
            "credential",
            "SELECT id, version, created, modified, deleted, contentTag FROM credential ORDER BY id"
        ),
        ("credentialService", "SELECT credentialID, tag FROM credentialService ORDER BY credentialID, tag"),
        ("passwordHistory", "SELECT id, credentialID, replaced FROM passwordHistory ORDER BY id"),
        ("upgradeJournal", "SELECT id, credentialID, version, created FROM upgradeJournal ORDER BY id"),
        ("providerSession", "SELECT tag, version, created FROM providerSession ORDER BY tag"),
    ]

    /// Sections added after format 2 shipped: counted only when their table has rows, so a vault
    /// sealed before they existed still verifies (no rows and no section are one encoding).
    private static let laterSections: [(name: String, sql: String)] = [
        ("agentRecord", "SELECT id, kind, version, created FROM agentRecord ORDER BY id"),
        ("passkey", "SELECT id, rpTag, version, created FROM passkey ORDER BY id"),
        ("siteRecord", "SELECT id, version, expires, created FROM siteRecord ORDER BY id"),
        ("syncState", "SELECT id, version, created FROM syncState ORDER BY id"),
    ]

    static func code(_ db: Database, keys: VaultKeys) throws -> Data {
        var mac = HMAC<SHA256>(key: keys.integrity)
        func bytes(_ data: Data) {
            withUnsafeBytes(of: UInt64(data.count).bigEndian) { mac.update(data: Data($0)) }
            mac.update(data: data)
        }
        func integer(_ kind: UInt8, _ value: UInt64) {
            mac.update(data: [kind])
            withUnsafeBytes(of: value.bigEndian) { mac.update(data: Data($0)) }
        }
        bytes(Data("keyhaven/integrity/v1".utf8))
        var present = sections
        for section in laterSections
        where try db.tableExists(section.name)
            && (try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM \(section.name))") ?? false)
        {
            present.append(section)
        }
        for section in present {
            bytes(Data(section.name.utf8))
            let rows = try Row.fetchCursor(db, sql: section.sql)
            while let row = try rows.next() {
                mac.update(data: [1])
                for value in row.databaseValues {
                    switch value.storage {
                    case .null: mac.update(data: [0])
                    case .int64(let number): integer(1, UInt64(bitPattern: number))
                    case .double(let number): integer(2, number.bitPattern)
                    case .string(let text):
                        mac.update(data: [3])
                        bytes(Data(text.utf8))
                    case .blob(let data):
                        mac.update(data: [4])
                        bytes(data)
                    }
                }
            }
            mac.update(data: [0])
        }
        return Data(mac.finalize())
    }

    /// Checks the header's key check and integrity HMAC against the rows.
    ///
    /// - Throws: ``VaultError`` `keyChanged` (the key is not the one the rows are sealed with) or
    ///   `tampered`.
    static func verify(_ db: Database, keys: VaultKeys) throws {
        guard let row = try Row.fetchOne(db, sql: "SELECT keyCheck, integrity FROM vault WHERE id = 1") else {
            throw VaultError(.tampered, "the vault header is missing; restore the vault from a backup")
        }
        let keyCheck: Data? = row["keyCheck"]
        let stored: Data? = row["integrity"]
        guard let keyCheck, let stored else {
            throw VaultError(
                .tampered,
                "the vault header has lost its integrity check (format 2 requires it); restore the vault from a backup"
            )
        }
        guard constantTimeEqual(keyCheck, keys.keyCheck) else {
            throw VaultError(
                .keyChanged,
                "the master password opened a vault key that is not the one this vault's records are sealed "
                    + "with: the vault was re-keyed since (another process changed the master password, or the "
                    + "header was replaced with an older one); open it again with the current master password"
            )
        }
        guard constantTimeEqual(try code(db, keys: keys), stored) else {
            throw VaultError(
                .tampered,
                "the vault was altered outside Keyhaven: records rolled back, resurrected or removed, or their "
                    + "clear data (deletion, dates, versions, lookup tags) edited; nothing was written — "
                    + "restore the vault from a backup"
            )
        }
    }

    /// Writes the key check and the integrity HMAC for the rows as they are now.
    static func seal(_ db: Database, keys: VaultKeys) throws {
        try db.execute(
            sql: "UPDATE vault SET keyCheck = ?, integrity = ? WHERE id = 1",
            arguments: [keys.keyCheck, try code(db, keys: keys)]
        )
    }

    /// At most this many earlier versions are tried when a record fails authentication, to tell a
    /// rollback (`tampered`) from damage (`corruptRecord`, the other records unaffected).
    static let rollbackSearchLimit: Int64 = 4096

    /// Checks that no sealed row (credential, journal entry, provider session) holds an older
    /// ciphertext of itself: one that fails under its current version but opens under an earlier
    /// one (or format 1's associated data) is a rollback. Damage is left to reads, which name the
    /// record and spare the others.
    static func verifyRecords(_ db: Database, keys: VaultKeys) throws {
        try verifyRows(
            db,
            keys: keys,
            sql: "SELECT id AS key, version, sealed FROM credential WHERE version > 0",
            associatedData: { key, version in
                CredentialID(rawValue: key.text).map { Vault.recordAD($0, version: version) } ?? ""
            },
            legacy: { key in CredentialID(rawValue: key.text).map(Vault.legacyRecordAD) ?? "" },
            rolledBack: { key in rolledBack("credential \(key.text)", record: CredentialID(rawValue: key.text)) }
        )
        try verifyRows(
            db,
            keys: keys,
            sql: "SELECT id AS key, version, sealed FROM upgradeJournal WHERE version > 0",
            associatedData: { key, version in Vault.journalAD(key.text, version: version) },
            legacy: { key in Vault.legacyJournalAD(key.text) },
            rolledBack: { key in rolledBack("upgrade journal entry \(key.text.prefix(8))") }
        )
        try verifyRows(
            db,
            keys: keys,
            sql: "SELECT tag AS key, version, sealed FROM providerSession WHERE version > 0",
            associatedData: { key, version in Vault.providerAD(key.blob, version: version) },
            legacy: { key in Vault.legacyProviderAD(key.blob) },
            rolledBack: { _ in rolledBack("a provider session") }
        )
        try verifyLaterTable(db, keys: keys, table: "agentRecord", what: "a browser pairing") { key, version in
            Vault.agentRecordAD(key.text, version: version)
        }
        try verifyLaterTable(db, keys: keys, table: "passkey", what: "a passkey") { key, version in
            Vault.passkeyAD(key.text, version: version)
        }
        try verifyLaterTable(db, keys: keys, table: "siteRecord", what: "a site record") { key, version in
            Vault.siteRecordAD(key.text, version: version)
        }
        try verifyLaterTable(db, keys: keys, table: "syncState", what: "the sync state") { key, version in
            Vault.syncStateAD(key.text, version: version)
        }
    }

    /// ``verifyRecords(_:keys:)`` for a table added after format 2 (a vault without it has none):
    /// rows keyed by `id`, versioned, never sealed under a legacy associated data.
    private static func verifyLaterTable(
        _ db: Database,
        keys: VaultKeys,
        table: String,
        what: String,
        associatedData: (DatabaseValue, Int64) -> String
    ) throws {
        guard try db.tableExists(table) else { return }
        try verifyRows(
            db,
            keys: keys,
            sql: "SELECT id AS key, version, sealed FROM \(table) WHERE version > 0",
            associatedData: associatedData,
            legacy: { _ in "" },
            rolledBack: { _ in rolledBack(what) }
        )
    }

    /// The error for a record (`what`) found rolled back.
    private static func rolledBack(
        _ what: String,
        record: CredentialID? = nil,
        file: String = #fileID,
        line: UInt = #line
    ) -> VaultError {
        VaultError(
            .tampered,
            "\(what) was rolled back to an older copy outside Keyhaven; nothing was written — restore the vault "
                + "from a backup",
            record: record,
            file: file,
            line: line
        )
    }

    private static func verifyRows(
        _ db: Database,
        keys: VaultKeys,
        sql: String,
        associatedData: (DatabaseValue, Int64) -> String,
        legacy: (DatabaseValue) -> String,
        rolledBack: (DatabaseValue) -> VaultError
    ) throws {
        let rows = try Row.fetchCursor(db, sql: sql)
        while let row = try rows.next() {
            let key: DatabaseValue = row["key"]
            let version: Int64 = row["version"]
            let sealed: Data = row["sealed"]
            guard (try? keys.open(sealed, associatedData: associatedData(key, version))) == nil else { continue }
            var earlier = [legacy(key)]
            for past in stride(from: version - 1, through: max(1, version - rollbackSearchLimit), by: -1) {
                earlier.append(associatedData(key, past))
            }
            if earlier.contains(where: { (try? keys.open(sealed, associatedData: $0)) != nil }) {
                throw rolledBack(key)
            }
        }
    }
}

extension DatabaseValue {
    fileprivate var text: String { String.fromDatabaseValue(self) ?? "" }
    fileprivate var blob: Data { Data.fromDatabaseValue(self) ?? Data() }
}
