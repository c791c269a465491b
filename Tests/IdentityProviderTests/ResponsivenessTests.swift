import AsyncHTTPClient
import Foundation
import IdentityProvider
import KeyhavenHTTP
import NIOCore
import NIOHTTP1
import Synchronization
import Testing

/// Sign-ins hash passwords (scrypt, tens of milliseconds of CPU each): that work must not hold up
/// other requests, so it runs on a thread pool of its own, and the database on GRDB's queues.
/// Security review finding #10: `/auth/keys` took 2.1 s during 40 concurrent sign-ins.
@Suite
struct ResponsivenessTests {
    static let signIns = 40
    /// Generous: idle, `/auth/keys` answers in a few milliseconds.
    static let bound: Duration = .milliseconds(1500)

    @Test func keysAnswerWhileSignInsAreHashing() async throws {
        var configuration = ProviderHarness.configuration()
        configuration.passwordLogN = 12  // tests run unoptimized scrypt: ~0.2 s of CPU each
        let server: @Sendable (IdentityProvider) -> ProviderServer = {
            ProviderServer(provider: $0, deliveryInterval: .seconds(5), clientAddressHeader: "X-Forwarded-For")
        }
        // Clients of their own, so neither waits for the other's connections: the sign-ins all at
        // once, `/auth/keys` one request after another.
        var many = HTTPClient.Configuration()
        many.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = Self.signIns
        let signInClient = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: many)
        let keysClient = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup)
        do {
            try await ProviderHarness.with(configuration, server: server) { harness in
                try await Self.measure(harness.baseURL, signInClient: signInClient, keysClient: keysClient)
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
                // Unknown accounts from distinct addresses: neither throttle counter gets near its
                // limit (5 per account, 50 per address), so every attempt is hashed.
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
