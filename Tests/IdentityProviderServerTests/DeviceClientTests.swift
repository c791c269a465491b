import Foundation
import HTTPTypes
import Hummingbird
import IdentityProvider
import IdentityProviderServer
import IdentityProviderTestSupport
import Logging
import NIOCore
import OneTimeCodes
import Synchronization
import Testing

/// Keyhaven's client of the device API: the provider's refusals arrive as codes the CLI acts on
/// (`keyhaven idp login` asks for the one-time code on `.secondFactorRequired`).
struct DeviceClientTests {
    @Test func refusalsHaveCodes() async throws {
        try await ProviderHarness.with { harness in
            let (_, secret) = try await harness.provider.createUser(
                email: "grace@example.com",
                password: "grace's password",
                totp: true
            )
            let totp = try TOTP(secret: try #require(secret))
            let client = ProviderDeviceClient()
            @Sendable func login(_ password: String, code: String? = nil) async throws -> String {
                try await client.login(
                    baseURL: harness.baseURL,
                    email: "grace@example.com",
                    password: password,
                    code: code,
                    name: "tests"
                ).token
            }
            await #expect(throws: ProviderDeviceClient.Failure(.secondFactorRequired, "")) {
                try await login("grace's password")
            }
            await #expect(throws: ProviderDeviceClient.Failure(.invalidCredentials, "")) {
                try await login("not grace's password")
            }
            #expect(try await !login("grace's password", code: totp.code(at: Date())).isEmpty)
            await #expect(throws: ProviderDeviceClient.Failure(.notAProvider, "")) {
                try await client.discover(harness.baseURL + "/nowhere")
            }
        }
    }

    /// Security review Low #23: `keyhaven idp login` posted the provider password to wherever the
    /// discovery document's `authorization_endpoint` pointed. Now the document's issuer must be the
    /// URL the person typed and the endpoint on its origin (https, or http on loopback); anything
    /// else is refused after reading the document alone: the other server hears nothing, and no
    /// password is sent anywhere.
    @Test func loginTrustsOnlyTheIssuersOwnOrigin() async throws {
        try await Self.withServer(Self.recorder) { elsewhere, elsewhereLog in
            let client = ProviderDeviceClient()
            // The fake provider's discovery document, by case; it records what it is sent too.
            let documents: [(issuer: URLFromOrigin, endpoint: URLFromOrigin)] = [
                ({ $0 }, { _ in elsewhere + "/auth/authorize" }),  // sign-ins sent to another server
                ({ _ in elsewhere }, { _ in elsewhere + "/auth/authorize" }),  // another issuer altogether
                ({ _ in elsewhere }, { $0 + "/auth/authorize" }),  // another issuer, endpoints here
                ({ $0 }, { $0.replacingOccurrences(of: "http://", with: "https://") + "/auth/authorize" }),  // scheme
                ({ $0.replacingOccurrences(of: "127.0.0.1", with: "localhost") }, { $0 + "/auth/authorize" }),
            ]
            for (index, document) in documents.enumerated() {
                try await Self.withServer(Self.fakeProvider(document.issuer, document.endpoint)) { provider, log in
                    await #expect(throws: ProviderDeviceClient.Failure(.crossOrigin, ""), "case \(index)") {
                        let (_, base) = try await client.discover(provider)
                        _ = try await client.login(
                            baseURL: base,
                            email: "ada@example.com",
                            password: "ada's provider password",
                            code: nil,
                            name: "tests"
                        )
                    }
                    #expect(log.all == ["GET /.well-known/openid-configuration"], "case \(index)")
                }
            }
            #expect(elsewhereLog.all.isEmpty, "the other server received no request")

            // Plain http off loopback: refused before anything is sent.
            await #expect(throws: ProviderDeviceClient.Failure(.crossOrigin, "")) {
                try await client.discover("http://id.example.com")
            }

            // The same fake provider with a document naming itself: discovery, then the login, go to it.
            try await Self.withServer(Self.fakeProvider({ $0 }, { $0 + "/auth/authorize" })) { provider, log in
                let (issuer, base) = try await client.discover(provider + "/")
                #expect(issuer == provider && base == provider)
                let login = try await client.login(
                    baseURL: base,
                    email: "ada@example.com",
                    password: "ada's provider password",
                    code: nil,
                    name: "tests"
                )
                #expect(login.token == "device-token")
                #expect(log.all == ["GET /.well-known/openid-configuration", "POST /keyhaven/v1/login"])
            }
        }
    }

    typealias URLFromOrigin = @Sendable (String) -> String

    /// What a server was asked (`METHOD /path`).
    final class Log: Sendable {
        private let lines = Mutex<[String]>([])
        func append(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
    }

    /// Answers 404 to everything, recording each request.
    static func recorder(_ log: Log, _ origin: @escaping @Sendable () -> String) -> Router<BasicRequestContext> {
        let router = Router()
        router.middlewares.add(RequestLog(log: log))
        return router
    }

    /// A provider's discovery document whose issuer and endpoint are made from the server's own
    /// origin; `/keyhaven/v1/login` answers a device token.
    static func fakeProvider(
        _ issuer: @escaping URLFromOrigin,
        _ endpoint: @escaping URLFromOrigin
    ) -> @Sendable (Log, @escaping @Sendable () -> String) -> Router<BasicRequestContext> {
        { log, origin in
            let router = Router()
            router.middlewares.add(RequestLog(log: log))
            router.get("/.well-known/openid-configuration") { _, _ in
                let document = ["issuer": issuer(origin()), "authorization_endpoint": endpoint(origin())]
                return Response(
                    status: .ok,
                    headers: [.contentType: "application/json"],
                    body: .init(byteBuffer: ByteBuffer(bytes: try JSONEncoder().encode(document)))
                )
            }
            router.post("/keyhaven/v1/login") { _, _ in
                Response(
                    status: .ok,
                    headers: [.contentType: "application/json"],
                    body: .init(byteBuffer: ByteBuffer(string: #"{"device_token":"device-token"}"#))
                )
            }
            return router
        }
    }

    struct RequestLog: RouterMiddleware {
        typealias Context = BasicRequestContext
        let log: Log

        func handle(
            _ request: Request,
            context: Context,
            next: (Request, Context) async throws -> Response
        ) async throws -> Response {
            log.append("\(request.method) \(request.uri.path)")
            return try await next(request, context)
        }
    }

    /// Serves the router `make` builds on a free loopback port while `body` runs, with the
    /// server's origin and its request log.
    static func withServer(
        _ make: @Sendable (Log, @escaping @Sendable () -> String) -> Router<BasicRequestContext>,
        _ body: (String, Log) async throws -> Void
    ) async throws {
        let log = Log()
        let port = Mutex(0)
        let ready = AsyncStream.makeStream(of: Int.self)
        var logger = Logger(label: "test.fake")
        logger.logLevel = .critical
        let app = Application(
            router: make(log) { "http://127.0.0.1:\(port.withLock { $0 })" },
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in ready.continuation.yield(channel.localAddress?.port ?? 0) },
            logger: logger
        )
        let server = Task { try await app.run() }
        defer { server.cancel() }
        var iterator = ready.stream.makeAsyncIterator()
        let bound = await iterator.next() ?? 0
        port.withLock { $0 = bound }
        try await body("http://127.0.0.1:\(bound)", log)
    }
}
