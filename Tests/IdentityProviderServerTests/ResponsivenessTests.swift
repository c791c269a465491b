import AsyncHTTPClient
import Foundation
import IdentityProvider
import IdentityProviderServer
import IdentityProviderTestSupport
import KeyhavenTesting
import Logging
import NIOCore
import NIOHTTP1
import Synchronization
import Testing
import _KeyhavenSupport

/// Sign-ins hash passwords (scrypt, tens of milliseconds of CPU each): that work must not hold up
/// other requests. Security review finding #10: `/auth/keys` took 2.1 s during 40 concurrent
/// sign-ins, because `keyhaven idp serve` runs Swift concurrency on NIO's event loops and scrypt
/// (and GRDB) ran right there.
///
/// Here the server's request handling runs on one thread of its own (a task executor preference
/// the server's connection tasks inherit), as on an event loop. Before scrypt moved to its thread
/// pool and SQLite to GRDB's queues, each sign-in held that thread for its whole hash and
/// `/auth/keys` queued behind them (measured here: 2.2 s and 3.1 s; now a few milliseconds).
@Suite
struct ResponsivenessTests {
    static let signIns = 40
    /// Generous: idle, `/auth/keys` answers in a few milliseconds.
    static let bound: Duration = .milliseconds(1500)

    @Test func keysAnswerWhileSignInsAreHashing() async throws {
        var configuration = ProviderHarness.configuration()
        configuration.passwordLogN = 12  // tests run unoptimized scrypt: ~0.1 s of CPU each
        // No throttle: every attempt is hashed, and the sign-ins reach their hashes together (with
        // counters, each first waits for its counter's transaction, which spaces them out).
        configuration.accountThrottle = .unlimited
        configuration.addressThrottle = .unlimited
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("kh-idp-\(UUID().uuidString).sqlite")
            .path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let provider = try await IdentityProvider(
            configuration: configuration,
            database: try SQLiteDatabase(path: path)
        )
        // Clients of their own, so neither waits for the other's connections: the sign-ins all at
        // once, `/auth/keys` one request after another.
        var many = HTTPClient.Configuration()
        many.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = Self.signIns
        let signInClient = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: many)
        let keysClient = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup)
        let loop = DedicatedThreadExecutor()
        defer { loop.finish() }
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                let ready = AsyncStream.makeStream(of: Int.self)
                group.addTask {
                    var logger = Logger(label: "test.idp")
                    logger.logLevel = .critical
                    let server = ProviderServer(provider: provider, clientAddressHeader: "X-Forwarded-For")
                    try await withTaskExecutorPreference(loop) {
                        try await server.run(host: "127.0.0.1", port: 0, logger: logger) {
                            ready.continuation.yield($0)
                        }
                    }
                }
                var ports = ready.stream.makeAsyncIterator()
                let port = try #require(await ports.next())
                try await Self.measure("http://127.0.0.1:\(port)", signInClient: signInClient, keysClient: keysClient)
                group.cancelAll()
            }
        } catch {
            try? await signInClient.shutdown()
            try? await keysClient.shutdown()
            throw error
        }
        try await signInClient.shutdown()
        try await keysClient.shutdown()
    }

    static func measure(_ base: String, signInClient: HTTPClient, keysClient: HTTPClient) async throws {
        let clock = ContinuousClock()
        #expect(try await get(base + "/auth/keys", keysClient) == 200)  // warm: keys loaded and cached
        let lastSignIn = Mutex<ContinuousClock.Instant?>(nil)
        let signIns = Task {
            try await withThrowingTaskGroup(of: Int.self) { group in
                // Unknown accounts (hashed against the decoy, as a wrong password would be), from
                // distinct addresses.
                for index in 0..<Self.signIns {
                    group.addTask {
                        try await signIn(
                            base,
                            email: "nobody\(index)@example.com",
                            from: "198.51.100.\(index + 1)",
                            signInClient
                        )
                    }
                }
                var statuses: [Int] = []
                for try await status in group { statuses.append(status) }
                lastSignIn.withLock { $0 = clock.now }
                return statuses
            }
        }
        var answers: [(finished: ContinuousClock.Instant, took: Duration)] = []
        while lastSignIn.withLock({ $0 }) == nil {
            let start = clock.now
            #expect(try await get(base + "/auth/keys", keysClient) == 200)
            answers.append((clock.now, clock.now - start))
        }
        let statuses = try await signIns.value
        let finished = try #require(lastSignIn.withLock { $0 })

        #expect(statuses == Array(repeating: 401, count: Self.signIns))  // wrong guesses, not throttled
        #expect(answers.contains { $0.finished < finished })
        let slowest = answers.map(\.took).max() ?? .zero
        #expect(slowest < bound, "slowest /auth/keys: \(slowest), of \(answers.count)")
    }

    static func get(_ url: String, _ client: HTTPClient) async throws -> Int {
        let response = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(30))
        _ = try await response.body.collect(upTo: 1 << 20)
        return Int(response.status.code)
    }

    static func signIn(_ base: String, email: String, from address: String, _ client: HTTPClient) async throws -> Int {
        var request = HTTPClientRequest(url: base + "/keyhaven/v1/login")
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "X-Forwarded-For", value: address)
        let body = try JSONEncoder().encode(["email": email, "password": "not the password"])
        request.body = .bytes(ByteBuffer(bytes: body))
        let response = try await client.execute(request, timeout: .seconds(60))
        _ = try await response.body.collect(upTo: 1 << 16)
        return Int(response.status.code)
    }
}
