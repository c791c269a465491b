public import Foundation
import GRDB

/// Keyhaven signed in to a Sign in with Keyhaven provider (`keyhaven idp login`).
public struct ProviderSession: Hashable, Sendable, Codable {
    /// The provider's issuer, as its tokens name it.
    public var issuer: String
    /// Where its endpoints are.
    public var baseURL: String
    public var email: String
    /// The device token (a secret: sealed in the vault, never printed).
    public var deviceToken: String
    public var created: Date

    public init(issuer: String, baseURL: String, email: String, deviceToken: String, created: Date) {
        self.issuer = issuer
        self.baseURL = baseURL
        self.email = email
        self.deviceToken = deviceToken
        self.created = created
    }
}

extension Vault {
    /// A session's associated data: its tag and a version that grows with every replacement.
    static func providerAD(_ tag: Data, version: Int64) -> String {
        "keyhaven/provider-session/v2|\(tag.base64EncodedString())|\(version)"
    }
    /// Format 1's associated data (tag only), read once by the format upgrade.
    static func legacyProviderAD(_ tag: Data) -> String { "keyhaven/provider-session/v1|\(tag.base64EncodedString())" }

    /// Opens a session row (version 0: damaged before the format upgrade, never trusted).
    func openSession(_ row: Row, keys: VaultKeys) throws -> ProviderSession {
        let tag: Data = row["tag"]
        let version: Int64 = row["version"]
        guard version > 0 else {
            throw VaultError(.corruptRecord, "a provider session failed authentication: it was altered or damaged")
        }
        var plaintext = try keys.open(row["sealed"], associatedData: Self.providerAD(tag, version: version))
        defer { plaintext.resetBytes(in: 0..<plaintext.count) }
        return try JSONDecoder().decode(ProviderSession.self, from: plaintext)
    }

    func providerTag(_ issuer: String) -> Data { keys.tag("provider-session", issuer) }

    /// Saves (or replaces) the session for `session.issuer`.
    public func saveProviderSession(_ session: ProviderSession) throws(VaultError) {
        try guarded {
            var plaintext = try JSONEncoder().encode(session)
            defer { plaintext.resetBytes(in: 0..<plaintext.count) }
            let created = now().timeIntervalSince1970
            try authenticatedWrite { db in
                let tag = providerTag(session.issuer)
                let version =
                    (try Int64.fetchOne(db, sql: "SELECT version FROM providerSession WHERE tag = ?", arguments: [tag])
                        ?? 0) + 1
                let sealed = try keys.seal(plaintext, associatedData: Self.providerAD(tag, version: version))
                try db.execute(
                    sql: "INSERT OR REPLACE INTO providerSession (tag, version, sealed, created) VALUES (?, ?, ?, ?)",
                    arguments: [tag, version, sealed, created]
                )
            }
        }
    }

    /// The session for a provider, by issuer.
    public func providerSession(issuer: String) throws(VaultError) -> ProviderSession? {
        try guarded {
            let keys = self.keys
            let tag = keys.tag("provider-session", issuer)
            guard
                let row = try database.read({ db in
                    try Row.fetchOne(
                        db,
                        sql: "SELECT tag, version, sealed FROM providerSession WHERE tag = ?",
                        arguments: [tag]
                    )
                })
            else { return nil }
            return try openSession(row, keys: keys)
        }
    }

    /// Every provider Keyhaven is signed in to.
    public func providerSessions() throws(VaultError) -> [ProviderSession] {
        try guarded {
            let rows = try database.read { db in
                try Row.fetchAll(db, sql: "SELECT tag, version, sealed FROM providerSession ORDER BY created")
            }
            let keys = self.keys
            return try rows.map { row in try openSession(row, keys: keys) }
        }
    }

    /// Forgets the session for a provider; false when there was none.
    @discardableResult
    public func removeProviderSession(issuer: String) throws(VaultError) -> Bool {
        try deleteRows("DELETE FROM providerSession WHERE tag = ?", arguments: [providerTag(issuer)])
    }
}
