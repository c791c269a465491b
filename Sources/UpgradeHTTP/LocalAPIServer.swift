public import AccountModification
import AccountModificationKit
import Crypto
import Foundation
import HTTPTypes
public import Hummingbird
import Logging
import NIOCore
import _KeyhavenSupport

/// Keyhaven's loopback API for apps (`keyhaven serve`): `POST /v1/requests` with
/// `Authorization: Bearer <token>` runs an in-app upgrade and answers with its result;
/// `GET /v1/health` needs no token. It listens on loopback only; the token is compared in constant
/// time and never logged. Refusals are the protocol's (``ProtocolErrorResponse``: 401
/// `unauthorized`, 400 `invalid_request`); docs/openapi/account-modification.yaml has both routes.
public struct LocalAPIServer: Sendable {
    public let token: String
    let handler: @Sendable (InAppRequest) async -> InAppResult

    public init(token: String, handler: @escaping @Sendable (InAppRequest) async -> InAppResult) {
        self.token = token
        self.handler = handler
    }

    /// A random 256-bit token, hex.
    public static func makeToken() -> String {
        SymmetricKey(size: .bits256).withUnsafeBytes { Hex.encode($0) }
    }

    func authorized(_ request: Request) -> Bool {
        guard let header = request.headers[.authorization], header.hasPrefix("Bearer ") else { return false }
        return constantTimeEqual(Array(header.dropFirst("Bearer ".count).utf8), Array(token.utf8))
    }

    /// Whether a request may reach the API at all (issue 13 #13): its `Host` names loopback — a web
    /// page that rebinds its own domain name to 127.0.0.1 (DNS rebinding) still sends its own name —
    /// and it carries no `Origin` other than a loopback one, so no web page elsewhere can drive the
    /// API from a browser even with a leaked token.
    public static func isLocal(authority: String?, origin: String?) -> Bool {
        guard let authority, let host = ServiceOrigin("http://" + authority), host.isLoopback else { return false }
        guard let origin else { return true }
        return ServiceOrigin.of(url: origin)?.isLoopback == true
    }

    public func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.add(middleware: LocalRequestsOnly())
        router.get("/v1/health") { _, _ in ["status": "ok"] }
        router.post("/v1/requests") { request, _ -> InAppResult in
            guard authorized(request) else {
                throw ProtocolErrorResponse.unauthorized
            }
            guard let buffer = try? await request.body.collect(upTo: 64 << 10),
                let body = try? JSONDecoder().decode(InAppRequest.self, from: Data(buffer.readableBytesView)),
                !body.serviceIdentifier.isEmpty
            else {
                throw ProtocolErrorResponse.invalidRequest("the body is not an in-app request")
            }
            return await handler(body)
        }
        return router
    }

    /// Serves on 127.0.0.1:`port` until SIGINT/SIGTERM. `onReady` gets the bound port.
    public func run(port: Int, onReady: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        var logger = Logger(label: "keyhaven.local-api")
        logger.logLevel = .warning
        let app = Application(
            router: router(),
            configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: "keyhaven"),
            onServerRunning: { channel in await onReady(channel.localAddress?.port ?? port) },
            logger: logger
        )
        try await app.runService()
    }
}

/// Refuses requests that do not come from this machine's own programs (``LocalAPIServer/isLocal(authority:origin:)``)
/// with 403 before any route runs.
struct LocalRequestsOnly<Context: RequestContext>: RouterMiddleware {
    func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard LocalAPIServer.isLocal(authority: request.head.authority, origin: request.headers[.origin]) else {
            throw ProtocolErrorResponse(
                .forbidden,
                error: "forbidden",
                message: "the local API answers programs on this machine only (Host and Origin must be loopback)"
            )
        }
        return try await next(request, context)
    }
}
