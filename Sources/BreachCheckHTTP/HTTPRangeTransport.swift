public import AsyncHTTPClient
public import BreachCheck
import NIOCore
import NIOHTTP1
public import _KeyhavenHTTPSupport

/// The range API over HTTP(S) with AsyncHTTPClient: `GET {base}/range/{prefix}`, `Add-Padding: true`,
/// a User-Agent (the public API requires one), 10 seconds per request, the reading of its answer
/// included.
public struct HTTPRangeTransport: RangeTransport {
    public let base: String
    let client: HTTPClient
    let timeout: Duration

    public init(base: String, client: HTTPClient = OutboundHTTP.shared, timeout: Duration = .seconds(10)) {
        var base = base
        while base.hasSuffix("/") { base.removeLast() }
        self.base = base
        self.client = client
        self.timeout = timeout
    }

    /// - Throws: ``BreachError`` `offline` when nothing could be sent (the name did not resolve, the
    ///   connection was refused, no route) or when the answer did not arrive whole within the timeout
    ///   (a server that sends no headers, or stalls after them): ``RangeClient`` does not retry that.
    ///   A `Retry-After` is believed only as whole seconds (``_KeyhavenHTTPSupport/OutboundHTTP/retryAfter(_:)``).
    public func fetchRange(prefix: String) async throws -> RangeHTTPResponse {
        var request = HTTPClientRequest(url: "\(base)/range/\(prefix)")
        request.headers.add(name: "Add-Padding", value: "true")
        request.headers.add(name: "User-Agent", value: "Keyhaven")
        let deadline = NIODeadline.now() + TimeAmount(timeout)
        let response: HTTPClientResponse
        do {
            response = try await client.execute(request, deadline: deadline)
        } catch {
            switch OutboundFailure(error) {
            case .unreachable: throw BreachError(.offline, "no connection could be made to \(base): \(error)")
            case .timedOut:
                // As for a body that stalls: a retry would only wait another deadline.
                throw BreachError(.offline, "\(base) did not answer in time (\(timeout)); try again later")
            case .cancelled, .other: throw error
            }
        }
        let body: ByteBuffer
        do {
            body = try await response.body.collect(upTo: 8 << 20, deadline: deadline)
        } catch {
            guard OutboundFailure(error) == .timedOut else { throw error }
            throw BreachError(
                .offline,
                "\(base) sent the head of its answer but not the rest in time (\(timeout)); try again later"
            )
        }
        let retryAfter = OutboundHTTP.retryAfter(response.headers.first(name: "Retry-After")).map(Double.init)
        return RangeHTTPResponse(status: Int(response.status.code), body: Array(buffer: body), retryAfter: retryAfter)
    }
}
