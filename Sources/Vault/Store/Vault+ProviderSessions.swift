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
    static func providerAD(_ tag: Data) -> String { "keyhaven/provider-session/v1|\(tag.base64EncodedString())" }

    func providerTag(_ issuer: String) -> Data { keys.tag("provider-session", issuer) }

    /// Saves (or replaces) the session for `session.issuer`.
    public func saveProviderSession(_ session: ProviderSession) throws(VaultError) {
        try guarded {
            var plaintext = try JSONEncoder().encode(session)
            defer { plaintext.resetBytes(in: 0..<plaintext.count) }
            let created = now().timeIntervalSince1970
            try authenticatedWrite { db in
                let tag = providerTag(session.issuer)
                let sealed = try keys.seal(plaintext, associatedData: Self.providerAD(tag))
                try db.execute(
                    sql: "INSERT OR REPLACE INTO providerSession (tag, sealed, created) VALUES (?, ?, ?)",
                    arguments: [tag, sealed, created]
                )
            }
        }
    }

    /// The session for a provider, by issuer.
    public func providerSession(issuer: String) throws(VaultError) -> ProviderSession? {
        try guarded {
            let tag = providerTag(issuer)
            guard
                let sealed = try database.read({ db in
                    try Data.fetchOne(db, sql: "SELECT sealed FROM providerSession WHERE tag = ?", arguments: [tag])
                })
            else { return nil }
            var plaintext = try keys.open(sealed, associatedData: Self.providerAD(tag))
            defer { plaintext.resetBytes(in: 0..<plaintext.count) }
            return try JSONDecoder().decode(ProviderSession.self, from: plaintext)
        }
    }

    /// Every provider Keyhaven is signed in to.
    public func providerSessions() throws(VaultError) -> [ProviderSession] {
        try guarded {
            let rows = try database.read { db in
                try Row.fetchAll(db, sql: "SELECT tag, sealed FROM providerSession ORDER BY created")
            }
            return try rows.map { row in
                let tag: Data = row["tag"]
                var plaintext = try keys.open(row["sealed"], associatedData: Self.providerAD(tag))
                defer { plaintext.resetBytes(in: 0..<plaintext.count) }
                return try JSONDecoder().decode(ProviderSession.self, from: plaintext)
            }
        }
    }

    /// Forgets the session for a provider; false when there was none.
    @discardableResult
    public func removeProviderSession(issuer: String) throws(VaultError) -> Bool {
        try guarded {
            let tag = providerTag(issuer)
            return try authenticatedWrite { db in
                try db.execute(sql: "DELETE FROM providerSession WHERE tag = ?", arguments: [tag])
                return db.changesCount > 0
            }
        }
    }
}
