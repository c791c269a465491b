import AsyncHTTPClient
import Foundation
import HTTPTypes
import Hummingbird
import IdentityProvider
import IdentityProviderClient
import IdentityProviderTestSupport
import Logging
import NIOCore
import NIOHTTP1
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
    /// A call the caller cancels ends as a cancellation, not as a provider that "could not be
    /// reached" (the provider here answers only after 10 s).
    @Test(.timeLimit(.minutes(1))) func aCancelledCallIsACancellation() async throws {
        try await Self.withServer(Self.slowProvider) { provider, _ in
            let calling = Task { try await ProviderDeviceClient().discover(provider) }
            try await Task.sleep(for: .milliseconds(300))
            calling.cancel()
            await #expect(throws: CancellationError.self) { try await calling.value }
        }
    }

    /// A provider that answers anything only after 10 s.
    static func slowProvider(_: Log, _: @escaping @Sendable () -> String) -> Router<BasicRequestContext> {
        let router = Router()
        router.get("**") { _, _ -> Response in
            try await Task.sleep(for: .seconds(10))
            return Response(status: .ok)
        }
        return router
    }

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

    /// Security review #7: any web page could post `text/plain` (a CORS-simple request) to
    /// `/keyhaven/v1/login` with wrong passwords and lock the account's device login. Now only
    /// `application/json` is read: other types get 415 and spend none of the account's attempts;
    /// a post a browser marks cross-site gets 403. The person's own JSON login still works after
    /// six of each, while six wrong JSON guesses do lock it (the counter is real).
    @Test func theDeviceLoginReadsOnlyJSONSoNoPageCanLockIt() async throws {
        try await ProviderHarness.with { harness in
            let url = harness.baseURL + "/keyhaven/v1/login"
            let wrong = #"{"email":"\#(harness.email)","password":"a page's guess"}"#
            let right = #"{"email":"\#(harness.email)","password":"\#(harness.password)"}"#
            let attacks: [(type: String?, body: String, headers: [(String, String)], status: Int)] = [
                ("text/plain", wrong, [("Origin", "http://evil.example")], 415),
                ("text/plain;charset=UTF-8", wrong, [], 415),
                ("application/x-www-form-urlencoded", "email=\(harness.email)&password=guess", [], 415),
                ("multipart/form-data; boundary=x", wrong, [], 415),
                (nil, wrong, [], 415),
                ("application/json", wrong, [("Origin", "http://evil.example")], 403),
                ("application/json", wrong, [("Origin", "null")], 403),
                ("application/json", wrong, [("Sec-Fetch-Site", "cross-site")], 403),
                ("application/json", wrong, [("Sec-Fetch-Site", "same-site")], 403),
            ]
            for attack in attacks {
                for _ in 0..<6 {
                    let answer = try await Self.post(url, type: attack.type, attack.body, headers: attack.headers)
                    #expect(answer.status == attack.status, "\(attack.type ?? "no type") \(attack.headers)")
                    #expect(answer.body.contains(#""error":"invalid_request""#), "\(answer.body)")
                    #expect(answer.type == "application/json")
                }
            }
            // None of those counted: the person signs in (a browser's own same-origin post too).
            let own = try await Self.post(url, type: "application/json; charset=utf-8", right, headers: [])
            #expect(own.status == 200, "\(own.body)")
            #expect(own.body.contains("device_token"))
            let sameOrigin = [("Origin", harness.baseURL), ("Sec-Fetch-Site", "same-origin")]
            #expect(try await Self.post(url, type: "application/json", right, headers: sameOrigin).status == 200)

            // Six wrong JSON guesses are counted: the account's device login is locked.
            for _ in 0..<6 { _ = try await Self.post(url, type: "application/json", wrong, headers: []) }
            let locked = try await Self.post(url, type: "application/json", right, headers: [])
            #expect(locked.status == 429 && locked.body.contains("too_many_attempts"))
        }
    }

    /// Security review #7, second half: a Keyhaven that holds a device token of the account (it
    /// signs in again with `keyhaven idp login`, which sends the token it holds) is exempt from the
    /// account's lockout exactly as a browser with a `kh_device` cookie is; an unknown device, a
    /// revoked token and another person's token are not.
    @Test func aKeyhavenWithADeviceTokenSignsInWhileTheAccountIsLocked() async throws {
        try await ProviderHarness.with { harness in
            let client = ProviderDeviceClient()
            @Sendable func login(_ password: String, token: String? = nil) async throws -> String {
                try await client.login(
                    baseURL: harness.baseURL,
                    email: harness.email,
                    password: password,
                    code: nil,
                    name: "laptop",
                    deviceToken: token
                ).token
            }
            let laptop = try await login(harness.password)
            let old = try await login(harness.password)
            try await harness.provider.revokeDeviceToken(old)
            _ = try await harness.provider.createUser(email: "grace@example.com", password: "grace's password")
            let graces = try await client.login(
                baseURL: harness.baseURL,
                email: "grace@example.com",
                password: "grace's password",
                code: nil,
                name: "grace's"
            ).token

            // A stranger's wrong guesses lock the account for unknown devices.
            for _ in 0..<5 {
                await #expect(throws: ProviderDeviceClient.Failure(.invalidCredentials, "")) {
                    try await login("a stranger's guess")
                }
            }
            await #expect(throws: ProviderDeviceClient.Failure(.tooManyAttempts, "")) {
                try await login(harness.password)
            }
            // The laptop's Keyhaven, with its token, signs in again (and gets a new token).
            let again = try await login(harness.password, token: laptop)
            #expect(!again.isEmpty && again != laptop)
            // A revoked token, another person's, and a made-up one are unknown devices.
            for token in [old, graces, "kd_" + String(repeating: "A", count: 43)] {
                await #expect(throws: ProviderDeviceClient.Failure(.tooManyAttempts, "")) {
                    try await login(harness.password, token: token)
                }
            }
            // The device has a counter of its own: wrong guesses with the token lock the device.
            for _ in 0..<5 {
                await #expect(throws: ProviderDeviceClient.Failure(.invalidCredentials, "")) {
                    try await login("x", token: laptop)
                }
            }
            await #expect(throws: ProviderDeviceClient.Failure(.tooManyAttempts, "")) {
                try await login(harness.password, token: laptop)
            }
        }
    }

    /// A raw post to the provider, as a page or a script could send it.
    static func post(
        _ url: String,
        type: String?,
        _ body: String,
        headers: [(String, String)]
    ) async throws -> (status: Int, type: String?, body: String) {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        if let type { request.headers.add(name: "Content-Type", value: type) }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(string: body))
        let response = try await RawHTTP.client.execute(request, timeout: .seconds(30))
        return (
            Int(response.status.code), response.headers.first(name: "Content-Type"),
            String(buffer: try await response.body.collect(upTo: 1 << 16))
        )
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
            router.post("/keyhaven/v1/login") { request, _ in
                // As the real provider: JSON only (so the client is seen to send it).
                guard request.headers[.contentType] == "application/json" else {
                    return Response(status: .unsupportedMediaType)
                }
                return Response(
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
