import AsyncHTTPClient
import Foundation
import IdentityProvider
import IdentityProviderServer
import IdentityProviderTestSupport
import KeyhavenTesting
import NIOCore
import NIOHTTP1
import RelyingParty
import Testing
import _KeyhavenSupport

/// Security review M9 (issue 13 #8): a stranger's wrong guesses must not lock the owner out. The
/// account's counter still limits unknown devices; a browser that signed in before carries a
/// known-device cookie with a counter of its own. `/auth/token` and `/auth/revoke` limit failures
/// per client address.
@Suite(.offCooperativePool)
struct KnownDeviceTests {
    static let email = SignInThrottleTests.email
    static let password = SignInThrottleTests.password

    static func failure(_ attempt: () async throws -> Authentication) async -> ProviderError? {
        await SignInThrottleTests.failure(attempt)
    }

    @Test(arguments: SignInThrottleTests.engines)
    func aKnownDeviceSignsInWhileStrangersAreLockedOut(engine: String) async throws {
        let (provider, _, _) = try await SignInThrottleTests.provider(engine: engine)
        // Ada signed in on her laptop earlier: it was given a known-device cookie.
        let earlier = try await provider.authenticate(email: Self.email, password: Self.password, code: nil)
        let laptop = try await provider.rememberDevice(earlier)
        #expect(laptop.count == 64)
        #expect(try await provider.isKnownDevice(laptop, userId: earlier.userId))

        // A stranger exhausts the account's counter from an unknown device.
        await SignInThrottleTests.guessWrong(provider, times: 5)
        let stranger = await Self.failure {
            try await provider.authenticate(email: Self.email, password: Self.password, code: nil)
        }
        #expect(stranger?.code == .tooManyAttempts)

        // Ada's laptop: the right password goes through.
        let owner = await Self.failure {
            try await provider.authenticate(email: Self.email, password: Self.password, code: nil, knownDevice: laptop)
        }
        #expect(owner == nil)
        // The unknown device stays blocked; a made-up cookie, or another person's, is an unknown device.
        #expect(await SignInThrottleTests.adaSignsIn(provider) == false)
        let forged = await Self.failure {
            try await provider.authenticate(
                email: Self.email,
                password: Self.password,
                code: nil,
                knownDevice: String(repeating: "a", count: 64)
            )
        }
        #expect(forged?.code == .tooManyAttempts)
        let grace = try #require(try await provider.user(email: "grace@example.com"))
        let gracesDevice = try await provider.rememberDevice(
            Authentication(userId: grace.id, authTime: 0, secondFactor: false)
        )
        let borrowed = await Self.failure {
            try await provider.authenticate(
                email: Self.email,
                password: Self.password,
                code: nil,
                knownDevice: gracesDevice
            )
        }
        #expect(borrowed?.code == .tooManyAttempts)

        // The known device has its own counter: wrong guesses from it lock it too.
        for _ in 0..<5 {
            let wrong = await Self.failure {
                try await provider.authenticate(email: Self.email, password: "x", code: nil, knownDevice: laptop)
            }
            #expect(wrong?.code == .invalidCredentials)
        }
        let lockedDevice = await Self.failure {
            try await provider.authenticate(email: Self.email, password: Self.password, code: nil, knownDevice: laptop)
        }
        #expect(lockedDevice?.code == .tooManyAttempts)
    }

    /// The same through the provider's sign-in page: the cookie is set on success (HttpOnly,
    /// SameSite, random), and a browser that carries it signs in while the account is locked.
    @Test func theSignInPageGivesAndHonoursTheDeviceCookie() async throws {
        try await ProviderHarness.with { harness in
            let signin = harness.baseURL + "/account/signin"
            func attempt(
                password: String,
                cookies: [String] = []
            ) async throws -> (
                status: Int, headers: HTTPHeaders, body: String
            ) {
                let page = try await RawHTTP.get(harness.baseURL + "/account")
                let token = try #require(WebSession.hiddenFields(page.body)["login_token"])
                return try await RawHTTP.post(
                    signin,
                    fields: [("email", harness.email), ("password", password), ("login_token", token)],
                    cookie: (["kh_login=\(token)"] + cookies).joined(separator: "; "),
                    origin: harness.baseURL
                )
            }
            let first = try await attempt(password: harness.password)
            #expect(first.status == 303)
            let setCookie = try #require(first.headers["Set-Cookie"].first { $0.hasPrefix("kh_device=") })
            #expect(
                setCookie.contains("HttpOnly") && setCookie.contains("SameSite=Lax") && setCookie.contains("Max-Age=")
            )
            let device = String(setCookie.split(separator: ";")[0])

            // A stranger's wrong guesses from elsewhere lock the account for unknown devices.
            for _ in 0..<5 { _ = try await attempt(password: "wrong guess") }
            let unknown = try await attempt(password: harness.password)
            #expect(unknown.status == 429 && unknown.headers.first(name: "Retry-After") != nil)

            // The owner's browser, with its device cookie, signs in (and is not given another).
            let known = try await attempt(password: harness.password, cookies: [device])
            #expect(known.status == 303)
            #expect(!known.headers["Set-Cookie"].contains { $0.hasPrefix("kh_device=") })
            #expect(try await attempt(password: harness.password).status == 429)
        }
    }

    @Test func hammeringTheTokenEndpointWithBadCodesIsRefused() async throws {
        var configuration = ProviderHarness.configuration()
        configuration.tokenAddressThrottle = .init(
            allowedFailures: 8,
            firstLockout: 60_000,
            maxLockout: 60_000,
            forgetAfter: 600_000
        )
        try await ProviderHarness.with(configuration) { harness in
            let secret = try harness.client().clientSecret()
            func call(_ path: String, _ fields: [(String, String)]) async throws -> (Int, HTTPHeaders, String) {
                let response = try await RawHTTP.post(harness.baseURL + path, fields: fields)
                return (response.status, response.headers, response.body)
            }
            let guess = { (code: String) in
                [
                    ("grant_type", "authorization_code"), ("code", code), ("client_id", harness.clientId),
                    ("client_secret", secret), ("redirect_uri", harness.redirectURI),
                ]
            }
            for attempt in 0..<8 {
                let (status, _, body) = try await call("/auth/token", guess("guess-\(attempt)"))
                #expect(status == 400 && body.contains("invalid_grant"), "\(body)")
            }
            let (status, headers, body) = try await call("/auth/token", guess("guess-9"))
            #expect(status == 429, "\(body)")
            #expect(headers.first(name: "Retry-After") == "60")
            #expect(body.contains("Too many failed requests"))
            // Revocation shares the limit.
            let (revoked, _, _) = try await call(
                "/auth/revoke",
                [("client_id", harness.clientId), ("client_secret", secret), ("token", "made-up")]
            )
            #expect(revoked == 429)
        }
    }

    /// A service's backend refreshes many people's tokens at once from one address: none of those
    /// good calls may be refused (the limit counted calls in flight and answered 429 under load).
    @Test func manyConcurrentGoodRefreshesFromOneAddressAreNeverRefused() async throws {
        var configuration = ProviderHarness.configuration()
        configuration.tokenAddressThrottle = .init(
            allowedFailures: 3,
            firstLockout: 60_000,
            maxLockout: 60_000,
            forgetAfter: 600_000
        )
        configuration.tokenClientThrottle = configuration.tokenAddressThrottle
        try await ProviderHarness.with(configuration) { harness in
            let client = harness.client()
            let fields = try await harness.authorizeInBrowser()
            let code = try #require(fields["code"])
            let (tokens, _) = try await client.exchange(code: code, redirectURI: harness.redirectURI, nonce: "n-1")
            let refresh = try #require(tokens.refresh_token)
            let secret = try client.clientSecret()
            let body = [
                ("grant_type", "refresh_token"), ("refresh_token", refresh), ("client_id", harness.clientId),
                ("client_secret", secret),
            ]
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<40 {
                    group.addTask { try await RawHTTP.post(harness.baseURL + "/auth/token", fields: body).status }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses.count == 40 && statuses.allSatisfy { $0 == 200 }, "\(statuses)")
            // Failures still count: three wrong refresh tokens lock the address.
            var wrong = body
            wrong[1] = ("refresh_token", "made-up")
            for _ in 0..<3 {
                #expect(try await RawHTTP.post(harness.baseURL + "/auth/token", fields: wrong).status == 400)
            }
            #expect(try await RawHTTP.post(harness.baseURL + "/auth/token", fields: body).status == 429)
        }
    }
}
