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

    public func router() -> Router<BasicRequestContext> {
        let router = Router()
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
