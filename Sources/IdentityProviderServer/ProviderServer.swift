import AsyncHTTPClient
import Crypto
import Foundation
import HTTPTypes
public import Hummingbird
public import IdentityProvider
import KeyhavenJOSE
public import Logging
import NIOCore
import NIOHTTP1
public import ServiceLifecycle
import Synchronization
import UnixSignals
import _KeyhavenHTTPSupport
import _KeyhavenSupport
public import _KeyhavenWeb

/// Sign in with Keyhaven over HTTP: Sign in with Apple's endpoints (`/auth/authorize`, `/auth/token`,
/// `/auth/keys`, `/auth/revoke`, `/auth/usermigrationinfo`, discovery), the credential-state
/// endpoint, the account page, Keyhaven's device API, and the notification sender.
public final class ProviderServer: Sendable {
    public let provider: IdentityProvider
    /// How often the notification sender looks for due rows.
    public let deliveryInterval: Duration

    /// The base URL of the endpoints when no public URL is configured: where the server listens.
    let listening = Mutex<String?>(nil)

    /// A header carrying the client's address, set by the operator's reverse proxy
    /// (`X-Forwarded-For`); nil to use the connection's peer address.
    public let clientAddressHeader: String?
    /// The proxies whose ``clientAddressHeader`` is believed (exact addresses).
    public let trustedProxies: Set<String>

    /// - Parameter trustedProxies: defaults to loopback, a proxy on the same machine.
    public init(
        provider: IdentityProvider,
        deliveryInterval: Duration = .milliseconds(250),
        clientAddressHeader: String? = nil,
        trustedProxies: Set<String> = ["127.0.0.1", "::1"]
    ) {
        self.provider = provider
        self.deliveryInterval = deliveryInterval
        self.clientAddressHeader = clientAddressHeader
        self.trustedProxies = trustedProxies
    }

    var endpointBase: String? {
        provider.configuration.publicURL == nil ? listening.withLock { $0 } : nil
    }

    /// Cookies are `Secure` when the pages are served over https (the public URL, or where the
    /// server listens when none is configured).
    var secureCookies: Bool { (endpointBase ?? provider.configuration.baseURL).hasPrefix("https://") }

    public func router() -> Router<ProviderRequestContext> {
        let router = Router(
            context: ProviderRequestContext.self,
            securityHeaders: Self.securityHeaders,
            assets: [
                .stylesheet(cacheControl: "max-age=3600"),
                .script("/auth/handoff.js", PackageResources.handoff_js, cacheControl: "max-age=3600"),
            ]
        )
        addProtocolRoutes(to: router)
        addAuthorizeRoutes(to: router)
        addAccountRoutes(to: router)
        addDeviceRoutes(to: router)
        return router
    }

    /// Serves on `host:port` (0 picks a port) with the notification sender, until the task is
    /// cancelled or SIGINT/SIGTERM. `onReady` gets the bound port.
    ///
    /// `services` (the PostgreSQL database) run in the same service group, started first and
    /// stopped last; the provider is prepared (``IdentityProvider/prepare()``) once they run,
    /// before the server listens.
    public func run(
        host: String,
        port: Int,
        logger: Logger = Logger(label: "keyhaven.idp"),
        services: [any Service] = [],
        onReady: @escaping @Sendable (Int) async -> Void = { _ in }
    ) async throws {
        var app = Application(
            router: router(),
            configuration: .init(address: .hostname(host, port: port), serverName: "keyhaven-idp"),
            onServerRunning: { channel in
                let bound = channel.localAddress?.port ?? port
                let shown = host.contains(":") ? "[\(host)]" : host
                self.listening.withLock { $0 = "http://\(shown == "0.0.0.0" ? "127.0.0.1" : shown):\(bound)" }
                await onReady(bound)
            },
            logger: logger
        )
        let provider = self.provider
        app.beforeServerStarts { try await provider.prepare() }
        let sender = NotificationSender(provider: provider, interval: deliveryInterval, logger: logger)
        let group = ServiceGroup(
            configuration: .init(
                services: services.map { .init(service: $0) } + [.init(service: app), .init(service: sender)],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
        )
        try await group.run()
    }

    // MARK: Helpers

    /// Every response: ``SecurityHeaders`` (`_KeyhavenWeb`) with a Content-Security-Policy that
    /// allows no inline script (the one script is `/auth/handoff.js`), only the pages' own style
    /// sheet, and forms that post to the provider itself — plus, on the pages of an authorization,
    /// the origin of the service's redirect URI (``html(_:status:headers:formAction:)``), where the
    /// answer goes. Never cached unless a route says otherwise (discovery, keys, assets).
    static let securityHeaders = SecurityHeaders(contentSecurityPolicy: .ownOrigin(dataImages: true))

    static func json(
        _ status: HTTPResponse.Status,
        _ value: some Encodable,
        headers: HTTPFields = [:]
    ) throws
        -> Response
    {
        try JSONResponse(value, status: status, headers: headers).response
    }

    static func error(_ error: OAuthError) throws -> Response {
        var headers = HTTPFields()
        if let seconds = error.retryAfter { headers[.retryAfter] = String(seconds) }
        return try json(HTTPResponse.Status(code: error.status), error, headers: headers)
    }

    /// A page. On the pages of an authorization, `formAction` (the service's origin) joins
    /// `form-action` in the page's Content-Security-Policy.
    static func html(
        _ page: HTML,
        status: HTTPResponse.Status = .ok,
        headers: HTTPFields = [:],
        formAction: String? = nil
    ) -> Response {
        var fields = headers
        if let formAction {
            fields[.contentSecurityPolicy] =
                ContentSecurityPolicy.ownOrigin(dataImages: true, formAction: formAction)
                .description
        }
        return HTMLResponse(page, status: status, headers: fields).response
    }

    static func redirect(_ location: String, headers: HTTPFields = [:]) -> Response {
        Redirect(to: location, headers: headers).response
    }

    /// The form body (``WebForm``: `application/x-www-form-urlencoded` only, a field given twice
    /// refused), or nil.
    static func form(_ request: Request) async -> [String: String]? {
        try? await WebForm.fields(of: request)
    }

    /// The form of an OAuth endpoint, or the error Apple gives.
    static func oauthForm(_ request: Request) async -> Result<[String: String], OAuthError> {
        do {
            return .success(try await WebForm.fields(of: request))
        } catch {
            return switch error.code {
            case .notForm: .failure(.invalidRequest("The body must be application/x-www-form-urlencoded."))
            case .duplicateField: .failure(.invalidRequest("A parameter was given more than once."))
            case .tooLarge, .unreadable, .unknownField: .failure(.invalidRequest("The body could not be read."))
            }
        }
    }

    /// The form of an OAuth endpoint; throws the error Apple gives (rendered by Hummingbird).
    static func oauthFields(_ request: Request) async throws(OAuthErrorResponse) -> [String: String] {
        try answer(await oauthForm(request))
    }

    /// The value, or the OAuth error thrown so that it renders itself.
    @discardableResult
    static func answer<T>(_ result: Result<T, OAuthError>) throws(OAuthErrorResponse) -> T {
        switch result {
        case .success(let value): return value
        case .failure(let error): throw OAuthErrorResponse(error)
        }
    }

    /// The query's parameters (``WebForm``: one given twice is refused, as in a form).
    static func query(_ request: Request) throws(OAuthErrorResponse) -> [String: String] {
        do {
            return try WebForm.query(of: request)
        } catch {
            throw OAuthErrorResponse(.invalidRequest("A parameter was given more than once."))
        }
    }

    static func cookie(_ name: String, in request: Request) -> String? {
        request.cookies[name]?.value
    }

    static func bearer(_ request: Request) -> String? {
        guard let header = request.headers[.authorization], header.hasPrefix("Bearer ") else { return nil }
        let token = header.dropFirst("Bearer ".count).trimmingCharacters(in: .whitespaces)
        return token.isEmpty ? nil : token
    }

    // MARK: Sign in with Apple's endpoints

    func addProtocolRoutes(to router: Router<ProviderRequestContext>) {
        let provider = self.provider
        router.get("/.well-known/openid-configuration") { _, _ in
            try Self.json(
                .ok,
                provider.discoveryDocument(baseURL: self.endpointBase),
                headers: [.cacheControl: "max-age=3600"]
            )
        }
        router.get("/auth/keys") { _, _ in
            do {
                return try Self.json(.ok, try await provider.jwks(), headers: [.cacheControl: "max-age=300"])
            } catch {
                throw OAuthErrorResponse(.init("server_error", "The keys are unavailable.", status: 500))
            }
        }
        // OAuth errors are thrown and render themselves (`OAuthErrorResponse: HTTPResponseError`).
        router.post("/auth/token") { request, context in
            let form = try await Self.oauthFields(request)
            return try Self.json(
                .ok,
                try Self.answer(await provider.token(form, from: self.clientAddress(request, context)))
            )
        }
        router.post("/auth/revoke") { request, context in
            let form = try await Self.oauthFields(request)
            try Self.answer(await provider.revoke(form, from: self.clientAddress(request, context)))
            return Response(status: .ok)
        }
        router.post("/auth/usermigrationinfo") { request, _ in
            let form = try await Self.oauthFields(request)
            return try Self.json(
                .ok,
                try Self.answer(await provider.userMigrationInfo(form, bearer: Self.bearer(request)))
            )
        }
        // Apple's credential state is on-device; services ask here instead (client-authenticated).
        router.post("/auth/credentialstate") { request, _ in
            let form = try await Self.oauthFields(request)
            let state = try Self.answer(await provider.credentialState(form))
            return try Self.json(.ok, ["state": state.rawValue])
        }
    }
}

/// Posts due notifications in the background (a swift-service-lifecycle service).
struct NotificationSender: Service {
    let provider: IdentityProvider
    let interval: Duration
    let logger: Logger

    func run() async throws {
        let transport = HTTPNotificationTransport()
        try await provider.prepare()  // the same preparation the server waits for
        await withGracefulShutdownHandler {
            while !Task.isCancelled && !Task.isShuttingDownGracefully {
                do {
                    let round = try await provider.deliverDueNotifications(using: transport)
                    if round.attempted > 0 {
                        logger.info(
                            "notifications",
                            metadata: ["delivered": "\(round.delivered)", "failed": "\(round.failed)"]
                        )
                    }
                    if round.attempted > 0 && round.failed == 0 { continue }
                } catch {
                    logger.error("notification delivery failed: \(type(of: error))")
                }
                try? await Task.sleep(for: interval)
            }
        } onGracefulShutdown: {
        }
    }
}

/// Notifications over HTTP: `POST` JSON, 10-second timeout, no redirects followed.
public struct HTTPNotificationTransport: NotificationTransport {

    public init() {}

    public func post(url: String, body: [UInt8]) async -> Int? {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "Keyhaven-IdP")
        request.body = .bytes(ByteBuffer(bytes: body))
        let deadline = NIODeadline.now() + .seconds(10)
        guard let response = try? await OutboundHTTP.shared.execute(request, deadline: deadline) else { return nil }
        _ = try? await response.body.collect(upTo: 1 << 16, deadline: deadline)
        return Int(response.status.code)
    }
}
