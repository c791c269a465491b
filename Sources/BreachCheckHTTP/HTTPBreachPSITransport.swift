public import AsyncHTTPClient
public import BreachPSI
import Foundation
public import NIOCore
import NIOHTTP1
public import _KeyhavenHTTPSupport
import _KeyhavenSupport

/// A breach-PSI server over HTTP(S) with AsyncHTTPClient (`BreachPSIHTTPServer`'s endpoints):
/// 10 seconds per request. Only `https://`, or `http://` to this machine (loopback), is spoken to:
/// over plain http anyone on the path could publish their own key. A 429 is waited out (its
/// `Retry-After`, digits only, at least 1 s) and the request sent again, up to ``maximumWait``
/// seconds of waiting in all (concurrent requests waiting at once count once); beyond it the check
/// fails with `rateLimited`. A server that cannot be reached, answers with another HTTP error or
/// publishes something unreadable is a ``BreachPSIError``. The HTTP status is checked before the
/// body is read, and nothing the server writes (bodies, headers) is quoted in messages.
public struct HTTPBreachPSITransport: BreachPSITransport {
    public let base: String
    let client: HTTPClient
    let timeout: TimeAmount
    /// Seconds of 429 waiting this transport accepts in all.
    public let maximumWait: Int
    let sleep: @Sendable (Int) async -> Void
    let budget = WaitBudget()

    /// `sleep`: waits the given seconds (injected in tests; by default `Task.sleep`).
    public init(
        base: String,
        client: HTTPClient = OutboundHTTP.shared,
        timeout: TimeAmount = .seconds(10),
        maximumWait: Int = 60,
        sleep: (@Sendable (Int) async -> Void)? = nil
    ) {
        var base = base
        while base.hasSuffix("/") { base.removeLast() }
        self.base = base
        self.client = client
        self.timeout = timeout
        self.maximumWait = max(maximumWait, 0)
        self.sleep = sleep ?? { seconds in try? await Task.sleep(for: .seconds(seconds)) }
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

    static func isLoopback(_ host: String) -> Bool {
        let host = host.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        if host == "localhost" || host == "::1" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
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

    /// The seconds a `Retry-After` asks for: its value when it is only digits (at most 1 s less
    /// than a day), else nil; at least 1.
    public static func retryAfter(_ value: String?) -> Int? {
        guard let value, !value.isEmpty, value.count <= 5, value.utf8.allSatisfy({ (48...57).contains($0) }),
            let seconds = Int(value)
        else { return nil }
        return min(max(seconds, 1), 86_399)
    }

    func execute(_ request: HTTPClientRequest, limit: Int) async throws(BreachPSIError) -> [UInt8] {
        var request = request
        request.headers.add(name: "User-Agent", value: "Keyhaven")
        var attempts = 0
        while true {
            attempts += 1
            let response: HTTPClientResponse
            do {
                response = try await client.execute(request, timeout: timeout)
            } catch {
                if OutboundFailure(error) == .unreachable {
                    throw BreachPSIError(.unreachable, "cannot reach \(base) (no connection could be made: \(error))")
                }
                throw BreachPSIError(.unreachable, "cannot reach \(base): \(error)")
            }
            if response.status == .tooManyRequests {
                let asked = Self.retryAfter(response.headers.first(name: "Retry-After"))
                let wait = asked ?? 1
                guard attempts < 16, budget.charge(wait, within: maximumWait) else {
                    throw BreachPSIError(
                        .rateLimited,
                        "\(base) limits how often one address may ask (429) and asked to wait \(asked.map { "\($0) s" } ?? "an unstated time") more than the \(maximumWait) s this check waits in all; try again later"
                    )
                }
                await sleep(wait)
                budget.done()
                continue
            }
            guard response.status == .ok else {
                throw BreachPSIError(.serverError, "HTTP \(response.status.code) from \(base)")
            }
            do {
                return Array(buffer: try await response.body.collect(upTo: limit))
            } catch {
                throw BreachPSIError(
                    .malformedResponse,
                    "\(base) sent an answer over \(limit) bytes or broke off while sending it"
                )
            }
        }
    }

    /// The seconds waited on 429s; waits that overlap (a batch's requests told to wait at once)
    /// count once.
    final class WaitBudget: @unchecked Sendable {
        private let lock = NSLock()
        private var waited = 0
        private var waiting = 0

        /// Whether `seconds` more may be waited; records them unless another wait is under way.
        func charge(_ seconds: Int, within maximum: Int) -> Bool {
            lock.withLock {
                if waiting == 0 {
                    guard waited + seconds <= maximum else { return false }
                    waited += seconds
                }
                waiting += 1
                return true
            }
        }

        func done() { lock.withLock { waiting -= 1 } }
    }
}
