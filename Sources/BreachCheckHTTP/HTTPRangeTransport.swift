public import AsyncHTTPClient
public import BreachCheck
import NIOCore
import NIOHTTP1
public import _KeyhavenHTTPSupport

/// The range API over HTTP(S) with AsyncHTTPClient: `GET {base}/range/{prefix}`, `Add-Padding: true`,
/// a User-Agent (the public API requires one), 10-second timeout.
public struct HTTPRangeTransport: RangeTransport {
    public let base: String
    let client: HTTPClient

    public init(base: String, client: HTTPClient = OutboundHTTP.shared) {
        var base = base
        while base.hasSuffix("/") { base.removeLast() }
        self.base = base
        self.client = client
    }

    /// - Throws: ``BreachError`` `offline` when nothing could be sent (the name did not resolve, the
    ///   connection was refused, no route): ``RangeClient`` does not retry that.
    public func fetchRange(prefix: String) async throws -> RangeHTTPResponse {
        var request = HTTPClientRequest(url: "\(base)/range/\(prefix)")
        request.headers.add(name: "Add-Padding", value: "true")
        request.headers.add(name: "User-Agent", value: "Keyhaven")
        let response: HTTPClientResponse
        do {
            response = try await client.execute(request, timeout: .seconds(10))
        } catch {
            guard OutboundFailure(error) == .unreachable else { throw error }
            throw BreachError(.offline, "no connection could be made to \(base): \(error)")
        }
        let body = try await response.body.collect(upTo: 8 << 20)
        let retryAfter = response.headers.first(name: "Retry-After").flatMap(Double.init)
        return RangeHTTPResponse(status: Int(response.status.code), body: Array(buffer: body), retryAfter: retryAfter)
    }
}
