import BreachCheck
import Foundation
import Testing

/// The range client against scripted transports: padding, caching, retries, failures.
struct RangeClientTests {
    /// Answers from a closure and records what was asked.
    final class ScriptedTransport: RangeTransport, @unchecked Sendable {
        // Guarded by `lock`.
        private var calls: [String] = []
        private let lock = NSLock()
        let answer: @Sendable (String, Int) throws -> RangeHTTPResponse

        init(answer: @escaping @Sendable (String, Int) throws -> RangeHTTPResponse) {
            self.answer = answer
        }

        var requested: [String] { lock.withLock { calls } }

        func fetchRange(prefix: String) async throws -> RangeHTTPResponse {
            let attempt = lock.withLock {
                calls.append(prefix)
                return calls.filter { $0 == prefix }.count
            }
            return try answer(prefix, attempt)
        }
    }

    static let breached = SHA1Digest(password: "password")

    static func body(for prefix: String) -> [UInt8] {
        // A real row, padding (count 0), lower-case and LF/CRLF mixed.
        var lines = ["0018A45C4D1DEF81644B54AB7F969B88D65:1", "00D4F6E8FA6EECAD2A3AA415EEC418D38EC:0"]
        if prefix == breached.prefix {
            lines.append("\(breached.suffix.lowercased()):52256179")
        }
        return Array(lines.joined(separator: "\r\n").appending("\n").utf8)
    }

    @Test func onlyPrefixesLeaveTheMachineAndPaddingIsDropped() async throws {
        let transport = ScriptedTransport { prefix, _ in RangeHTTPResponse(status: 200, body: Self.body(for: prefix)) }
        let client = RangeClient(transport: transport)
        let other = SHA1Digest(password: "not in this test corpus 7")
        let counts = try await client.counts(for: [Self.breached, other, Self.breached])
        #expect(counts == [52_256_179, 0, 52_256_179])
        #expect(transport.requested.allSatisfy { $0.count == 5 })
        #expect(Set(transport.requested) == [Self.breached.prefix, other.prefix])
        // Cached for the rest of the run.
        _ = try await client.count(for: Self.breached)
        #expect(transport.requested.count == 2)
    }

    @Test func retriesRateLimitsAndServerErrorsWithBackoff() async throws {
        let transport = ScriptedTransport { prefix, attempt in
            switch attempt {
            case 1: return RangeHTTPResponse(status: 429, body: [], retryAfter: 2)
            case 2: return RangeHTTPResponse(status: 503, body: [])
            default: return RangeHTTPResponse(status: 200, body: Self.body(for: prefix))
            }
        }
        let delays = Delays()
        let client = RangeClient(transport: transport, baseDelay: 0.25) { await delays.add($0) }
        #expect(try await client.count(for: Self.breached) == 52_256_179)
        #expect(await delays.values == [2, 0.5])  // Retry-After, then backoff 0.25 · 2
    }

    /// Review Low #13: `Retry-After: inf` crashed the client and `100000` hung it. Hostile values
    /// fall back to the backoff or are capped at a minute.
    @Test(arguments: [
        (Double.infinity, 0.25), (-Double.infinity, 0.25), (Double.nan, 0.25), (-5, 0.25), (100_000, 60),
    ])
    func hostileRetryAfterIsBounded(_ retryAfter: Double, _ expected: Double) async throws {
        let transport = ScriptedTransport { prefix, attempt in
            attempt == 1
                ? RangeHTTPResponse(status: 429, body: [], retryAfter: retryAfter)
                : RangeHTTPResponse(status: 200, body: Self.body(for: prefix))
        }
        let delays = Delays()
        let client = RangeClient(transport: transport, baseDelay: 0.25) { await delays.add($0) }
        #expect(try await client.count(for: Self.breached) == 52_256_179)
        #expect(await delays.values == [expected])
    }

    actor Delays {
        var values: [Double] = []
        func add(_ value: Double) { values.append(value) }
    }

    @Test func offlineIsAClearError() async throws {
        struct Refused: Error {}
        let transport = ScriptedTransport { _, _ in throw Refused() }
        let client = RangeClient(transport: transport, baseDescription: "http://127.0.0.1:9", maxAttempts: 5) { _ in }
        await #expect {
            try await client.count(for: Self.breached)
        } throws: { error in
            let error = error as! BreachError
            return error.code == .offline && error.message.contains("http://127.0.0.1:9")
        }
        #expect(transport.requested.count == 3)
    }

    /// A transport that knows nothing was sent (no name, no route, refused) is not retried: with
    /// no network, the audit's breach check gives up at once instead of after its backoff.
    @Test func nothingSentIsNotRetried() async throws {
        let transport = ScriptedTransport { _, _ in throw BreachError(.offline, "no connection could be made") }
        let client = RangeClient(transport: transport, baseDescription: "http://127.0.0.1:9", maxAttempts: 5) { _ in
            Issue.record("waited to retry")
        }
        await #expect {
            try await client.count(for: Self.breached)
        } throws: { error in
            let error = error as! BreachError
            return error.code == .offline && error.message.contains("http://127.0.0.1:9")
                && error.message.contains("no connection could be made")
        }
        #expect(transport.requested.count == 1)
    }

    @Test func persistentFailuresAndClientErrorsAreReported() async throws {
        let failing = RangeClient(
            transport: ScriptedTransport { _, _ in RangeHTTPResponse(status: 500, body: []) },
            maxAttempts: 2
        ) { _ in }
        await #expect(throws: BreachError(.badResponse, "")) { try await failing.count(for: Self.breached) }
        let refused = RangeClient(transport: ScriptedTransport { _, _ in RangeHTTPResponse(status: 400, body: []) })
        await #expect(throws: BreachError(.badResponse, "")) { try await refused.count(for: Self.breached) }
    }

    @Test func concurrencyIsBounded() async throws {
        let inFlight = Gauge()
        final class Slow: RangeTransport {
            let gauge: Gauge
            init(_ gauge: Gauge) { self.gauge = gauge }
            func fetchRange(prefix: String) async throws -> RangeHTTPResponse {
                await gauge.enter()
                try await Task.sleep(for: .milliseconds(5))
                await gauge.leave()
                return RangeHTTPResponse(status: 200, body: [])
            }
        }
        let client = RangeClient(transport: Slow(inFlight), maxConcurrency: 4)
        let digests = (0..<64).map { SHA1Digest(password: "many-\($0)") }
        _ = try await client.counts(for: digests)
        #expect(await inFlight.maximum <= 4)
        #expect(await inFlight.maximum >= 2)
    }

    actor Gauge {
        var current = 0
        var maximum = 0
        func enter() {
            current += 1
            maximum = max(maximum, current)
        }
        func leave() { current -= 1 }
    }

    @Test func rangeBodiesParseAndFormat() {
        let parsed = RangeBody.parse(
            Array("ABC\r\n\(String(repeating: "a", count: 35)):3\n\(String(repeating: "B", count: 35)):0\r\n".utf8)
        )
        #expect(parsed == [String(repeating: "A", count: 35): 3])
        let body = RangeBody.format([("A", 1), ("B", 2)])
        #expect(String(decoding: body, as: UTF8.self) == "A:1\r\nB:2")
        #expect(RangeBody.prefixValue("21bd1") == 0x21BD1)
        #expect(RangeBody.prefixValue("21BD") == nil)
        #expect(RangeBody.prefixValue("21BDZ") == nil)
    }
}
