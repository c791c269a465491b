public import AsyncHTTPClient
public import BreachPSI
public import Foundation
public import NIOCore
import NIOHTTP1
public import _KeyhavenHTTPSupport
import _KeyhavenSupport

/// A breach-PSI server over HTTP(S) with AsyncHTTPClient (`BreachPSIHTTPServer`'s endpoints):
/// 10 seconds per request, the reading of its answer included (a server that stalls after its
/// headers is `unreachable` then). Only `https://`, or `http://` to this machine (loopback), is spoken to:
/// over plain http anyone on the path could publish their own key. A 429 is waited out (its
/// `Retry-After`, digits only, at least 1 s) and the request sent again, within ``maximumWait``
/// seconds of the first 429: that one sets a deadline for the transport, and any wait that would
/// end after it (concurrent requests' included) fails at once with `rateLimited`. Cancelling the
/// task ends a wait with `cancelled`. A server that cannot be reached, answers with another HTTP error or
/// publishes something unreadable is a ``BreachPSIError``. The HTTP status is checked before the
/// body is read, and nothing the server writes (bodies, headers) is quoted in messages.
public struct HTTPBreachPSITransport: BreachPSITransport {
    public let base: String
    let client: HTTPClient
    let timeout: TimeAmount
    /// Seconds of 429 waiting this transport accepts in all.
    public let maximumWait: Int
    let sleep: @Sendable (Int) async throws -> Void
    let now: @Sendable () -> Date
    let budget = WaitBudget()

    /// `sleep`: waits the given seconds (injected in tests; by default `Task.sleep`, which throws
    /// when the task is cancelled); `now`: the clock the waiting deadline is kept by.
    public init(
        base: String,
        client: HTTPClient = OutboundHTTP.shared,
        timeout: TimeAmount = .seconds(10),
        maximumWait: Int = 60,
        sleep: (@Sendable (Int) async throws -> Void)? = nil,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        var base = base
        while base.hasSuffix("/") { base.removeLast() }
        self.base = base
        self.client = client
        self.timeout = timeout
        self.maximumWait = max(maximumWait, 0)
        self.sleep = sleep ?? { seconds in try await Task.sleep(for: .seconds(seconds)) }
        self.now = now
    }

    public var serverDescription: String { base }

    /// Checks that `base` may be spoken to: `https://HOST…`, or `http://` to a loopback host
    /// (`localhost`, `127.x.x.x`, `::1`). The error says what to give instead.
    public static func check(base: String) throws(BreachPSIError) {
        guard let components = URLComponents(string: base), let scheme = components.scheme?.lowercased(),
            let host = components.host, !host.isEmpty
        else {
            throw BreachPSIError(
                .invalidURL,
                "\(base) is not a URL with a scheme and a host; give https://HOST[:PORT] (or http://127.0.0.1:PORT for a server on this machine)"
            )
        }
        switch scheme {
        case "https":
            return
        case "http" where isLoopback(host):
            return
        case "http":
            throw BreachPSIError(
                .invalidURL,
                "\(base) is plain http to another machine: anyone on the way could publish their own key and answer \"not breached\" to everything; use https:// (http is only accepted for localhost, 127.0.0.1 and ::1)"
            )
        default:
            throw BreachPSIError(.invalidURL, "\(base): the scheme must be https (or http to this machine)")
        }
    }

    /// ``_KeyhavenSupport/ServiceOrigin/isLoopback`` (`localhost`, `127.0.0.0/8`, `::1`), but not
    /// `*.localhost`, which a resolver may send to the network.
    static func isLoopback(_ host: String) -> Bool {
        guard let origin = ServiceOrigin(scheme: .http, host: host) else { return false }
        return origin.isLoopback && !origin.host.hasSuffix(".localhost")
    }

    struct Publication: Decodable {
        var version: Int
        var buckets: Int
        var entryLength: Int
        var publicKey: String
    }

    public func publication() async throws(BreachPSIError) -> BreachPSIPublication {
        try Self.check(base: base)
        let body = try await execute(HTTPClientRequest(url: "\(base)/psi/v1/key"), limit: 4096)
        guard let decoded = try? JSONDecoder().decode(Publication.self, from: Data(body)),
            let key = Hex.decode(decoded.publicKey)
        else {
            throw BreachPSIError(.malformedResponse, "\(base)/psi/v1/key is not a breach-PSI server's published key")
        }
        return BreachPSIPublication(
            version: decoded.version,
            bucketCount: decoded.buckets,
            entryLength: decoded.entryLength,
            publicKey: try BreachPSIPublicKey(representation: key)
        )
    }

    public func send(_ request: [UInt8]) async throws(BreachPSIError) -> [UInt8] {
        var http = HTTPClientRequest(url: "\(base)/psi/v1/query")
        http.method = .POST
        http.headers.add(name: "Content-Type", value: "application/octet-stream")
        http.body = .bytes(ByteBuffer(bytes: request))
        return try await execute(
            http,
            limit: PSIResponse.headerLength + BreachPSI.maximumBucketEntries * BreachPSI.entryLength + 1
        )
    }

    /// The seconds a `Retry-After` asks for (``_KeyhavenHTTPSupport/OutboundHTTP/retryAfter(_:)``:
    /// digits only), at least 1 and at most 1 s less than a day; else nil.
    public static func retryAfter(_ value: String?) -> Int? {
        OutboundHTTP.retryAfter(value).map { min(max($0, 1), 86_399) }
    }

    func execute(_ request: HTTPClientRequest, limit: Int) async throws(BreachPSIError) -> [UInt8] {
        var request = request
        request.headers.add(name: "User-Agent", value: "Keyhaven")
        var attempts = 0
        while true {
            attempts += 1
            let response: HTTPClientResponse
            // One deadline for the request and the reading of its answer.
            let deadline = NIODeadline.now() + timeout
            do {
                response = try await client.execute(request, deadline: deadline)
            } catch {
                if OutboundFailure(error) == .unreachable {
                    throw BreachPSIError(.unreachable, "cannot reach \(base) (no connection could be made: \(error))")
                }
                throw BreachPSIError(.unreachable, "cannot reach \(base): \(error)")
            }
            if response.status == .tooManyRequests {
                let asked = Self.retryAfter(response.headers.first(name: "Retry-After"))
                let wait = asked ?? 1
                let start = now()
                let deadline = budget.deadline(startingAt: start, maximumWait: maximumWait)
                guard attempts < 16, start.addingTimeInterval(TimeInterval(wait)) <= deadline else {
                    throw BreachPSIError(
                        .rateLimited,
                        "\(base) limits how often one address may ask (429) and asked to wait \(asked.map { "\($0) s" } ?? "an unstated time"), past the \(maximumWait) s this check waits in all; try again later"
                    )
                }
                do {
                    try await sleep(wait)
                    try Task.checkCancellation()
                } catch {
                    throw BreachPSIError(.cancelled, "the breach check was cancelled while \(base) asked it to wait")
                }
                continue
            }
            guard response.status == .ok else {
                throw BreachPSIError(.serverError, "HTTP \(response.status.code) from \(base)")
            }
            do {
                return Array(buffer: try await response.body.collect(upTo: limit, deadline: deadline))
            } catch {
                switch OutboundFailure(error) {
                case .timedOut:
                    throw BreachPSIError(
                        .unreachable,
                        "\(base) sent the head of its answer but not the rest within \(timeout.nanoseconds / 1_000_000_000) s; try again later"
                    )
                case .cancelled:
                    throw BreachPSIError(.cancelled, "the breach check was cancelled while \(base) was answering")
                case .unreachable, .other: break
                }
                throw BreachPSIError(
                    .malformedResponse,
                    "\(base) sent an answer over \(limit) bytes or broke off while sending it"
                )
            }
        }
    }

    /// When 429 waiting must be over: `maximumWait` after the first 429 this transport got.
    final class WaitBudget: @unchecked Sendable {
        private let lock = NSLock()
        private var end: Date?

        /// The deadline, set now (from `start`) if no 429 came before.
        func deadline(startingAt start: Date, maximumWait: Int) -> Date {
            lock.withLock {
                if let end { return end }
                let new = start.addingTimeInterval(TimeInterval(maximumWait))
                end = new
                return new
            }
        }
    }
}
