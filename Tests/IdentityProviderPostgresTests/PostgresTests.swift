import Crypto
import Foundation
import IdentityProvider
import IdentityProviderPostgres
import IdentityProviderServer
import IdentityProviderTestSupport
import KeyhavenJOSE
import KeyhavenTesting
import Logging
import RelyingParty
import Synchronization
import Testing

/// The provider on a real PostgreSQL (`KEYHAVEN_TEST_POSTGRES_URL`, set by scripts/test.sh after it
/// starts one; CI always has it). Each test gets a database of its own.
@Suite(.offCooperativePool)
struct PostgresTests {
    static let baseURL = TestPostgres.baseURL

    /// A fresh, empty database on the server; its URL.
    static func freshDatabase() async throws -> String {
        try await TestPostgres.freshDatabase()
    }

    static func database(url: String, logger: Logger = Logger(label: "test.idp.postgres")) throws -> PostgresDatabase {
        try TestPostgres.database(url: url, logger: logger)
    }

    /// Serves a second provider instance on the same database; returns its base URL to `body`.
    static func withSecondInstance(
        url: String,
        _ body: @escaping @Sendable (IdentityProvider, String) async throws -> Void
    ) async throws {
        let database = try Self.database(url: url)
        let provider = try await IdentityProvider(configuration: ProviderHarness.configuration(), database: database)
        let ready = AsyncStream.makeStream(of: Int.self)
        var logger = Logger(label: "test.idp.b")
        logger.logLevel = .critical
        let server = Task {
            try await ProviderServer(provider: provider).run(host: "127.0.0.1", port: 0, logger: logger) { port in
                ready.continuation.yield(port)
            }
        }
        defer { server.cancel() }
        var iterator = ready.stream.makeAsyncIterator()
        let port = try #require(await iterator.next())
        try await body(provider, "http://127.0.0.1:\(port)")
    }

    /// Security review Low #22: a remote database is reached over verified TLS unless the operator
    /// says otherwise; loopback keeps `prefer`.
    @Test func remoteDatabasesRequireTLSByDefault() throws {
        #expect(try PostgresDatabase(url: "postgres://idp@db.example.com/idp").sslMode == "require")
        #expect(try PostgresDatabase(url: "postgres://idp@10.0.0.5:5432/idp").sslMode == "require")
        #expect(try PostgresDatabase(url: "postgres://idp@127.0.0.1/idp").sslMode == "prefer")
        #expect(try PostgresDatabase(url: "postgres://idp@localhost/idp").sslMode == "prefer")
        #expect(try PostgresDatabase(url: "postgres://idp@127.8.9.10/idp").sslMode == "prefer")
        // A DNS name that starts like a loopback address is not one.
        #expect(try PostgresDatabase(url: "postgres://idp@127.example.com/idp").sslMode == "require")
        #expect(try PostgresDatabase(url: "postgres://idp@127.0.0.1.example.com/idp").sslMode == "require")
        #expect(try PostgresDatabase(url: "postgres://idp@db.example.com/idp?sslmode=disable").sslMode == "disable")
        #expect(throws: (any Error).self) {
            try PostgresDatabase(url: "postgres://idp@db.example.com/idp?sslmode=maybe")
        }
    }

    @Test(.enabled(if: baseURL != nil, "set KEYHAVEN_TEST_POSTGRES_URL (scripts/test.sh does)"))
    func twoInstancesShareOneFlow() async throws {
        let url = try await Self.freshDatabase()
        try await ProviderHarness.with(database: try Self.database(url: url)) { harness in
            try await Self.withSecondInstance(url: url) { _, second in
                // Authorize on the first instance, redeem the code on the second.
                let code = try #require(try await harness.authorizeInBrowser(share: false)["code"])
                var configuration = SignInClient.Configuration(
                    issuer: harness.provider.configuration.issuer,
                    baseURL: second,
                    clientId: harness.clientId,
                    teamId: harness.teamId,
                    key: harness.teamKey
                )
                configuration.now = { Date() }
                let onSecond = SignInClient(configuration: configuration)
                let (tokens, claims) = try await onSecond.exchange(
                    code: code,
                    redirectURI: harness.redirectURI,
                    nonce: "n-1"
                )
                #expect(claims.is_private_email == BoolClaim(true))
                // Both publish the same key set; a reuse on the first instance is refused and revokes.
                #expect(try await harness.client().verifier.verify(tokens.id_token!).sub == claims.sub)
                await #expect {
                    _ = try await harness.client().exchange(code: code, redirectURI: harness.redirectURI, nonce: nil)
                } throws: { ($0 as? RelyingPartyError)?.message.contains("already been used") == true }
                await #expect { _ = try await onSecond.refresh(tokens.refresh_token!) } throws: {
                    ($0 as? RelyingPartyError)?.oauthError == "invalid_grant"
                }
            }
        }
    }

    @Test(.enabled(if: baseURL != nil, "set KEYHAVEN_TEST_POSTGRES_URL (scripts/test.sh does)"))
    func instancesStartingTogetherAgreeOnOneKey() async throws {
        let url = try await Self.freshDatabase()
        let providers = try await withThrowingTaskGroup(of: IdentityProvider.self) { group in
            for _ in 0..<3 {
                group.addTask {
                    try await IdentityProvider(
                        configuration: ProviderHarness.configuration(),
                        database: try Self.database(url: url)
                    )
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        for provider in providers { #expect(try await provider.jwks().keys.count == 1) }
        for provider in providers { await provider.database.shutdown() }
    }

    /// The same scenario on both engines: every statement the provider sends must work on each.
    @Test(arguments: ["sqlite", "postgres"])
    func storageConformance(engine: String) async throws {
        let database: any SQLDatabase
        if engine == "postgres" {
            guard Self.baseURL != nil else { return }
            database = try Self.database(url: try await Self.freshDatabase())
        } else {
            database = try SQLiteDatabase(
                path: FileManager.default.temporaryDirectory
                    .appendingPathComponent("kh-idp-\(UUID().uuidString).sqlite").path
            )
        }
        var configuration = ProviderHarness.configuration()
        configuration.notificationRetry = RetryPolicy(base: 50, cap: 100, lease: 200)
        // Signing keys, the access-token key and secrets sealed, as `keyhaven idp` always runs.
        configuration.secretsKey = SymmetricKey(size: .bits256)
        try await ProviderHarness.with(
            configuration,
            database: database,
            notificationURL: "http://127.0.0.1:9/notify"
        ) { harness in
            let provider = harness.provider
            let client = harness.client()
            let code = try #require(try await harness.authorizeInBrowser(share: false)["code"])
            let (tokens, claims) = try await client.exchange(code: code, redirectURI: harness.redirectURI, nonce: nil)
            _ = try await client.refresh(tokens.refresh_token!)
            let user = try #require(try await provider.user(email: harness.email))
            try await provider.setRelayForwarding(userId: user.id, clientId: harness.clientId, enabled: false)
            try await provider.stopUsing(userId: user.id, clientId: harness.clientId)
            #expect(try await client.credentialState(sub: claims.sub) == "revoked")

            final class Accepting: NotificationTransport {
                let bodies = Mutex<[[UInt8]]>([])
                func post(url: String, body: [UInt8]) async -> Int? {
                    bodies.withLock { $0.append(body) }
                    return 200
                }
            }
            // The background sender fails (nothing listens on port 9) and retries; this one accepts.
            let accepting = Accepting()
            let deadline = ContinuousClock.now + .seconds(10)
            while try await provider.outboxSummary().delivered < 2 && ContinuousClock.now < deadline {
                _ = try await provider.deliverDueNotifications(using: accepting)
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(accepting.bodies.withLock { $0.count } == 2)
            let summary = try await provider.outboxSummary()
            #expect(summary.delivered == 2 && summary.pending == 0)
            _ = try await provider.rotateSigningKey()
            #expect(try await provider.jwks().keys.count == 2)
            try await provider.deleteAccount(userId: user.id)
            #expect(try await provider.user(email: harness.email) == nil)

            // Everything sealed moves to a new key in one transaction, on either engine.
            let kids = try await provider.signingKeyIDs()
            _ = try await provider.createUser(email: "grace@example.com", password: harness.password, totp: true)
            let newKey = SymmetricKey(size: .bits256)
            #expect(try await provider.resealSecrets(under: newKey) == 4)
            let original = harness.provider.configuration
            var resealed = original
            resealed.secretsKey = newKey
            let reopened = try await IdentityProvider(configuration: resealed, database: database)
            #expect(try await reopened.signingKeyIDs() == kids)
            #expect(try await reopened.secretsKeyMatches(newKey))
            await #expect(throws: StorageError(.wrongSecretsKey, "")) {
                _ = try await IdentityProvider(configuration: original, database: database)
            }
        }
        await database.shutdown()
    }
}
