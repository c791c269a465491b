import Foundation
public import HTTPTypes
public import Hummingbird
import NIOCore
import _KeyhavenSupport

/// The one way Keyhaven's servers read a browser form or a query, and it is strict: only
/// `application/x-www-form-urlencoded`, at most ``maximumSize`` bytes, and **a field given twice
/// is refused** — never "the first one wins" (which lets a page or a proxy that adds a field
/// decide which copy counts) and never a bad body read as an empty form. OAuth says the same of
/// its parameters (RFC 6749 §3.1: "MUST NOT be included more than once").
///
/// A caller that knows its form's fields names them (`only:`), and then a field it does not know is
/// refused too (a page's button forms carry their CSRF token and nothing else).
///
/// Two shapes, one rule:
/// - ``fields(of:limit:only:)`` and ``query(of:)``: every field, as a dictionary (the provider's
///   OAuth endpoints carry parameters of any name, which it must ignore rather than refuse);
/// - ``decode(_:from:limit:)``: a `Decodable` form through Hummingbird's
///   `URLEncodedFormDecoder` (which refuses a repeated field too).
public enum WebForm {
    /// 64 KiB: more than any of the pages' forms (file uploads are multipart and read elsewhere).
    public static let maximumSize = 64 << 10

    /// The fields of the request's form body; with `allowed`, only those names may appear.
    /// - Throws: ``WebFormError`` `.notForm` (another content type), `.tooLarge`, `.duplicateField`,
    ///   `.unknownField` (a name not in `allowed`).
    public static func fields(
        of request: Request,
        limit: Int = maximumSize,
        only allowed: Set<String>? = nil
    ) async throws(WebFormError)
        -> [String: String]
    {
        try fields(in: try await body(of: request, limit: limit), only: allowed)
    }

    /// The fields of the request's query (`+` is a space, as a form encodes it).
    /// - Throws: ``WebFormError`` `.duplicateField`.
    public static func query(of request: Request) throws(WebFormError) -> [String: String] {
        try fields(in: request.uri.query ?? "")
    }

    /// The request's form body decoded as `T` (Hummingbird's `URLEncodedFormDecoder`).
    /// - Throws: ``WebFormError`` `.notForm`, `.tooLarge`, `.duplicateField`, or `.unreadable` when
    ///   the fields do not make a `T` (a field missing or of the wrong type).
    public static func decode<T: Decodable>(
        _ type: T.Type,
        from request: Request,
        limit: Int = maximumSize
    ) async throws(WebFormError) -> T {
        let text = try await body(of: request, limit: limit)
        do {
            return try URLEncodedFormDecoder().decode(T.self, from: text)
        } catch let error as URLEncodedFormError where error.code == .duplicateKeys {
            throw WebFormError(.duplicateField)
        } catch {
            throw WebFormError(.unreadable)
        }
    }

    /// `text`'s fields; refused when one is given twice, or (with `allowed`) is not one of those.
    public static func fields(
        in text: String,
        only allowed: Set<String>? = nil
    ) throws(WebFormError) -> [String: String] {
        guard let fields = FormURLEncoding.uniqueFields(text) else {
            throw WebFormError(.duplicateField)
        }
        if let allowed, fields.keys.contains(where: { !allowed.contains($0) }) {
            throw WebFormError(.unknownField)
        }
        return fields
    }

    static func body(of request: Request, limit: Int) async throws(WebFormError) -> String {
        let mediaType = request.headers[.contentType]?.split(separator: ";").first
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        guard mediaType == "application/x-www-form-urlencoded" else {
            throw WebFormError(.notForm)
        }
        do {
            return String(buffer: try await request.body.collect(upTo: limit))
        } catch is NIOTooManyBytesError {
            throw WebFormError(.tooLarge)
        } catch {
            throw WebFormError(.unreadable)
        }
    }
}

/// Why a form or query was refused. It renders itself (400, 413 or 415 with its message as plain
/// text) when a route lets it through; the apps usually answer in their own words instead.
public struct WebFormError: HTTPResponseError, Sendable, CustomStringConvertible {
    /// What was wrong (an internal target's error: a plain enum; the apps turn it into their own).
    public enum Code: String, Sendable {
        /// Another content type than `application/x-www-form-urlencoded`.
        case notForm
        /// Larger than the route accepts.
        case tooLarge
        /// A field given more than once.
        case duplicateField
        /// A field the caller did not name (``WebForm/fields(of:limit:only:)``).
        case unknownField
        /// The body could not be read, or (``WebForm/decode(_:from:limit:)``) does not make the type.
        case unreadable
    }

    public let code: Code

    public init(_ code: Code) {
        self.code = code
    }

    /// What to tell the sender (it quotes nothing the request carried).
    public var message: String {
        switch code {
        case .notForm: "The body must be application/x-www-form-urlencoded."
        case .tooLarge: "The form is too large."
        case .duplicateField: "A field was given more than once."
        case .unknownField: "The form has a field this page does not send."
        case .unreadable: "The form could not be read, or a field is missing or not valid."
        }
    }

    public var description: String { message }

    public var status: HTTPResponse.Status {
        switch code {
        case .notForm: .unsupportedMediaType
        case .tooLarge: .contentTooLarge
        default: .badRequest
        }
    }

    public func response(from request: Request, context: some RequestContext) -> Response {
        Response(
            status: status,
            headers: [.contentType: "text/plain; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(string: message))
        )
    }
}
