import Foundation
import GRDB

extension Vault {
    /// Upgrades a format-1 vault (records sealed with their id only, no integrity check) to format
    /// 2, in one transaction: each credential, journal row and provider session re-sealed at version
    /// 1 with the versioned associated data, then the key check and the integrity HMAC written and `format` set to 2. A crash
    /// leaves format 1, upgraded again on the next open.
    ///
    /// Format 1 authenticated no clear column, so the upgrade takes the rows as they are (trust on
    /// first use); from then on they are authenticated. A record that does not open under format
    /// 1's associated data keeps its bytes at version 0, which is never trusted (it reads as
    /// `corruptRecord`, as it did before).
    ///
    /// The upgrade also re-keys (the same password, fresh salt): rows sealed under the format-1 key
    /// — in older copies of the file — can never be mixed into the upgraded vault by setting
    /// `format` back to 1, and a format-2 vault edited to claim format 1 is refused as `tampered`.
    /// A vault that claims format 1 but holds what only format 2 writes (a key check, versions) was
    /// edited to claim the old format: `tampered`. Checked on open through the read-only connection
    /// (nothing written) and again in the upgrade's transaction.
    static func refuseFormatTwoTraces(_ db: Database) throws {
        guard try db.columns(in: "vault").contains(where: { $0.name == "keyCheck" }) else { return }
        let traces = try Bool.fetchOne(
            db,
            sql: """
                SELECT (SELECT keyCheck IS NOT NULL OR integrity IS NOT NULL FROM vault WHERE id = 1)
                    OR EXISTS (SELECT 1 FROM credential WHERE version > 0)
                    OR EXISTS (SELECT 1 FROM upgradeJournal WHERE version > 0)
                    OR EXISTS (SELECT 1 FROM providerSession WHERE version > 0)
                """
        )
        guard traces != true else {
            throw VaultError(
                .tampered,
                "the vault claims the old format 1 but holds format-2 data: it was altered outside Keyhaven; "
                    + "nothing was written — restore the vault from a backup"
            )
        }
    }

    func upgradeFormat(_ format: Int, masterPassword: String, kdf: KDFParameters) throws {
        let newKeys = VaultKeys.generate()
        let fresh = KDFParameters.random(logN: kdf.logN, r: kdf.r, p: kdf.p)
        let wrapped = try newKeys.wrap(password: masterPassword, kdf: fresh)
        let kdfJSON = String(decoding: try JSONEncoder().encode(fresh), as: UTF8.self)
        try database.write { db in
            let keys = self.keys
            let current = try Int.fetchOne(db, sql: "SELECT format FROM vault WHERE id = 1") ?? format
            guard current < 2 else {
                // Another process upgraded it meanwhile.
                try VaultIntegrity.verify(db, keys: keys)
                return
            }
            try Self.refuseFormatTwoTraces(db)
            let rows = try Row.fetchAll(db, sql: "SELECT id, sealed FROM credential")
            for row in rows {
                let rawID: String = row["id"]
                guard let id = CredentialID(rawValue: rawID),
                    var plaintext = try? keys.open(row["sealed"], associatedData: Self.legacyRecordAD(id))
                else {
                    try db.execute(sql: "UPDATE credential SET version = 0 WHERE id = ?", arguments: [rawID])
                    continue
                }
                defer { plaintext.resetBytes(in: 0..<plaintext.count) }
                let sealed = try keys.seal(plaintext, associatedData: Self.recordAD(id, version: 1))
                try db.execute(
                    sql: "UPDATE credential SET sealed = ?, version = 1 WHERE id = ?",
                    arguments: [sealed, rawID]
                )
            }
            for row in try Row.fetchAll(db, sql: "SELECT id, sealed FROM upgradeJournal") {
                let id: String = row["id"]
                guard var plaintext = try? keys.open(row["sealed"], associatedData: Self.legacyJournalAD(id)) else {
                    continue  // stays at version 0: never trusted
                }
                defer { plaintext.resetBytes(in: 0..<plaintext.count) }
                try db.execute(
                    sql: "UPDATE upgradeJournal SET sealed = ?, version = 1 WHERE id = ?",
                    arguments: [try keys.seal(plaintext, associatedData: Self.journalAD(id, version: 1)), id]
                )
            }
            for row in try Row.fetchAll(db, sql: "SELECT tag, sealed FROM providerSession") {
                let tag: Data = row["tag"]
                guard var plaintext = try? keys.open(row["sealed"], associatedData: Self.legacyProviderAD(tag)) else {
                    continue
                }
                defer { plaintext.resetBytes(in: 0..<plaintext.count) }
                try db.execute(
                    sql: "UPDATE providerSession SET sealed = ?, version = 1 WHERE tag = ?",
                    arguments: [try keys.seal(plaintext, associatedData: Self.providerAD(tag, version: 1)), tag]
                )
            }
            try reseal(db, from: keys, to: newKeys, kdfJSON: kdfJSON, wrapped: wrapped, format: 2)
        }
    }
}
