public import AccountModification
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
/// time and never logged.
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

    static func json(_ status: HTTPResponse.Status, _ value: some Encodable) -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Response(
            status: status,
            headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: (try? encoder.encode(value)) ?? Data("{}".utf8)))
        )
    }

    public func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.get("/v1/health") { _, _ in Self.json(.ok, ["status": "ok"]) }
        router.post("/v1/requests") { request, _ in
            guard authorized(request) else {
                return Self.json(
                    .unauthorized,
                    ProtocolErrorBody(error: "unauthorized", message: "a valid bearer token is required")
                )
            }
            guard let buffer = try? await request.body.collect(upTo: 64 << 10),
                let body = try? JSONDecoder().decode(InAppRequest.self, from: Data(buffer.readableBytesView)),
                !body.serviceIdentifier.isEmpty
            else {
                return Self.json(
                    .badRequest,
                    ProtocolErrorBody(error: "invalid_request", message: "the body is not an in-app request")
                )
            }
            return Self.json(.ok, await handler(body))
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
