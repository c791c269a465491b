import BreachCheck
import BreachCheckHTTP
import BreachPSI
import Foundation
import KeyhavenTesting
import NIOCore
import Testing

/// A server that sends the head of its answer and then stalls the body: the breach clients fail
/// with their own typed errors by their deadline (1 s here; alone they end at 1 s, beside the other
/// suites on 2 loaded cores they took up to 7 s: the bound is the deadline plus 10 s), and never hang
/// (the time limit makes a regression fail); a server that trickles its body is cut off too, and the
/// connection is closed.
@Suite(.timeLimit(.minutes(1)))
struct StalledAnswerTests {
    @Test(arguments: [StallingHTTPServer.Stall.silent, .trickle])
    func thePSITransportIsUnreachableByItsDeadline(_ stall: StallingHTTPServer.Stall) async throws {
        let server = try StallingHTTPServer(stall: stall)
        defer { server.close() }
        let transport = HTTPBreachPSITransport(base: server.url, timeout: .seconds(1))
        var start = ContinuousClock.now
        let key = try await #require(throws: BreachPSIError.self) { try await transport.publication() }
        #expect(key.code == .unreachable)
        #expect(ContinuousClock.now - start < .seconds(11))
        start = ContinuousClock.now
        let query = try await #require(throws: BreachPSIError.self) { try await transport.send([1, 2, 3]) }
        #expect(query.code == .unreachable)
        #expect(ContinuousClock.now - start < .seconds(11))
        #expect(server.stalledPaths == ["/psi/v1/key", "/psi/v1/query"])
        #expect(await server.clientClosed(count: 2, within: .seconds(10)))
    }

    /// A server that takes the connection and never answers (no headers) is offline by the deadline
    /// too, not retried: the same as a body that stalls (review S4 finding 10).
    @Test func theRangeClientDoesNotRetryAServerThatNeverAnswers() async throws {
        let (listener, port) = try LoopbackPort.bound()
        defer { _ = close(listener) }
        // Listening, never accepting: connections complete in the backlog and get no answer.
        #expect(listen(listener, 8) == 0)
        let client = RangeClient(transport: HTTPRangeTransport(base: "http://127.0.0.1:\(port)", timeout: .seconds(1)))
        let error = try await #require(throws: BreachError.self) {
            try await client.count(for: SHA1Digest(password: "password"))
        }
        #expect(error.code == .offline)
        #expect(error.message.contains("did not answer in time"), "\(error.message)")
    }

    /// The range client does not retry a stalled server (the person would wait three deadlines).
    @Test(arguments: [StallingHTTPServer.Stall.silent, .trickle])
    func theRangeClientIsOfflineByItsDeadline(_ stall: StallingHTTPServer.Stall) async throws {
        let server = try StallingHTTPServer(stall: stall)
        defer { server.close() }
        let client = RangeClient(transport: HTTPRangeTransport(base: server.url, timeout: .seconds(1)))
        let start = ContinuousClock.now
        let error = try await #require(throws: BreachError.self) {
            try await client.count(for: SHA1Digest(password: "password"))
        }
        #expect(error.code == .offline)
        #expect(error.message.contains("in time"))
        #expect(ContinuousClock.now - start < .seconds(11))
        #expect(server.stalledPaths == ["/range/5BAA6"])
        #expect(await server.clientClosed(within: .seconds(10)))
    }
}
