import Foundation
public import HTTPTypes
public import Hummingbird
import NIOCore
public import _KeyhavenSupport

/// A page: ``HTML`` (which escapes what it interpolates) as `text/html; charset=utf-8`. The
/// security headers come from ``SecurityHeadersMiddleware``.
public struct HTMLResponse: ResponseGenerator, Sendable {
    public var page: HTML
    public var status: HTTPResponse.Status
    public var headers: HTTPFields

    public init(_ page: HTML, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) {
        self.page = page
        self.status = status
        self.headers = headers
    }

    public var response: Response {
        var fields = headers
        fields[.contentType] = "text/html; charset=utf-8"
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(string: page.rendered)))
    }

    public func response(from request: Request, context: some RequestContext) -> Response { response }
}

/// JSON in Keyhaven's one style (``WebJSON``) as `application/json`.
public struct JSONResponse: ResponseGenerator, Sendable {
    public var status: HTTPResponse.Status
    public var headers: HTTPFields
    public var body: [UInt8]

    /// - Throws: the encoder's error when `value` cannot be encoded (a float that is not a number).
    public init(_ value: some Encodable, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) throws {
        self.status = status
        self.headers = headers
        body = try WebJSON.encode(value)
    }

    public var response: Response {
        var fields = headers
        fields[.contentType] = "application/json"
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    public func response(from request: Request, context: some RequestContext) -> Response { response }
}

/// The one JSON style of Keyhaven's servers: compact, keys sorted (equal values encode equally),
/// slashes unescaped, dates in ISO 8601 — what the provider, the web app's `/api/…` and shiny
/// answer. A value that writes its own JSON (``JSONObjectWritable``: the provider's token
/// responses) skips the encoder.
public enum WebJSON {
    public static func encode(_ value: some Encodable) throws -> [UInt8] {
        if let writable = value as? any JSONObjectWritable { return writable.jsonBytes }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return Array(try encoder.encode(value))
    }

    /// The style as a request context's `responseEncoder`: what routes returning a
    /// `ResponseEncodable` value (and Hummingbird's `HTTPError` with a message) are encoded with.
    public struct ResponseEncoder: Hummingbird.ResponseEncoder, Sendable {
        public init() {}

        public func encode(
            _ value: some Encodable,
            from request: Request,
            context: some RequestContext
        ) throws
            -> Response
        {
            try JSONResponse(value).response
        }
    }
}

/// The one redirect rule: `303 See Other` to `location`, never cached. After a POST (a form, the
/// provider's sign-in and consent) it is the only status that makes every browser follow with a
/// GET and never resend the form or its password (302 lets a client re-POST; 307 must, and OAuth
/// 2.0 Security BCP, RFC 9700 §4.12, asks for 303 for that reason); after a GET it behaves as 302.
public struct Redirect: ResponseGenerator, Sendable {
    public var location: String
    public var headers: HTTPFields

    public init(to location: String, headers: HTTPFields = [:]) {
        self.location = location
        self.headers = headers
    }

    public var response: Response {
        var fields = headers
        fields[.location] = location
        fields[.cacheControl] = "no-store"
        return Response(status: .seeOther, headers: fields)
    }

    public func response(from request: Request, context: some RequestContext) -> Response { response }
}

extension HTTPFields {
    /// Fields that set `cookies`, one `Set-Cookie` each (Hummingbird's `Cookie` writes them).
    public init(cookies: Cookie...) {
        self.init()
        for cookie in cookies { setCookie(cookie) }
    }

    /// Adds a `Set-Cookie` for `cookie`.
    public mutating func setCookie(_ cookie: Cookie) {
        append(HTTPField(name: .setCookie, value: cookie.description))
    }
}

extension Cookie {
    /// A cookie that ends the one named `name` at `path` (`Max-Age=0`).
    public static func expired(_ name: String, path: String = "/") -> Cookie {
        Cookie(name: name, value: "", maxAge: 0, path: path, httpOnly: true)
    }
}
