import AsyncHTTPClient
import KeyhavenTesting
import NIOCore
import NIOHTTP1
import Testing
import _KeyhavenHTTPSupport

/// Reading an answer's body ends by the request's deadline: a server that sends its headers and
/// then stalls (or trickles a byte at a time) cannot hold a caller for ever, and the connection is
/// let go. The time limit makes a regression fail rather than hang.
@Suite(.timeLimit(.minutes(1)))
struct OutboundBodyTests {
    @Test(arguments: [StallingHTTPServer.Stall.silent, .trickle])
    func aBodyThatStallsAfterTheHeadersEndsByTheDeadline(_ stall: StallingHTTPServer.Stall) async throws {
        let server = try StallingHTTPServer(stall: stall)
        defer { server.close() }
        let start = ContinuousClock.now
        let deadline = NIODeadline.now() + .seconds(1)
        let response = try await OutboundHTTP.shared.execute(
            HTTPClientRequest(url: server.url + "/x"),
            deadline: deadline
        )
        // The request's own deadline is over once the head is in: the body is what stalls.
        #expect(response.status == .ok)
        let error = await #expect(throws: (any Error).self) {
            _ = try await response.body.collect(upTo: 1 << 20, deadline: deadline)
        }
        #expect(error.map { OutboundFailure($0) } == .timedOut)
        // Alone it ends at 1 s; beside the other suites on 2 loaded cores it took up to 7 s.
        #expect(ContinuousClock.now - start < .seconds(11))
        #expect(server.stalledPaths == ["/x"])
        // The client closed the stalled connection (the server read end-of-file).
        #expect(await server.clientClosed(within: .seconds(10)))
    }

    @Test func aWholeBodyIsReadAsBefore() async throws {
        let server = try StallingHTTPServer { path in path == "/ok" ? ("200 OK", "{\"fine\":true}") : nil }
        defer { server.close() }
        let deadline = NIODeadline.now() + .seconds(10)
        let response = try await OutboundHTTP.shared.execute(
            HTTPClientRequest(url: server.url + "/ok"),
            deadline: deadline
        )
        let body = try await response.body.collect(upTo: 1 << 20, deadline: deadline)
        #expect(String(buffer: body) == "{\"fine\":true}")
        #expect(server.stalledPaths.isEmpty)
    }

    @Test func cancellingTheTaskEndsTheRead() async throws {
        let server = try StallingHTTPServer()
        defer { server.close() }
        let start = ContinuousClock.now
        let reading = Task {
            let deadline = NIODeadline.now() + .seconds(60)
            let response = try await OutboundHTTP.shared.execute(HTTPClientRequest(url: server.url), deadline: deadline)
            return try await response.body.collect(upTo: 1 << 20, deadline: deadline)
        }
        try await Task.sleep(for: .milliseconds(300))
        reading.cancel()
        await #expect(throws: (any Error).self) { try await reading.value }
        #expect(ContinuousClock.now - start < .seconds(10))
    }

    /// `Retry-After` is believed only as whole seconds (RFC 9110's delay-seconds); a date, a sign,
    /// a fraction, spaces or text are not read at all.
    @Test(arguments: [
        ("3", 3), ("0", 0), ("120", 120), ("86400", 86_400), ("999999999", 999_999_999),
        // Longer than the parser reads: the ceiling, which each caller clamps to its maximum.
        ("1234567890", OutboundHTTP.retryAfterCeiling), (String(repeating: "9", count: 40), 999_999_999),
    ])
    func retryAfterReadsWholeSeconds(_ value: String, _ seconds: Int) {
        #expect(OutboundHTTP.retryAfter(value) == seconds)
    }

    @Test(arguments: [
        "", " 3", "3 ", "+3", "-1", "3.5", "1e3", "inf", "nan", "3; echo", "\u{1b}[2J",
        "Wed, 21 Oct 2015 07:28:00 GMT", "\u{0663}",
    ])
    func retryAfterRefusesAnythingElse(_ value: String) {
        #expect(OutboundHTTP.retryAfter(value) == nil)
    }
}
