import Foundation
public import HTTPTypes
public import Hummingbird
import NIOCore
public import SyncServer
import VaultSync
import _KeyhavenWeb

/// A ``SyncServer/SyncServerError`` thrown from a route, rendered as its status and
/// `{"error": code, "message": …}`. Messages name ids only (never a token, key or payload); a
/// database failure's details go to the server's log, not to the client.
public struct SyncHTTPError: HTTPResponseError {
    public let error: SyncServerError

    public init(_ error: SyncServerError) {
        self.error = error
    }

    public var status: HTTPResponse.Status {
        switch error.code {
        case .invalidRequest: .badRequest
        case .unauthorized, .wrongServer: .unauthorized
        case .forbidden: .forbidden
        case .notFound: .notFound
        case .alreadyEnrolled, .cursorAhead, .alreadyExists: .conflict
        case .busy: .tooManyRequests
        case .tooLarge: .contentTooLarge
        default: .internalServerError
        }
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers: HTTPFields = [:]
        if status == .unauthorized { headers[.wwwAuthenticate] = "Bearer" }
        if status == .tooManyRequests { headers[.retryAfter] = "5" }
        let message =
            status == .internalServerError ? "the sync server failed; retry later" : error.message
        return try JSONResponse(ErrorJSON(error: error.code.name, message: message), status: status, headers: headers)
            .response
    }
}
