public import AsyncHTTPClient
public import Foundation
public import IdentityProvider
public import IdentityProviderServer
public import KeyhavenJOSE
import Logging
import NIOCore
public import NIOHTTP1
public import RelyingParty
import _KeyhavenSupport

/// The harness could not set a test up (not an error of the code under test).
public struct HarnessFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A provider served on a free loopback port with one team, one service and one person.
public struct ProviderHarness: Sendable {
    public let provider: IdentityProvider
    public let baseURL: String
    public let teamId: String
    public let teamKey: ES256SigningKey
    public let clientId = "com.example.shiny"
    public let redirectURI = "https://shiny.example.com/auth/callback"
    public let email = "ada@example.com"
    public let password = "correct horse battery"

    public static func configuration(issuer: String = "https://idp.keyhaven.test") -> ProviderConfiguration {
        var configuration = ProviderConfiguration(issuer: issuer)
        configuration.passwordLogN = 10
        configuration.allowInsecureURLs = true
        return configuration
    }

    /// Runs `body` against a fresh provider (SQLite in memory unless `database` is given).
    public static func with(
        _ configuration: ProviderConfiguration = configuration(),
        database: (any SQLDatabase)? = nil,
        notificationURL: String? = nil,
        server: @escaping @Sendable (IdentityProvider) -> ProviderServer = {
            ProviderServer(provider: $0, deliveryInterval: .milliseconds(50))
        },
        _ body: @escaping @Sendable (ProviderHarness) async throws -> Void
    ) async throws {
        let ready = AsyncStream.makeStream(of: Int.self)
        let provider = try await IdentityProvider(
            configuration: configuration,
            database: try database ?? SQLiteDatabase()
        )
        let team = try await provider.createTeam(name: "Example Corp")
        let key = try await provider.createTeamKey(teamId: team.id)
        let harness = ProviderHarness(provider: provider, baseURL: "", teamId: team.id, teamKey: key)
        try await provider.registerClient(
            id: harness.clientId,
            teamId: team.id,
            name: "Shiny",
            redirectURIs: [harness.redirectURI],
            notificationURL: notificationURL
        )
        _ = try await provider.createUser(
            email: harness.email,
            password: harness.password,
            firstName: "Ada",
            lastName: "Lovelace"
        )
        let server = Task {
            var logger = Logger(label: "test.idp")
            logger.logLevel = .critical
            try await server(provider).run(
                host: "127.0.0.1",
                port: 0,
                logger: logger
            ) { port in
                ready.continuation.yield(port)
            }
        }
        defer { server.cancel() }
        var iterator = ready.stream.makeAsyncIterator()
        guard let port = await iterator.next() else { throw HarnessFailure("the provider did not start") }
        try await body(
            ProviderHarness(
                provider: provider,
                baseURL: "http://127.0.0.1:\(port)",
                teamId: team.id,
                teamKey: key
            )
        )
    }

    /// The relying-party kit for the harness's service.
    public func client(now: @escaping @Sendable () -> Date = { Date() }) -> SignInClient {
        var configuration = SignInClient.Configuration(
            issuer: provider.configuration.issuer,
            baseURL: baseURL,
            clientId: clientId,
            teamId: teamId,
            key: teamKey
        )
        configuration.now = now
        return SignInClient(configuration: configuration)
    }

    /// Drives the browser flow with plain HTTP: authorize → sign in → consent → the form_post page's fields.
    public func authorizeInBrowser(
        scope: String = "name email",
        state: String = "st-1",
        nonce: String = "n-1",
        share: Bool = true,
        responseType: String = "code"
    ) async throws -> [String: String] {
        let web = WebSession()
        let query = FormURLEncoding.encode([
            ("client_id", clientId), ("redirect_uri", redirectURI), ("response_type", responseType),
            ("response_mode", "form_post"), ("scope", scope), ("state", state), ("nonce", nonce),
        ])
        let page = try await web.get(baseURL + "/auth/authorize?" + query)
        var fields = WebSession.hiddenFields(page.body)
        fields["email"] = email
        fields["password"] = password
        fields["action"] = "signin"
        var next = try await web.post(baseURL + "/auth/authorize", fields: fields)
        if next.body.contains(#"id="consent""#) {
            var consent = WebSession.hiddenFields(next.body)
            consent["share_email"] = share ? "share" : "hide"
            consent["action"] = "continue"
            next = try await web.post(baseURL + "/auth/authorize/consent", fields: consent)
        }
        guard next.body.contains(#"id="handoff""#) else {
            throw HarnessFailure("no form_post page: HTTP \(next.status) \(next.body.prefix(300))")
        }
        return WebSession.hiddenFields(next.body)
    }
}

/// A tiny cookie-keeping HTTP client for the provider's pages.
public final class WebSession: @unchecked Sendable {
    public struct Page: Sendable {
        public var status: Int
        public var headers: HTTPHeaders
        public var body: String
    }

    private var cookies: [String: String] = [:]
    /// The sign-in page's CSRF token (`login_token`), sent with later posts as a browser would.
    private var loginToken: String?
    private let lock = NSLock()

    public init() {}

    public func get(_ url: String) async throws -> Page {
        try await send(HTTPClientRequest(url: url))
    }

    public func post(_ url: String, fields: [String: String]) async throws -> Page {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        var fields = fields
        if fields["login_token"] == nil, let token = lock.withLock({ loginToken }) { fields["login_token"] = token }
        request.body = .bytes(ByteBuffer(string: FormURLEncoding.encode(fields.sorted { $0.key < $1.key })))
        return try await send(request)
    }

    public func send(_ request: HTTPClientRequest) async throws -> Page {
        var request = request
        let cookieHeader = lock.withLock { cookies.map { "\($0.key)=\($0.value)" }.joined(separator: "; ") }
        if !cookieHeader.isEmpty { request.headers.add(name: "Cookie", value: cookieHeader) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        for header in response.headers["Set-Cookie"] {
            let pair = header.split(separator: ";")[0].split(separator: "=", maxSplits: 1)
            if pair.count == 2 { lock.withLock { cookies[String(pair[0])] = String(pair[1]) } }
        }
        let body = String(buffer: try await response.body.collect(upTo: 1 << 20))
        if let token = Self.hiddenFields(body)["login_token"] { lock.withLock { loginToken = token } }
        return Page(status: Int(response.status.code), headers: response.headers, body: body)
    }

    /// `<input type="hidden" name=… value=…>` fields of a page, HTML entities decoded.
    public static func hiddenFields(_ html: String) -> [String: String] {
        var result: [String: String] = [:]
        let pattern = #"<input type="hidden" name="([^"]*)" value="([^"]*)">"#
        let regex = try! NSRegularExpression(pattern: pattern)
        let range = NSRange(html.startIndex..., in: html)
        for match in regex.matches(in: html, range: range) {
            let name = String(html[Range(match.range(at: 1), in: html)!])
            let value = String(html[Range(match.range(at: 2), in: html)!])
            result[unescape(name)] = unescape(value)
        }
        return result
    }

    public static func unescape(_ text: String) -> String {
        text.replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#39;", with: "'")
            .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&amp;", with: "&")
    }
}
