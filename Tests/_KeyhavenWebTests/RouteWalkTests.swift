import AccountModification
import AutoFill
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import IdentityProvider
import IdentityProviderServer
import KeyhavenApp
import KeyhavenTesting
import NIOCore
import SecurityRecommendations
import ShinyService
import Synchronization
import Testing
import Vault
import _KeyhavenSupport
import _KeyhavenWeb

@testable import KeyhavenWebApp

/// Every route of each server, asked once, carries the security headers
/// (`SecurityHeadersTests.expectHeaders`; a page also `Cache-Control: no-store`) and redirects only
/// with 303. The routes come from each app's own router (`Router.routes`), so a route added later is
/// walked too and cannot forget them. GET is asked as it is; any other method with an empty form (a
/// forged or stale post: refused, with the headers all the same); a path no route has answers 404
/// with them too. Each app also refuses a form field given twice; the web app's button forms a
/// field they do not send, and a token that is not the session's.
@Suite(.offCooperativePool) struct RouteWalkTests {
    /// `router`'s routes, each path parameter filled in with `x`.
    static func routes(_ router: Router<some RequestContext>) -> [(method: HTTPRequest.Method, path: String)] {
        router.routes.map { route in
            let parts = route.path.description.split(separator: "/", omittingEmptySubsequences: false).map { part in
                part.contains("{") || part.hasPrefix(":") || part.contains("*") ? "x" : String(part)
            }
            return (route.method, parts.joined(separator: "/"))
        }
    }

    /// Asks every route once (under `prefix`, with `headers`); returns the statuses by route.
    @discardableResult
    static func walk(
        _ client: some TestClientProtocol,
        _ routes: [(method: HTTPRequest.Method, path: String)],
        prefix: String = "",
        headers: HTTPFields = [:]
    ) async throws -> [String: HTTPResponse.Status] {
        var statuses: [String: HTTPResponse.Status] = [:]
        for (method, path) in routes {
            var fields = headers
            var body: ByteBuffer?
            if method != .get && method != .head {
                fields[.contentType] = "application/x-www-form-urlencoded"
                body = ByteBuffer()
            }
            let name = "\(method) \(path)"
            let response = try await client.execute(uri: prefix + path, method: method, headers: fields, body: body)
            SecurityHeadersTests.expectHeaders(response.headers, name)
            if response.headers[.contentType]?.hasPrefix("text/html") == true {
                #expect(response.headers[.cacheControl] == "no-store", "\(name): a page is never cached")
            }
            if (300..<400).contains(response.status.code) {
                #expect(response.status == .seeOther, "\(name) redirects with \(response.status)")
            }
            statuses[name] = response.status
        }
        #expect(statuses.count == routes.count)
        return statuses
    }

    static func post(
        _ client: some TestClientProtocol,
        _ path: String,
        _ body: String,
        headers: HTTPFields = [:]
    ) async throws -> (status: HTTPResponse.Status, body: String) {
        var fields = headers
        fields[.contentType] = "application/x-www-form-urlencoded"
        return try await client.execute(uri: path, method: .post, headers: fields, body: ByteBuffer(string: body)) {
            ($0.status, String(buffer: $0.body))
        }
    }

    // MARK: shiny

    @Test func everyShinyRouteCarriesTheHeaders() async throws {
        let shiny = try Shiny(configuration: .init(scryptLogN: 10, demo: true))
        let router = shiny.router()
        let routes = Self.routes(router)
        #expect(routes.count >= 25, "\(routes.map(\.path))")
        try await Application(router: router).test(.router) { client in
            let statuses = try await Self.walk(client, routes + [(.get, "/no-such-page")])
            #expect(statuses["GET /signin"] == .ok && statuses["GET /no-such-page"] == .notFound)
            #expect(statuses["GET /.well-known/change-password"] == .seeOther)
            #expect(statuses["POST /signin"] == .forbidden, "an empty form has no CSRF token")
        }
    }

    @Test func shinyRefusesAFormFieldGivenTwice() async throws {
        let shiny = try Shiny(configuration: .init(scryptLogN: 10))
        try shiny.createAccount(user: "ada", password: "Ada-Password-1234")
        try await Application(router: shiny.router()).test(.router) { client in
            let page = try await client.execute(uri: "/signin", method: .get) { $0 }
            let cookie = try #require(page.headers[.setCookie]?.split(separator: ";").first.map(String.init))
            let token = String(cookie.dropFirst("shiny_csrf=".count))
            let twice = try await Self.post(
                client,
                "/signin",
                "csrf=\(token)&user=ada&password=Ada-Password-1234&user=eve",
                headers: [.cookie: cookie]
            )
            #expect(twice.status == .badRequest)
            #expect(try shiny.sessionCount(user: "ada") == 0)
            let once = try await Self.post(
                client,
                "/signin",
                "csrf=\(token)&user=ada&password=Ada-Password-1234",
                headers: [.cookie: cookie]
            )
            #expect(once.status == .seeOther)
        }
    }

    // MARK: The identity provider

    static func provider() async throws -> IdentityProvider {
        var configuration = ProviderConfiguration(issuer: "https://idp.keyhaven.test")
        configuration.passwordLogN = 10
        configuration.allowInsecureURLs = true
        let provider = try await IdentityProvider(configuration: configuration, database: try SQLiteDatabase())
        try await provider.prepare()
        let team = try await provider.createTeam(name: "Example Corp")
        try await provider.registerClient(
            id: "com.example.shiny",
            teamId: team.id,
            name: "Shiny",
            redirectURIs: ["https://shiny.example.com/auth/callback"],
            notificationURL: nil
        )
        _ = try await provider.createUser(email: "ada@example.com", password: "correct horse battery")
        return provider
    }

    @Test func everyProviderRouteCarriesTheHeaders() async throws {
        let server = ProviderServer(provider: try await Self.provider())
        let router = server.router()
        let routes = Self.routes(router)
        #expect(routes.count >= 20, "\(routes.map(\.path))")
        let authorize =
            "/auth/authorize?client_id=com.example.shiny&redirect_uri=https%3A%2F%2Fshiny.example.com%2Fauth%2Fcallback"
            + "&response_type=code&response_mode=form_post&scope=email&state=s"
        try await Application(router: router).test(.router) { client in
            let statuses = try await Self.walk(client, routes + [(.get, authorize), (.get, "/no-such-page")])
            #expect(statuses["GET \(authorize)"] == .ok, "the sign-in page of an authorization")
            #expect(statuses["GET /account"] == .ok && statuses["GET /auth/handoff.js"] == .ok)
            #expect(statuses["GET /no-such-page"] == .notFound)
        }
    }

    @Test func theProviderRefusesAParameterGivenTwice() async throws {
        let server = ProviderServer(provider: try await Self.provider())
        try await Application(router: server.router()).test(.router) { client in
            let token = try await Self.post(
                client,
                "/auth/token",
                "grant_type=authorization_code&grant_type=refresh_token"
            )
            #expect(token.status == .badRequest && token.body.contains("more than once"))
            try await client.execute(uri: "/auth/authorize?client_id=a&client_id=b", method: .get) { response in
                #expect(response.status == .badRequest)
                #expect(String(buffer: response.body).contains("invalid_request"))
            }
        }
    }

    // MARK: The web app

    struct NoUpgrades: UpgradeEnvironment {
        struct Refused: Error {}
        func manifest(for service: String) async throws -> AccountModificationManifest { throw Refused() }
        func transport(endpoint: String) -> any ModificationTransport { fatalError("no upgrades in these tests") }
    }

    /// Routes requests to `127.0.0.1:PORT`, the only authority the app answers (the router test
    /// client sends `localhost`).
    struct OwnAuthority<Inner: HTTPResponder>: HTTPResponder {
        let inner: Inner
        let port: Int

        func respond(to request: Request, context: Inner.Context) async throws -> Response {
            var head = request.head
            head.authority = "127.0.0.1:\(port)"
            return try await inner.respond(to: Request(head: head, body: request.body), context: context)
        }
    }

    /// A web app on a test vault, its port set (nothing listens: requests come in process), unlocked.
    static func webApp() async throws -> (app: WebApp, vault: TestVault, port: Int) {
        let testVault = try TestVault()
        _ = try testVault.vault.add(
            CredentialContent(services: [ServiceIdentifier("https://mail.example.invalid")], user: "ada", password: "p")
        )
        let agent = AutoFillAgent(vaultURL: testVault.url, allowInsecureKDF: true)
        let app = WebApp(
            agent: agent,
            services: .init(
                breachSource: { _, _ in .none(reason: "tests") },
                auditNetwork: { _ in .none },
                upgradeEnvironment: NoUpgrades()
            )
        )
        let port = 49_999
        app.state.withLock { $0.port = port }
        try await agent.unlock(masterPassword: testVault.masterPassword)
        return (app, testVault, port)
    }

    /// A browser's session: the launch page's cookie and the base of the session's paths.
    static func launch(_ app: WebApp, _ client: some TestClientProtocol) async throws -> (cookie: String, base: String)
    {
        let launch = app.launchURL()
        let path = String(launch.dropFirst("http://127.0.0.1:\(app.port ?? 0)".count))
        return try await client.execute(uri: path, method: .get) { response in
            let cookie = try #require(response.headers[.setCookie]?.split(separator: ";").first.map(String.init))
            let page = String(buffer: response.body)
            let link = try #require(page.firstMatch(of: #/id="continue" href="(/s/[^"]+)/"/#)?.output.1)
            return (cookie, String(link))  // `/s/CAPABILITY` (the link ends in `/`, left out here)
        }
    }

    @Test func everyWebAppRouteCarriesTheHeaders() async throws {
        let (app, _, port) = try await Self.webApp()
        let router = app.router()
        let routes = Self.routes(router)
        #expect(routes.count >= 30, "\(routes.map(\.path))")
        let application = Application(
            responder: OwnAuthority(inner: SessionPaths(inner: router.buildResponder()), port: port)
        )
        try await application.test(.router) { client in
            // Without a session: the launch and the assets answer, nothing else.
            let anonymous = try await Self.walk(client, routes)
            #expect(anonymous["GET /vault"] == .unauthorized && anonymous["GET /assets/app.js"] == .ok)
            // In a session: every page; posts without the session's CSRF token are refused.
            let session = try await Self.launch(app, client)
            let statuses = try await Self.walk(
                client,
                routes + [(.get, "/no-such-page")],
                prefix: session.base,
                headers: [.cookie: session.cookie, .origin: "http://127.0.0.1:\(port)"]
            )
            #expect(statuses["GET /vault"] == .ok && statuses["GET /settings"] == .ok)
            #expect(statuses["GET /unlock"] == .seeOther, "unlocked: on to the overview")
            let unlocked = await app.agent.isUnlocked
            #expect(statuses["POST /lock"] == .forbidden && unlocked)
            #expect(statuses["GET /no-such-page"] == .notFound)
        }
    }

    @Test func theWebAppRefusesAFieldGivenTwice() async throws {
        let (app, _, port) = try await Self.webApp()
        let application = Application(
            responder: OwnAuthority(inner: SessionPaths(inner: app.router().buildResponder()), port: port)
        )
        try await application.test(.router) { client in
            let session = try await Self.launch(app, client)
            let headers: HTTPFields = [.cookie: session.cookie, .origin: "http://127.0.0.1:\(port)"]
            let page = try await client.execute(uri: session.base + "/settings", method: .get, headers: headers) {
                String(buffer: $0.body)
            }
            let csrf = try #require(page.firstMatch(of: #/name="csrf-token" content="([^"]+)"/#)?.output.1)
            let twice = try await Self.post(
                client,
                session.base + "/lock",
                "csrf=\(csrf)&csrf=\(csrf)",
                headers: headers
            )
            #expect(twice.status == .badRequest && twice.body.contains("more than once"))
            #expect(await app.agent.isUnlocked)
            let unknown = try await Self.post(client, session.base + "/lock", "csrf=\(csrf)&x=1", headers: headers)
            #expect(unknown.status == .badRequest && unknown.body.contains("does not send"))
            #expect(await app.agent.isUnlocked)
            let stale = try await Self.post(client, session.base + "/lock", "csrf=forged", headers: headers)
            #expect(stale.status == .forbidden, "a token that is not the session's is refused")
            #expect(await app.agent.isUnlocked)
            try await client.execute(uri: session.base + "/vault?q=a&q=b", method: .get, headers: headers) {
                #expect($0.status == .badRequest)
            }
            let once = try await Self.post(client, session.base + "/lock", "csrf=\(csrf)", headers: headers)
            let unlockedAfter = await app.agent.isUnlocked
            #expect(once.status == .seeOther && !unlockedAfter)
        }
    }
}
