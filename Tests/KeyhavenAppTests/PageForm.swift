import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import _KeyhavenHTTPSupport
import _KeyhavenSupport

/// Submits a service's page form the way a person's browser does (shiny's step-up page).
enum PageForm {
    /// POSTs `fields` form-encoded to `url`; returns the status.
    @discardableResult
    static func submit(_ url: String, _ fields: [(String, String)]) async throws -> UInt {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.body = .bytes(ByteBuffer(string: FormURLEncoding.encode(fields)))
        let response = try await OutboundHTTP.shared.execute(request, timeout: .seconds(10))
        _ = try await response.body.collect(upTo: 1 << 20)
        return response.status.code
    }
}
