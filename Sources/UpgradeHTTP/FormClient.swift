import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import _KeyhavenHTTPSupport

/// Fetches pages and submits forms the way a person's browser would (for `keyhaven demo`, which
/// answers a service's step-up page itself).
public enum FormClient {
    public struct Page: Sendable {
        public var status: Int
        public var body: String
    }

    public static func get(_ url: String) async throws -> Page {
        let response = try await OutboundHTTP.shared.execute(
            HTTPClientRequest(url: url),
            timeout: .seconds(10)
        )
        let body = try await response.body.collect(upTo: 1 << 20)
        return Page(status: Int(response.status.code), body: String(buffer: body))
    }

    public static func post(_ url: String, fields: [String: String]) async throws -> Page {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        var components = URLComponents()
        components.queryItems = fields.sorted { $0.key < $1.key }.map { URLQueryItem(name: $0.key, value: $0.value) }
        request.body = .bytes(ByteBuffer(string: components.percentEncodedQuery ?? ""))
        let response = try await OutboundHTTP.shared.execute(request, timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 1 << 20)
        return Page(status: Int(response.status.code), body: String(buffer: body))
    }

    /// POSTs a JSON object and decodes a JSON object answer (whatever the status).
    public static func postJSON(_ url: String, _ object: [String: String]) async throws -> [String: Any] {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: object)))
        let response = try await OutboundHTTP.shared.execute(request, timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 1 << 20)
        return (try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]) ?? [:]
    }
}
