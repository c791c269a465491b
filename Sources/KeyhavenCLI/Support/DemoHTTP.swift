import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import _KeyhavenHTTPSupport
import _KeyhavenSupport

/// The demo's HTTP calls to the example service: pages and forms the way a person's browser sends
/// them (shiny's step-up page), and its JSON API. Only `keyhaven demo` uses it.
enum DemoHTTP {
    struct Reply: Sendable {
        var status: Int
        var body: [UInt8]
        /// The `name=value` of each cookie the answer sets.
        var cookies: [String] = []

        /// The page's CSRF token (its hidden `csrf` field).
        var csrfToken: String? {
            text.firstMatch(of: #/name="csrf" value="([0-9a-f]+)"/#).map { String($0.output.1) }
        }

        var text: String { String(decoding: body, as: UTF8.self) }
        var succeeded: Bool { (200..<300).contains(status) }

        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            try JSONDecoder().decode(type, from: Data(body))
        }
    }

    /// A GET, as a browser opens a page.
    static func get(_ url: String) async throws -> Reply {
        try await send(HTTPClientRequest(url: url))
    }

    /// A form POST (`application/x-www-form-urlencoded`), as a browser submits one.
    static func post(_ url: String, form fields: [(String, String)], cookies: [String] = []) async throws -> Reply {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        if !cookies.isEmpty { request.headers.add(name: "Cookie", value: cookies.joined(separator: "; ")) }
        request.body = .bytes(ByteBuffer(string: FormURLEncoding.encode(fields)))
        return try await send(request)
    }

    /// A JSON POST, as an app calls a service's API.
    static func post(_ url: String, json: some Encodable) async throws -> Reply {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "Accept", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: try JSONEncoder().encode(json)))
        return try await send(request)
    }

    static func send(_ request: HTTPClientRequest) async throws -> Reply {
        let deadline = NIODeadline.now() + .seconds(10)
        let response = try await OutboundHTTP.shared.execute(request, deadline: deadline)
        let body = try await response.body.collect(upTo: 1 << 20, deadline: deadline)
        let cookies = response.headers["Set-Cookie"].compactMap { $0.split(separator: ";").first.map(String.init) }
        return Reply(status: Int(response.status.code), body: Array(body.readableBytesView), cookies: cookies)
    }
}
