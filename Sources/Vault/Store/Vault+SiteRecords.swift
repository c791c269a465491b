public import Foundation
import GRDB
import _KeyhavenSupport

/// What Keyhaven learned about one website and may forget later (the audit's change-password page
/// and upgrade offer, or that the site could not be reached), kept so the next unlock or audit
/// starts from it instead of asking the network again.
///
/// Sealed like credentials: the row id is a keyed hash of the site, and the site's name travels
/// only inside the sealed content, so neither is in the file in the clear. Covered by the
/// integrity check (when any row exists, so older vaults still verify); `passwd` drops them.
/// The expiry is in the clear (authenticated), so expired rows are dropped without being opened.
public struct SiteRecord: Hashable, Sendable {
    /// The site, as the caller names it (an origin such as `https://example.com`).
    public var site: String
    /// The caller's own encoding of what it learned (sealed).
    public var content: Data
    /// When the record stops counting: reads leave it out from then on, writes remove it.
    public var expires: Date

    public init(site: String, content: Data, expires: Date) {
        (self.site, self.content, self.expires) = (site, content, expires)
    }
}

extension Vault {
    static func siteRecordAD(_ id: String, version: Int64) -> String {
        "keyhaven/site-record/v1|\(id)|\(version)"
    }

    /// The row id of `site` (hex): stable under one vault key.
    static func siteRecordID(_ site: String, keys: VaultKeys) -> String { Hex.encode(keys.tag("site-record", site)) }

    /// What is sealed: the site's name (the row id is only its keyed hash) with the caller's content.
    private struct SealedSiteRecord: Codable {
        var site: String
        var content: Data
    }

    /// Writes one row (saves and re-keying).
    private static func writeSiteRow(
        _ record: SiteRecord,
        version: Int64,
        created: Double,
        keys: VaultKeys,
        _ db: Database
    ) throws {
        let id = siteRecordID(record.site, keys: keys)
        var plaintext = try JSONEncoder().encode(SealedSiteRecord(site: record.site, content: record.content))
        defer { plaintext.resetBytes(in: 0..<plaintext.count) }
        try db.execute(
            sql: "INSERT OR REPLACE INTO siteRecord (id, version, sealed, expires, created) VALUES (?, ?, ?, ?, ?)",
            arguments: [
                id, version, try keys.seal(plaintext, associatedData: siteRecordAD(id, version: version)),
                record.expires.timeIntervalSince1970, created,
            ]
        )
    }

    /// Saves `records` in one transaction (each replaces the one for its site) and drops every
    /// record that has expired. One write for a whole audit's worth: each write re-checks the
    /// vault's integrity.
    public func saveSiteRecords(_ records: [SiteRecord]) throws(VaultError) {
        try guarded {
            let now = self.now().timeIntervalSince1970
            try authenticatedWrite { db in
                try db.execute(sql: "DELETE FROM siteRecord WHERE expires <= ?", arguments: [now])
                let keys = self.keys
                for record in records where record.expires.timeIntervalSince1970 > now {
                    let id = Self.siteRecordID(record.site, keys: keys)
                    let stored = try Int64.fetchOne(
                        db,
                        sql: "SELECT version FROM siteRecord WHERE id = ?",
                        arguments: [id]
                    )
                    try Self.writeSiteRow(record, version: (stored ?? 0) + 1, created: now, keys: keys, db)
                }
            }
        }
    }

    /// The records that have not expired, in no particular order. A record that fails
    /// authentication is left out (it is only a cache of what sites said: asking again is safe).
    public func siteRecords() throws(VaultError) -> [SiteRecord] {
        try guarded {
            let (keys, now) = (self.keys, self.now().timeIntervalSince1970)
            let sql = "SELECT id, version, sealed, expires FROM siteRecord WHERE expires > ?"
            let rows = try database.read { db in try Row.fetchAll(db, sql: sql, arguments: [now]) }
            return rows.compactMap { row -> SiteRecord? in
                let id: String = row["id"]
                guard
                    var plaintext = try? keys.open(
                        row["sealed"],
                        associatedData: Self.siteRecordAD(id, version: row["version"])
                    ),
                    let sealed = try? JSONDecoder().decode(SealedSiteRecord.self, from: plaintext)
                else { return nil }
                plaintext.resetBytes(in: 0..<plaintext.count)
                return SiteRecord(
                    site: sealed.site,
                    content: sealed.content,
                    expires: Date(timeIntervalSince1970: row["expires"])
                )
            }
        }
    }

    /// Forgets every site record; false when there was none.
    @discardableResult
    public func removeSiteRecords() throws(VaultError) -> Bool {
        try deleteRows("DELETE FROM siteRecord")
    }

    /// Forgets every record when the vault key changes (`passwd`): they are a cache of what sites
    /// said, so the next audit asks again, and no row sealed under the old key stays behind.
    func rekeySiteRecords(_ db: Database) throws {
        try db.execute(sql: "DELETE FROM siteRecord")
    }
}
