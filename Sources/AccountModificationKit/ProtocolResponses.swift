public import AccountModification
import Foundation
public import HTTPTypes
public import Hummingbird

/// A message of the account-modification protocol as a route's answer: JSON with the Swift property
/// names (docs/openapi/account-modification.yaml), written by the protocol's own encoder whatever
/// the encoder of the router's context (a service may configure that one for its own routes).
public protocol ProtocolResponseEncodable: ResponseEncodable {}

extension ProtocolResponseEncodable {
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        try protocolEncoder.encode(self, from: request, context: context)
    }
}

/// Sorted keys and unescaped slashes, so the bytes of an answer are stable.
let protocolEncoder: JSONEncoder = {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    return encoder
}()

extension ModificationResponse: ProtocolResponseEncodable {}
extension AccountModificationManifest: ProtocolResponseEncodable {}
extension InAppResult: ProtocolResponseEncodable {}

/// A malformed call, thrown from a route: it renders itself as the protocol's 4xx answer, the
/// status and a ``ProtocolErrorBody`` (`{"error": …, "message": …}`).
public struct ProtocolErrorResponse: HTTPResponseError, Sendable {
    public var status: HTTPResponse.Status
    public var body: ProtocolErrorBody

    public init(_ status: HTTPResponse.Status, error: String, message: String) {
        self.status = status
        self.body = ProtocolErrorBody(error: error, message: message)
    }

    /// 400 `invalid_request`: the body is not the operation's request, or breaks a limit.
    public static func invalidRequest(_ message: String) -> Self {
        Self(.badRequest, error: "invalid_request", message: message)
    }

    /// 401 `unauthorized`: a bearer token is missing or wrong (Keyhaven's loopback API).
    public static let unauthorized = Self(
        .unauthorized,
        error: "unauthorized",
        message: "a valid bearer token is required"
    )

    /// 404 `unknown_request`: no request with this id.
    public static let unknownRequest = Self(.notFound, error: "unknown_request", message: "no request with this id")

    /// 503 `unavailable`: the kit holds as many open requests as it may (none finished to make
    /// room); try again later.
    public static let busy = Self(
        .serviceUnavailable,
        error: "unavailable",
        message: "too many requests are open; try again later"
    )

    /// 409 `conflict`: another request already uses this id.
    public static func conflict(_ message: String) -> Self {
        Self(.conflict, error: "conflict", message: message)
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var response = try protocolEncoder.encode(body, from: request, context: context)
        response.status = status
        return response
    }
}
