import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import _KeyhavenHTTPSupport
import _KeyhavenSupport

/// Submits a service's page form the way a person's browser does (shiny's step-up page): opens the
/// page, then posts the form with the page's CSRF token and the cookie that goes with it.
enum PageForm {
    /// Opens `page` (default: `url`), then POSTs `fields` form-encoded to `url`; returns the status.
    @discardableResult
    static func submit(_ url: String, _ fields: [(String, String)], page: String? = nil) async throws -> UInt {
        let opened = try await OutboundHTTP.shared.execute(HTTPClientRequest(url: page ?? url), timeout: .seconds(10))
        let html = String(buffer: try await opened.body.collect(upTo: 1 << 20))
        let cookies = opened.headers["Set-Cookie"].compactMap { $0.split(separator: ";").first.map(String.init) }
        let token = html.firstMatch(of: #/name="csrf" value="([0-9a-f]+)"/#).map { String($0.output.1) } ?? ""
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        if !cookies.isEmpty { request.headers.add(name: "Cookie", value: cookies.joined(separator: "; ")) }
        request.body = .bytes(ByteBuffer(string: FormURLEncoding.encode(fields + [("csrf", token)])))
        let response = try await OutboundHTTP.shared.execute(request, timeout: .seconds(10))
        _ = try await response.body.collect(upTo: 1 << 20)
        return response.status.code
    }
}
