import Crypto
import Foundation
import KeyhavenJOSE
import Synchronization
import _KeyhavenSupport

/// Sign in with Keyhaven: an identity provider wire-compatible with Sign in with Apple, free of any
/// HTTP framework. The HTTP layer turns requests into calls here and results into responses.
///
/// Everything durable lives in the ``SQLDatabase`` (signing keys included), so several instances
/// can share one PostgreSQL database: a code issued by one is redeemed on another.
public final class IdentityProvider: Sendable {
    public let configuration: ProviderConfiguration
    public let database: any SQLDatabase
    let keyCache = Mutex<KeyCache?>(nil)
    let secretCache = Mutex<[String: CachedSecret]>([:])
    let accessKeyCache = Mutex<SymmetricKey?>(nil)
    /// Token-limit keys this instance saw fail recently, with when to stop watching them: only
    /// these are looked up before a token call (``limitingFailures(_:from:_:)``).
    let failingTokenKeys = Mutex<[String: Int64]>([:])

    struct KeyCache {
        var signing: RSASigningKey
        var published: [JWK]
        var loaded: Int64
    }

    struct CachedSecret {
        var client: Client
        var expires: Int64
        var checked: Int64
    }

    let prepared = Mutex(false)

    /// Opens the provider on `database`: migrates it, and creates the first signing key and the
    /// access-token key when missing (``prepare()``).
    public convenience init(configuration: ProviderConfiguration, database: any SQLDatabase) async throws {
        self.init(configuration: configuration, unpreparedDatabase: database)
        try await prepare()
    }

    /// A provider whose database is not touched yet: for a database that starts working inside
    /// a service group (PostgreSQL in `keyhaven idp serve`). ``prepare()`` before anything else;
    /// `ProviderServer.run` does.
    public init(configuration: ProviderConfiguration, unpreparedDatabase database: any SQLDatabase) {
        self.configuration = configuration
        self.database = database
    }

    /// Migrates the database, checks that the secrets key is the database's (``StorageError``
    /// `wrongSecretsKey` / `secretsKeyRequired` otherwise), creates the first signing key and the
    /// access-token key when missing, and seals secrets stored in the clear. Once per provider;
    /// safe to call again, and concurrently (from other instances too).
    public func prepare() async throws {
        if prepared.withLock({ $0 }) { return }
        try await IdentitySchema.migrate(database)
        try await ensureKeys()
        try await sealStoredSecrets()
        prepared.withLock { $0 = true }
    }

    // MARK: Helpers

    var nowMilliseconds: Int64 { Int64(configuration.now().timeIntervalSince1970 * 1000) }
    var nowSeconds: Int64 { Int64(configuration.now().timeIntervalSince1970) }

    /// A random token of `bytes` bytes, base64url.
    func randomToken(_ bytes: Int = 32) -> String { Base64URL.encode(configuration.randomBytes(bytes)) }

    /// Lowercase letters and digits.
    func randomAlphanumeric(_ count: Int, uppercase: Bool = false) -> String {
        let alphabet = Array(
            uppercase ? "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789" : "abcdefghijklmnopqrstuvwxyz0123456789"
        )
        var result = ""
        while result.count < count {
            for byte in configuration.randomBytes(count * 2) where byte < 252 && result.count < count {
                result.append(alphabet[Int(byte) % alphabet.count])
            }
        }
        return result
    }

    static func hash(_ secret: String) -> String {
        Hex.encode(SHA256.hash(data: Array(secret.utf8)))
    }

    @discardableResult
    func read<T: Sendable>(_ body: @Sendable (any SQLConnection) async throws -> T) async throws -> T {
        try await database.read(body)
    }

    @discardableResult
    func write<T: Sendable>(_ body: @Sendable (any SQLConnection) async throws -> T) async throws -> T {
        try await database.transaction(body)
    }

    func client(_ id: String, _ connection: any SQLConnection) async throws -> Client? {
        try await connection.fetchOne(ClientRecord.self, "\(ClientRecord.select) WHERE id = ?", .text(id)).map(
            Client.init
        )
    }

    public func client(_ id: String) async throws -> Client? {
        try await read { try await self.client(id, $0) }
    }

    func user(_ id: String, _ connection: any SQLConnection) async throws -> User? {
        try await connection.fetchOne(UserRecord.self, "\(UserRecord.select) WHERE id = ?", .text(id)).map(User.init)
    }

    public func user(email: String) async throws -> User? {
        try await read { connection in
            try await connection.fetchOne(
                UserRecord.self,
                "\(UserRecord.select) WHERE email = ?",
                .text(email.lowercased())
            ).map(User.init)
        }
    }

    func meta(_ name: String, _ connection: any SQLConnection) async throws -> String? {
        try await connection.fetchOne(String.self, "SELECT value FROM idp_meta WHERE name = ?", .text(name))
    }

    /// The key that authenticates stateless access tokens (shared by every instance).
    func accessTokenKey() async throws -> SymmetricKey {
        let stored = try await read { try await self.meta("access-token-key", $0) }
        guard let stored,
            let bytes = Base64URL.decode(
                try unsealed(stored, context: SealContext.accessTokenKey, what: "access-token key")
            )
        else {
            throw StorageError(.notPrepared, "the database has no access-token key")
        }
        return SymmetricKey(data: bytes)
    }
}
