import Foundation
import GRDB
import _KeyhavenSupport

extension Vault {
    /// A credential's associated data: its id and its version, which grows with every change to
    /// its sealed content, so an older ciphertext of the same record fails (``VaultIntegrity``).
    static func recordAD(_ id: CredentialID, version: Int64) -> String {
        "keyhaven/credential/v2|\(id.rawValue)|\(version)"
    }
    /// Format 1's associated data (id only), read once by the format upgrade.
    static func legacyRecordAD(_ id: CredentialID) -> String { "keyhaven/credential/v1|\(id.rawValue)" }
    static func historyAD(_ id: CredentialID, _ entry: String) -> String {
        "keyhaven/history/v1|\(id.rawValue)|\(entry)"
    }

    // MARK: Writing

    /// Adds a credential and returns its id.
    @discardableResult
    public func add(_ content: CredentialContent) throws(VaultError) -> CredentialID {
        try guarded {
            try authenticatedWrite { db in try insert(content, db) }
        }
    }

    func insert(_ content: CredentialContent, _ db: Database, id: CredentialID = CredentialID()) throws -> CredentialID
    {
        let time = now().timeIntervalSince1970
        let keys = self.keys
        try db.execute(
            sql: """
                INSERT INTO credential (id, version, sealed, contentTag, created, modified) VALUES (?, 1, ?, ?, ?, ?)
                """,
            arguments: [
                id.rawValue, try seal(content, id, version: 1, keys: keys), keys.contentTag(content), time, time,
            ]
        )
        try writeServiceTags(content, id, db, keys: keys)
        return id
    }

    /// Changes a credential. A changed password moves the old one to the history with the time it
    /// was replaced; history is never dropped.
    @discardableResult
    public func update(
        _ id: CredentialID,
        _ change: (inout CredentialContent) throws -> Void
    ) throws(VaultError)
        -> Credential
    {
        try guarded {
            try authenticatedWrite { db in
                var credential = try load(id, db)
                var content = credential.content
                try change(&content)
                try replace(&credential, with: content, db)
                return credential
            }
        }
    }

    func replace(_ credential: inout Credential, with content: CredentialContent, _ db: Database) throws {
        let time = now()
        if let old = credential.password, old != content.password {
            try appendHistory(credential.id, password: old, replaced: time, db)
        }
        credential.content = content
        credential.modified = time
        let keys = self.keys
        let version =
            try Int64.fetchOne(
                db,
                sql: "SELECT version FROM credential WHERE id = ?",
                arguments: [credential.id.rawValue]
            )
            ?? 0
        try db.execute(
            sql: "UPDATE credential SET sealed = ?, version = ?, contentTag = ?, modified = ? WHERE id = ?",
            arguments: [
                try seal(content, credential.id, version: version + 1, keys: keys), version + 1,
                keys.contentTag(content), time.timeIntervalSince1970, credential.id.rawValue,
            ]
        )
        try db.execute(sql: "DELETE FROM credentialService WHERE credentialID = ?", arguments: [credential.id.rawValue])
        try writeServiceTags(content, credential.id, db, keys: keys)
    }

    func appendHistory(_ id: CredentialID, password: String, replaced: Date, _ db: Database) throws {
        let entry = UUID().uuidString.lowercased()
        let sealed = try keys.seal(Data(password.utf8), associatedData: Self.historyAD(id, entry))
        try db.execute(
            sql: "INSERT INTO passwordHistory (id, credentialID, sealed, replaced) VALUES (?, ?, ?, ?)",
            arguments: [entry, id.rawValue, sealed, replaced.timeIntervalSince1970]
        )
    }

    /// Moves a credential to "recently deleted"; it can be restored for 30 days.
    public func remove(_ id: CredentialID) throws(VaultError) {
        try setDeleted(id, now().timeIntervalSince1970)
    }

    /// Brings a credential back from "recently deleted".
    public func restore(_ id: CredentialID) throws(VaultError) {
        try setDeleted(id, nil)
    }

    private func setDeleted(_ id: CredentialID, _ time: Double?) throws(VaultError) {
        let changed = try guarded {
            try authenticatedWrite { db in
                try db.execute(sql: "UPDATE credential SET deleted = ? WHERE id = ?", arguments: [time, id.rawValue])
                return db.changesCount
            }
        }
        if changed == 0 {
            throw VaultError(.notFound, "no credential \(id)", record: id)
        }
    }

    /// Deletes for good what has been in "recently deleted" for more than 30 days. The deletion
    /// times are authenticated (``VaultIntegrity``, checked first by the write): an edited `deleted`
    /// column makes the vault `tampered`, it never purges anything.
    func purgeExpired() throws {
        let limit = now().timeIntervalSince1970 - Self.recentlyDeletedPeriod
        let expired = try database.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM credential WHERE deleted < ?", arguments: [limit]) ?? 0
        }
        if expired > 0 {
            try authenticatedWrite { db in
                try db.execute(sql: "DELETE FROM credential WHERE deleted < ?", arguments: [limit])
            }
        }
    }

    // MARK: Reading

    /// The credential with `id` (also when recently deleted).
    public func credential(_ id: CredentialID) throws(VaultError) -> Credential {
        try guarded { try database.read { db in try load(id, db) } }
    }

    func load(_ id: CredentialID, _ db: Database) throws -> Credential {
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM credential WHERE id = ?", arguments: [id.rawValue])
        else {
            throw VaultError(.notFound, "no credential \(id)", record: id)
        }
        return try decode(row)
    }

    /// Credentials and the records that could not be read, in creation order.
    public struct Listing: Sendable {
        public var credentials: [Credential]
        /// One error per record that failed to decrypt (named by id); the others are listed.
        public var failures: [VaultError]
    }

    /// Every credential (recently deleted ones only when asked).
    public func list(includeDeleted: Bool = false, onlyDeleted: Bool = false) throws(VaultError) -> Listing {
        try guarded {
            let rows = try database.read { db in
                let filter = onlyDeleted ? "WHERE deleted IS NOT NULL" : (includeDeleted ? "" : "WHERE deleted IS NULL")
                return try Row.fetchAll(db, sql: "SELECT * FROM credential \(filter) ORDER BY created, id")
            }
            return decodeAll(rows)
        }
    }

    func decodeAll(_ rows: [Row]) -> Listing {
        var listing = Listing(credentials: [], failures: [])
        listing.credentials.reserveCapacity(rows.count)
        for row in rows {
            do {
                listing.credentials.append(try decode(row))
            } catch {
                listing.failures.append(Self.mapped(error))
            }
        }
        return listing
    }

    /// The password history of a credential, oldest first.
    public func history(_ id: CredentialID) throws(VaultError) -> [PasswordHistoryEntry] {
        try guarded { try database.read { db in try loadHistory(id, db) } }
    }

    func loadHistory(_ id: CredentialID, _ db: Database) throws -> [PasswordHistoryEntry] {
        let rows = try Row.fetchAll(
            db,
            sql: "SELECT id, sealed, replaced FROM passwordHistory WHERE credentialID = ? ORDER BY replaced, rowid",
            arguments: [id.rawValue]
        )
        return try rows.map { row in
            let entry: String = row["id"]
            do {
                var password = try keys.open(row["sealed"], associatedData: Self.historyAD(id, entry))
                defer { password.resetBytes(in: 0..<password.count) }
                return PasswordHistoryEntry(
                    password: String(decoding: password, as: UTF8.self),
                    replaced: Date(timeIntervalSince1970: row["replaced"])
                )
            } catch {
                throw VaultError(
                    .corruptRecord,
                    "the password history of credential \(id) is corrupt (entry \(entry.prefix(8)))",
                    record: id
                )
            }
        }
    }

    /// The credential whose id is `text` or starts with it (at least 4 characters).
    public func resolve(_ text: String) throws(VaultError) -> CredentialID {
        let prefix = text.lowercased()
        guard prefix.count >= 4 else {
            throw VaultError(.invalidInput, "give at least 4 characters of the credential id")
        }
        // Two are enough to tell "one" from "ambiguous".
        let ids = try credentialIDs(withPrefix: prefix, limit: 2)
        switch ids.count {
        case 0: throw VaultError(.notFound, "no credential with id \(text)")
        case 1: return CredentialID(rawValue: ids[0])!
        default: throw VaultError(.ambiguous, "more than one credential id starts with \(text); give more characters")
        }
    }

    /// The ids (deleted credentials' too) that start with `prefix`, oldest first; the first `limit`
    /// of them when given.
    func credentialIDs(withPrefix prefix: String, limit: Int? = nil) throws(VaultError) -> [String] {
        try guarded {
            try database.read { db in
                try String.fetchAll(
                    db,
                    sql: "SELECT id FROM credential WHERE substr(id, 1, ?) = ? ORDER BY created, id LIMIT ?",
                    arguments: [prefix.count, prefix, limit ?? -1]
                )
            }
        }
    }

    /// How many credentials there are (not counting recently deleted ones).
    public func count() throws(VaultError) -> Int {
        try guarded {
            try database.read { db in
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM credential WHERE deleted IS NULL") ?? 0
            }
        }
    }

    // MARK: Sealing

    func seal(_ content: CredentialContent, _ id: CredentialID, version: Int64, keys: VaultKeys) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        var plaintext = try encoder.encode(content)
        defer { plaintext.resetBytes(in: 0..<plaintext.count) }
        return try keys.seal(plaintext, associatedData: Self.recordAD(id, version: version))
    }

    /// Opens a credential's sealed content (version 0: damaged before the format upgrade, never
    /// trusted).
    static func openContent(
        _ sealed: Data,
        _ id: CredentialID,
        version: Int64,
        keys: VaultKeys
    ) throws
        -> CredentialContent
    {
        guard version > 0 else { throw VaultError(.corruptRecord, "", record: id) }
        var plaintext = try keys.open(sealed, associatedData: recordAD(id, version: version))
        // Overwrite the decrypted bytes once decoded (Strings cannot be wiped; buffers can).
        defer { plaintext.resetBytes(in: 0..<plaintext.count) }
        return try JSONDecoder().decode(CredentialContent.self, from: plaintext)
    }

    func decode(_ row: Row) throws -> Credential {
        let rawID: String = row["id"]
        guard let id = CredentialID(rawValue: rawID) else {
            throw VaultError(.corruptRecord, "a record has a malformed id")
        }
        let content: CredentialContent
        do {
            content = try Self.openContent(row["sealed"], id, version: row["version"], keys: keys)
        } catch {
            throw VaultError(
                .corruptRecord,
                "credential \(id) cannot be decrypted: its data was altered or damaged; the other credentials are unaffected",
                record: id
            )
        }
        let deleted: Double? = row["deleted"]
        return Credential(
            id: id,
            content: content,
            created: Date(timeIntervalSince1970: row["created"]),
            modified: Date(timeIntervalSince1970: row["modified"]),
            deleted: deleted.map(Date.init(timeIntervalSince1970:))
        )
    }

    // MARK: Service lookup

    func writeServiceTags(_ content: CredentialContent, _ id: CredentialID, _ db: Database, keys: VaultKeys) throws {
        var tags = Set<Data>()
        for service in content.services {
            if let origin = service.origin {
                tags.insert(keys.tag("exact", origin.host))
                for domain in origin.hostAndParentsWithinSite {
                    tags.insert(keys.tag("within", domain))
                }
            }
            if let package = service.androidPackage {
                tags.insert(keys.tag("app", package.lowercased()))
            }
        }
        for tag in tags {
            try db.execute(
                sql: "INSERT INTO credentialService (credentialID, tag) VALUES (?, ?)",
                arguments: [id.rawValue, tag]
            )
        }
    }

    /// Credentials for a service, best match first (``ServiceMatch``: exact, then a parent domain,
    /// then a subdomain, each in the order they were created). Candidates are found through keyed
    /// hashes (no decryption of unrelated records) and then checked against the matching policy:
    /// parent and child domains only within one registrable domain (eTLD+1), and scheme and port
    /// when `service` is a URL. `service` may be a domain, a URL or an Android package
    /// (`androidapp://…`).
    ///
    /// `accepting` bounds the kinds of match returned: `.exact` for anything that acts on the
    /// account at that very origin (upgrades, in-app requests), where a credential for a parent or
    /// sibling origin would send the wrong password or overwrite the wrong record.
    ///
    /// Vaults written before the registrable-domain bound carry more `within` tags than they need;
    /// those only widen the candidates, which the policy check then narrows.
    public func credentials(
        forService service: String,
        accepting worst: ServiceMatch = .subdomain
    ) throws(VaultError) -> Listing {
        let identifier = ServiceIdentifier(service)
        var tags: [Data] = []
        if let package = identifier.androidPackage {
            tags.append(keys.tag("app", package.lowercased()))
        } else if let origin = identifier.origin {
            tags.append(keys.tag("within", origin.host))
            for parent in origin.hostAndParentsWithinSite.dropFirst() {
                tags.append(keys.tag("exact", parent))
            }
        }
        guard !tags.isEmpty else { return Listing(credentials: [], failures: []) }
        return try guarded {
            let rows = try database.read { db in
                try Row.fetchAll(
                    db,
                    sql: """
                        SELECT * FROM credential WHERE deleted IS NULL AND id IN
                          (SELECT credentialID FROM credentialService WHERE tag IN (\(tags.map { _ in "?" }.joined(separator: ","))))
                        ORDER BY created, id
                        """,
                    arguments: StatementArguments(tags)
                )
            }
            var listing = decodeAll(rows)
            let ranked = listing.credentials.compactMap { credential in
                credential.services.compactMap { $0.match(for: identifier) }.min().flatMap {
                    $0 <= worst ? (credential, $0) : nil
                }
            }
            // A stable sort keeps creation order within each kind of match.
            listing.credentials = ranked.enumerated()
                .sorted { ($0.element.1, $0.offset) < ($1.element.1, $1.offset) }
                .map(\.element.0)
            return listing
        }
    }

    /// Credentials whose title, user, services, notes or folder contain `text` (case-insensitive).
    /// This decrypts every record in memory; nothing is written.
    public func search(text: String) throws(VaultError) -> Listing {
        var listing = try list()
        let needle = text.lowercased()
        listing.credentials = listing.credentials.filter { credential in
            let haystacks =
                [credential.title, credential.user, credential.notes, credential.folder ?? ""]
                + credential.services.map(\.identifier)
            return haystacks.contains { $0.lowercased().contains(needle) }
        }
        return listing
    }
}
