import Foundation
import HTTPTypes
public import Hummingbird
public import IdentityProvider
import NIOCore

/// An ``OAuthError`` thrown from a route: Hummingbird renders it as Apple does — the status, and
/// `{"error": …, "error_description": …}` as JSON, never cached (the security headers' default). (A
/// wrapper, because `OAuthError` lives in the framework-free `IdentityProvider` and already has an
/// integer `status`.)
public struct OAuthErrorResponse: HTTPResponseError {
    public let error: OAuthError

    public init(_ error: OAuthError) {
        self.error = error
    }

    public var status: HTTPResponse.Status { HTTPResponse.Status(code: error.status) }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        try ProviderServer.error(error)
    }
}
