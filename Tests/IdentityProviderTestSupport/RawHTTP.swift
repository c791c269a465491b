public import AsyncHTTPClient
import NIOCore
public import NIOHTTP1
import _KeyhavenSupport

/// Requests built by hand, as an attacker's page or script could make a browser send them: cookies,
/// fields and `Origin` exactly as given, and redirects shown instead of followed (a 303 is what a
/// sign-in answers).
public enum RawHTTP {
    public static let client = HTTPClient(
        eventLoopGroup: HTTPClient.defaultEventLoopGroup,
        configuration: .init(redirectConfiguration: .disallow)
    )

    public static func get(
        _ url: String,
        cookie: String? = nil
    ) async throws -> (status: Int, headers: HTTPHeaders, body: String) {
        var request = HTTPClientRequest(url: url)
        if let cookie { request.headers.add(name: "Cookie", value: cookie) }
        let response = try await client.execute(request, timeout: .seconds(30))
        return (
            Int(response.status.code), response.headers, String(buffer: try await response.body.collect(upTo: 1 << 20))
        )
    }

    public static func post(
        _ url: String,
        fields: [(String, String)],
        cookie: String? = nil,
        origin: String? = nil
    ) async throws -> (status: Int, headers: HTTPHeaders, body: String) {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        if let cookie { request.headers.add(name: "Cookie", value: cookie) }
        if let origin { request.headers.add(name: "Origin", value: origin) }
        request.body = .bytes(ByteBuffer(string: FormURLEncoding.encode(fields)))
        let response = try await client.execute(request, timeout: .seconds(30))
        return (
            Int(response.status.code), response.headers, String(buffer: try await response.body.collect(upTo: 1 << 20))
        )
    }
}
