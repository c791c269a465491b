import BreachCheck
import BreachCheckHTTP
import BreachPSI
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import KeyhavenTesting
import NIOCore
import Testing
import _KeyhavenSupport

/// The breach-PSI server over HTTP with the HTTP client: what the server receives, its rate limit,
/// what it publishes, and a server that cannot be reached.
struct BreachPSIHTTPServerTests {
    static let corpus = BreachCorpus(size: 30, seed: 2930)

    static func server(seed: UInt64 = 7) throws -> BreachPSIServer {
        var rng = SeededRandomNumberGenerator(seed: seed)
        let key = BreachPSIServerKey(using: &rng)
        var builder = BreachPSIBucketBuilder(key: key)
        try builder.add(contentsOf: corpus.present.map(\.digest))
        return BreachPSIServer(key: key, buckets: builder.finish())
    }

    /// Collects what the server's log shows it received.
    final class Received: @unchecked Sendable {
        private let lock = NSLock()
        private var bodies: [[UInt8]] = []
        func add(_ body: [UInt8]) { lock.withLock { bodies.append(body) } }
        func take() -> [[UInt8]] {
            lock.withLock {
                defer { bodies = [] }
                return bodies
            }
        }
    }

    /// The wire test: through HTTP, 1 password and 16 make the server receive the same number of
    /// queries, each 52 bytes holding only the version, a 15-bit prefix and a group element; the
    /// answers are right.
    @Test(.offCooperativePool) func oneAndSixteenPasswordsLookTheSameToTheServer() async throws {
        let received = Received()
        let http = BreachPSIHTTPServer(server: try Self.server(), threads: 2, observer: { received.add($0) })
        let app = Application(router: http.router())
        try await app.test(.live) { client in
            let checker = BreachPSIChecker(transport: HTTPBreachPSITransport(base: "http://127.0.0.1:\(client.port!)"))
            let breached = Self.corpus.present[3].digest
            #expect(try await checker.breached([breached]) == [true])
            let one = received.take()
            let sixteen = Self.corpus.present.prefix(5).map(\.digest) + Self.corpus.absent.prefix(11)
            let answers = try await checker.breached(sixteen)
            #expect(answers == [Bool](repeating: true, count: 5) + [Bool](repeating: false, count: 11))
            let many = received.take()
            #expect(one.count == 16 && many.count == 16)
            for body in one + many {
                #expect(body.count == PSIRequest.encodedLength)
                let request = try PSIRequest(decoding: body)
                #expect(request.prefix < 1 << 15)
                #expect(request.blindedElement.count == 49 && [2, 3].contains(request.blindedElement[0]))
            }
        }
    }

    /// Over the limit a client gets 429 with Retry-After, and the limit refills with time (the
    /// clock is injected); another address is not affected.
    @Test func theRateLimitAnswers429() async throws {
        let clock = ManualSeconds()
        let limiter = BreachPSIRateLimiter(burst: 3, perSecond: 0.5, now: { clock.value })
        #expect(limiter.take(client: "a") == nil)
        #expect(limiter.take(client: "a") == nil)
        #expect(limiter.take(client: "a") == nil)
        #expect(limiter.take(client: "a") == 2)
        #expect(limiter.take(client: "b") == nil)
        clock.value = 2
        #expect(limiter.take(client: "a") == nil)
        #expect(limiter.take(client: "a") != nil)

        let server = try Self.server()
        // A clock that stands still: no token comes back while the test runs, however slow.
        let stopped = ManualSeconds()
        let http = BreachPSIHTTPServer(
            server: server,
            limiter: BreachPSIRateLimiter(burst: 2, perSecond: 0.25, now: { stopped.value }),
            threads: 1
        )
        let client = BreachPSIClient(publicKey: server.key.publicKey)
        let body = try client.query(Self.corpus.absent[0]).request.encoded
        try await Application(router: http.router()).test(.router) { tester in
            for _ in 0..<2 {
                try await tester.execute(uri: "/psi/v1/query", method: .post, body: ByteBuffer(bytes: body)) {
                    #expect($0.status == .ok)
                }
            }
            try await tester.execute(uri: "/psi/v1/query", method: .post, body: ByteBuffer(bytes: body)) {
                #expect($0.status == .tooManyRequests)
                #expect($0.headers[.retryAfter] == "4")
            }
        }
    }

    /// What `GET /psi/v1/key` publishes: the public key and the parameters, never the secret key;
    /// malformed and oversized queries are refused.
    @Test func publishesOnlyThePublicKey() async throws {
        let server = try Self.server()
        let http = BreachPSIHTTPServer(server: server, threads: 1)
        try await Application(router: http.router()).test(.router) { tester in
            try await tester.execute(uri: "/psi/v1/key", method: .get) { response in
                #expect(response.status == .ok)
                let text = String(buffer: response.body)
                #expect(text.contains(Hex.encode(server.key.publicKey.representation)))
                #expect(text.contains("\"buckets\":32768") || text.contains("\"buckets\" : 32768"))
                #expect(!text.contains(Hex.encode(server.key.serialized.suffix(48))))
                #expect(response.headers[.xContentTypeOptions] == "nosniff")
            }
            try await tester.execute(uri: "/psi/v1/query", method: .post, body: ByteBuffer(bytes: [1, 0, 1])) {
                #expect($0.status == .badRequest)
            }
            try await tester.execute(
                uri: "/psi/v1/query",
                method: .post,
                body: ByteBuffer(bytes: [UInt8](repeating: 1, count: 53))
            ) {
                #expect($0.status == .contentTooLarge)
            }
        }
    }

    /// A server nobody listens on: the check fails at once with a clear error. Off Swift's
    /// cooperative pool, which the other suites' P-384 work keeps busy in a debug build.
    @Test(.offCooperativePool) func anUnreachableServerFailsAtOnce() async throws {
        let base = "http://127.0.0.1:\(try LoopbackPort.unused())"
        let started = ContinuousClock.now
        let error = await #expect(throws: BreachPSIError.self) {
            try await BreachPSIChecker(transport: HTTPBreachPSITransport(base: base)).breached([Self.corpus.absent[0]])
        }
        #expect(error?.code == .unreachable)
        #expect(error?.message.contains("cannot reach \(base)") == true)
        #expect(ContinuousClock.now - started < .seconds(5))
    }

    /// Through the real limiter (a burst of 4, then 4 a second, on a clock the client's waits
    /// advance): 5 batches of 4 succeed, each 429 waited out for its Retry-After and the request
    /// sent again. A limiter whose clock stands still exhausts the client's wait budget: the check
    /// fails with `rateLimited`, never "not breached".
    @Test(.offCooperativePool) func batchesWaitOutTheRateLimit() async throws {
        let clock = ManualSeconds()
        let http = BreachPSIHTTPServer(
            server: try Self.server(),
            limiter: BreachPSIRateLimiter(burst: 4, perSecond: 4, now: { clock.value }),
            threads: 2
        )
        let slept = ManualSeconds()
        try await Application(router: http.router()).test(.live) { client in
            let transport = HTTPBreachPSITransport(
                base: "http://127.0.0.1:\(client.port!)",
                sleep: { seconds in
                    slept.value += Double(seconds)
                    clock.value += Double(seconds)
                }
            )
            let digests = Self.corpus.present.prefix(10).map(\.digest) + Self.corpus.absent.prefix(10)
            let answers = try await BreachPSIChecker(transport: transport, batchSize: 4).breached(digests)
            #expect(answers == [Bool](repeating: true, count: 10) + [Bool](repeating: false, count: 10))
            #expect(slept.value >= 1)
        }
        let stopped = ManualSeconds()
        let stuck = BreachPSIHTTPServer(
            server: try Self.server(),
            limiter: BreachPSIRateLimiter(burst: 2, perSecond: 0.5, now: { stopped.value }),
            threads: 1
        )
        try await Application(router: stuck.router()).test(.live) { client in
            let transport = HTTPBreachPSITransport(
                base: "http://127.0.0.1:\(client.port!)",
                maximumWait: 5,
                sleep: { _ in }
            )
            let error = await #expect(throws: BreachPSIError.self) {
                try await BreachPSIChecker(transport: transport, batchSize: 2).breached(
                    Array(Self.corpus.absent.prefix(4))
                )
            }
            #expect(error?.code == .rateLimited)
        }
    }

    /// A server answering the n-th query with `answers[n]` (the last one repeated): a 429 with
    /// that `Retry-After`, or 200 when nil.
    static func withScriptedServer(
        _ answers: [String?],
        queries: ManualSeconds,
        _ body: @escaping @Sendable (String) async throws -> Void
    ) async throws {
        let router = Router()
        router.post("psi/v1/query") { _, _ in
            let index = Int(queries.increment()) - 1
            guard let retryAfter = answers[min(index, answers.count - 1)] else {
                return Response(status: .ok, body: ResponseBody(byteBuffer: ByteBuffer(bytes: [1, 2, 3])))
            }
            var headers = HTTPFields()
            headers[.retryAfter] = retryAfter
            return Response(status: .tooManyRequests, headers: headers)
        }
        try await Application(router: router).test(.live) { client in
            try await body("http://127.0.0.1:\(client.port!)")
        }
    }

    /// The first 429 sets a deadline (60 s on): a wait that would end after it fails at once with
    /// `rateLimited`, also while another request's wait is under way (overlapping waits were not
    /// counted, so one of 86,399 s slipped through), and waits in a row add up.
    @Test(.offCooperativePool) func waitsEndingPastTheDeadlineFailAtOnce() async throws {
        let queries = ManualSeconds()
        let clock = ManualSeconds()
        let slept = ManualSeconds()
        try await Self.withScriptedServer(["1", "86399", nil], queries: queries) { base in
            let transport = HTTPBreachPSITransport(
                base: base,
                sleep: { seconds in
                    slept.value += Double(seconds)
                    // The first request waits until the second one was answered: the waits overlap.
                    for _ in 0..<500 where queries.value < 2 { try await Task.sleep(for: .milliseconds(10)) }
                    clock.value += Double(seconds)
                },
                now: { Date(timeIntervalSince1970: clock.value) }
            )
            async let first = transport.send([0])
            for _ in 0..<500 where queries.value < 1 { try await Task.sleep(for: .milliseconds(10)) }
            let second = await #expect(throws: BreachPSIError.self) { try await transport.send([0]) }
            #expect(second?.code == .rateLimited)
            #expect(try await first == [1, 2, 3])
            #expect(slept.value == 1, "only the 1 s wait was slept")
        }
        // Waits in a row: 40 s fit in the 60 s, 40 s more do not.
        let again = ManualSeconds()
        let waited = ManualSeconds()
        try await Self.withScriptedServer(["40"], queries: again) { base in
            let transport = HTTPBreachPSITransport(
                base: base,
                sleep: { seconds in
                    waited.value += Double(seconds)
                    clock.value += Double(seconds)
                },
                now: { Date(timeIntervalSince1970: clock.value) }
            )
            let error = await #expect(throws: BreachPSIError.self) { try await transport.send([0]) }
            #expect(error?.code == .rateLimited)
            #expect(waited.value == 40)
            #expect(again.value == 2)
        }
    }

    /// Cancelling a check while it waits out a 429 ends it at once with `cancelled` (the wait was
    /// `try? Task.sleep`, which swallowed the cancellation and sent again).
    @Test(.offCooperativePool) func cancellingDuringA429WaitEndsTheCheck() async throws {
        let queries = ManualSeconds()
        try await Self.withScriptedServer(["30"], queries: queries) { base in
            let transport = HTTPBreachPSITransport(base: base)
            let task = Task { try await transport.send([0]) }
            for _ in 0..<500 where queries.value < 1 { try await Task.sleep(for: .milliseconds(10)) }
            try await Task.sleep(for: .milliseconds(100))
            let start = ContinuousClock.now
            task.cancel()
            let result = await task.result
            #expect(ContinuousClock.now - start < .seconds(10), "the wait asked for was 30 s")
            guard case .failure(let error) = result else {
                Issue.record("a cancelled check answered")
                return
            }
            #expect((error as? BreachPSIError)?.code == .cancelled)
            #expect(queries.value == 1)
        }
    }

    /// The table of addresses never grows past its cap (one pass drops full buckets, then the
    /// least recently seen, to three quarters); a client still in it keeps its state. IPv4-mapped
    /// addresses are their IPv4 address, IPv6 ones count by /64.
    @Test func theLimiterTableIsCapped() {
        let clock = ManualSeconds()
        let limiter = BreachPSIRateLimiter(burst: 1, perSecond: 0.001, maximumClients: 8, now: { clock.value })
        for index in 0..<100 {
            clock.value = Double(index)
            #expect(limiter.take(client: "10.0.0.\(index)") == nil)
            #expect(limiter.clientCount <= 8)
        }
        #expect(limiter.take(client: "10.0.0.99") != nil, "the latest client is still limited")
        #expect(BreachPSIRateLimiter.group("::ffff:10.1.2.3") == "10.1.2.3")
        #expect(BreachPSIRateLimiter.group("10.1.2.3") == "10.1.2.3")
        #expect(BreachPSIRateLimiter.group("2001:db8::1") == BreachPSIRateLimiter.group("2001:db8::ffff:2"))
        #expect(BreachPSIRateLimiter.group("2001:db8::1") != BreachPSIRateLimiter.group("2001:db8:0:1::1"))
        let mapped = BreachPSIRateLimiter(burst: 1, perSecond: 0.001, now: { 0 })
        #expect(mapped.take(client: "10.1.2.3") == nil)
        #expect(mapped.take(client: "::ffff:10.1.2.3") != nil)
    }

    /// Only digits of a Retry-After are believed; the server's own value is whole seconds even for
    /// absurd waits.
    @Test func retryAfterIsDigitsOnly() {
        #expect(HTTPBreachPSITransport.retryAfter("3") == 3)
        #expect(HTTPBreachPSITransport.retryAfter("0") == 1)
        #expect(HTTPBreachPSITransport.retryAfter("3; echo") == nil)
        #expect(HTTPBreachPSITransport.retryAfter("-1") == nil)
        #expect(HTTPBreachPSITransport.retryAfter("\u{1b}[2J") == nil)
        // Longer than the parser reads: the longest this client waits, not nothing.
        #expect(HTTPBreachPSITransport.retryAfter("99999999999") == 86_399)
        #expect(BreachPSIHTTPServer.retryAfter(.infinity) == "86400")
        #expect(BreachPSIHTTPServer.retryAfter(.nan) == "86400")
        #expect(BreachPSIHTTPServer.retryAfter(0.2) == "1")
    }

    /// Plain http only to this machine: anyone on the way could publish their own key.
    @Test func plainHTTPOnlyToLoopback() throws {
        for base in ["https://psi.example.org", "http://127.0.0.1:8081", "http://localhost:1", "http://[::1]:2"] {
            #expect(throws: Never.self) { try HTTPBreachPSITransport.check(base: base) }
        }
        for base in [
            "http://psi.example.org", "http://10.0.0.1", "psi.example.org", "ftp://x.org", "http://127.0.0.1.evil.org",
        ] {
            let error = #expect(throws: BreachPSIError.self) { try HTTPBreachPSITransport.check(base: base) }
            #expect(error?.code == .invalidURL, "\(base)")
        }
    }

    /// A large error page: the status is read first (no "too many bytes").
    @Test(.offCooperativePool) func aLargeErrorPageIsItsStatus() async throws {
        let router = Router()
        router.get("/psi/v1/key") { _, _ in
            Response(status: .badGateway, body: .init(byteBuffer: ByteBuffer(repeating: 0x41, count: 100_000)))
        }
        try await Application(router: router).test(.live) { client in
            let base = "http://127.0.0.1:\(client.port!)"
            let error = await #expect(throws: BreachPSIError.self) {
                try await HTTPBreachPSITransport(base: base).publication()
            }
            #expect(error?.code == .serverError)
            #expect(error?.message == "HTTP 502 from \(base)")
        }
    }
}

/// Seconds set by hand, for the rate limiter's clock.
final class ManualSeconds: @unchecked Sendable {
    private let lock = NSLock()
    private var stored = 0.0
    var value: Double {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }

    /// Adds 1 and returns the new value (a counter).
    func increment() -> Double {
        lock.withLock {
            stored += 1
            return stored
        }
    }
}
