import AccountModification
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import OneTimeCodes
import ShinyService
import Synchronization
import Testing

/// Security review L19 and issue 13 #4/#8 for shiny, the example service developers copy: its
/// forms resist CSRF (token and `Origin`) and framing, its pages run no script, its cookies are
/// HttpOnly/SameSite(/Secure), Sign in with Keyhaven is bound to the browser that started it, and
/// every password or code check is throttled per account and per address.
struct ShinyBrowserSecurityTests {
    typealias Page = ShinyPagesTests.Page

    /// A clock the test moves.
    final class TestClock: Sendable {
        private let current = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        var now: Date { current.withLock { $0 } }
        func advance(_ seconds: TimeInterval) { current.withLock { $0 += seconds } }
    }

    static func post(
        _ client: some TestClientProtocol,
        _ path: String,
        _ fields: [(String, String)],
        headers: HTTPFields = [:]
    ) async throws -> Page {
        var all = headers
        all[.contentType] = "application/x-www-form-urlencoded"
        return try await client.execute(uri: path, method: .post, headers: all, body: ShinyPagesTests.form(fields)) {
            Page(status: $0.status, headers: $0.headers, body: String(buffer: $0.body))
        }
    }

    static func json(
        _ client: some TestClientProtocol,
        _ path: String,
        _ body: some Encodable
    ) async throws -> (status: HTTPResponse.Status, headers: HTTPFields, body: String) {
        try await client.execute(
            uri: path,
            method: .post,
            headers: [.contentType: "application/json"],
            body: ByteBuffer(bytes: try JSONEncoder().encode(body))
        ) { ($0.status, $0.headers, String(buffer: $0.body)) }
    }

    // MARK: CSRF and Origin

    @Test(arguments: ["/signin", "/signup", "/account/password"])
    func formsRefuseCrossSitePosts(path: String) async throws {
        let shiny = try Shiny(configuration: .init(scryptLogN: 10))
        try shiny.createAccount(user: "mallory", password: "Mallory-Password-1")
        let fields = [
            ("user", "mallory"), ("password", "Mallory-Password-1"), ("current", "Mallory-Password-1"),
            ("new", "Mallory-Password-2"),
        ]
        try await Application(router: shiny.router()).test(.router) { client in
            // An attacker's page posts with no token (it cannot read shiny's pages): refused.
            let bare = try await Self.post(client, path, fields)
            #expect(bare.status == .forbidden && bare.body.contains("did not come from shiny"))
            // A token it made up, with no cookie (it cannot set one for shiny): refused.
            let forged = try await Self.post(client, path, fields + [("csrf", String(repeating: "a", count: 32))])
            #expect(forged.status == .forbidden)
            // A cookie and a field that differ: refused.
            let mismatched = try await Self.post(
                client,
                path,
                fields + [("csrf", String(repeating: "a", count: 32))],
                headers: [.cookie: "shiny_csrf=" + String(repeating: "b", count: 32)]
            )
            #expect(mismatched.status == .forbidden)
            // Even a matching pair (say, from the attacker's own visit) is refused from another
            // origin, from `Origin: null`, and when the browser says the post is cross-site.
            let page = try await ShinyPagesTests.get(client, path)
            let token = try #require(ShinyPagesTests.csrfToken(page.body))
            let cookie = try #require(ShinyPagesTests.setCookie(page, "shiny_csrf"))
            for headers: HTTPFields in [
                [.cookie: cookie, .origin: "https://attacker.example"],
                [.cookie: cookie, .origin: "null"],
                [.cookie: cookie, HTTPField.Name("Sec-Fetch-Site")!: "cross-site"],
            ] {
                let refused = try await Self.post(client, path, fields + [("csrf", token)], headers: headers)
                #expect(refused.status == .forbidden, "\(headers)")
            }
            // Nothing happened: mallory's password is unchanged and no session was opened.
            #expect(try shiny.signIn(user: "mallory", password: "Mallory-Password-1"))
            #expect(try shiny.sessionCount(user: "mallory") == 0)
            // shiny's own page, as a browser posts it (with shiny's own origin): accepted.
            let genuine = try await Self.post(
                client,
                path,
                fields + [("csrf", token)],
                headers: [.cookie: cookie, .origin: shiny.origin]
            )
            #expect(genuine.status != .forbidden)
        }
    }

    @Test func stepUpFormsRefuseCrossSitePosts() async throws {
        let shiny = try Shiny(configuration: .init(scryptLogN: 10))
        let secret = try #require(try shiny.createAccount(user: "bob", password: "Welcome12345", totp: true))
        try await Application(router: shiny.router()).test(.router) { client in
            for interaction in [Interaction.none, .allowed] {
                _ = try await ShinyKitTests.post(
                    client,
                    "/account-modification/change-password",
                    ShinyKitTests.change("csrf-1", user: "bob", password: "Welcome12345", interaction: interaction)
                )
            }
            let code = try TOTP(secret: secret).code(at: Date())
            // A page elsewhere submits the confirmation or the cancel: refused, the request stays open.
            #expect(
                try await Self.post(client, "/account-modification/step-up/csrf-1", [("code", code)]).status
                    == .forbidden
            )
            #expect(
                try await Self.post(client, "/account-modification/step-up/csrf-1/cancel", []).status == .forbidden
            )
            #expect(
                try await ShinyKitTests.get(client, "/account-modification/requests/csrf-1").1.contains(
                    "presentInterface"
                )
            )
            // The page itself works.
            let done = try await ShinyPagesTests.post(client, "/account-modification/step-up/csrf-1", [("code", code)])
            #expect(done.body.contains("Your password was changed"))
        }
    }

    // MARK: Headers and cookies

    @Test func pagesForbidFramingAndInlineScriptAndCookiesAreHttpOnly() async throws {
        let shiny = try Shiny(configuration: .init(scryptLogN: 10))
        try await Application(router: shiny.router()).test(.router) { client in
            for path in ["/", "/signin", "/signup", "/account/password"] {
                let page = try await ShinyPagesTests.get(client, path)
                let policy = try #require(page.headers[HTTPField.Name("Content-Security-Policy")!], "\(path)")
                #expect(policy.contains("frame-ancestors 'none'"))
                // Scripts from shiny's own files only (passkeys), never inline.
                #expect(policy.contains("default-src 'none'") && policy.contains("script-src 'self';"))
                #expect(!policy.contains("unsafe-inline") && policy.contains("form-action 'self'"))
                #expect(page.headers[HTTPField.Name("X-Frame-Options")!] == "DENY")
                let scripts = page.body.components(separatedBy: "<script").dropFirst()
                #expect(scripts.allSatisfy { $0.hasPrefix(#" src="/assets/shiny-passkeys.js"></script>"#) }, "\(path)")
            }
            let signIn = try await ShinyPagesTests.get(client, "/signin")
            let csrf = try #require(signIn.headers[values: .setCookie].first { $0.hasPrefix("shiny_csrf=") })
            #expect(csrf.contains("HttpOnly") && csrf.contains("SameSite=Lax") && !csrf.contains("Secure"))
        }
        // Served over https, every cookie is Secure.
        let https = try Shiny(configuration: .init(publicURL: "https://shiny.example", scryptLogN: 10))
        try https.createAccount(user: "alice", password: "Password1234")
        try await Application(router: https.router()).test(.router) { client in
            let page = try await ShinyPagesTests.get(client, "/signin")
            let token = try #require(ShinyPagesTests.csrfToken(page.body))
            let csrf = try #require(page.headers[values: .setCookie].first { $0.hasPrefix("shiny_csrf=") })
            #expect(csrf.contains("Secure") && csrf.contains("HttpOnly"))
            let signedIn = try await Self.post(
                client,
                "/signin",
                [("user", "alice"), ("password", "Password1234"), ("csrf", token)],
                headers: [.cookie: String(csrf.split(separator: ";")[0]), .origin: "https://shiny.example"]
            )
            #expect(signedIn.status == .seeOther)
            let session = try #require(signedIn.headers[values: .setCookie].first { $0.hasPrefix("shiny_session=") })
            #expect(session.contains("Secure") && session.contains("HttpOnly") && session.contains("SameSite=Lax"))
        }
    }

    // MARK: Guessing limits

    @Test func signInIsThrottledPerAccountWithAnInjectedClock() async throws {
        let clock = TestClock()
        let shiny = try Shiny(configuration: .init(scryptLogN: 10, now: { clock.now }))
        try shiny.createAccount(user: "alice", password: "Password1234")
        try await Application(router: shiny.router()).test(.router) { client in
            for _ in 0..<5 {
                let wrong = try await Self.json(
                    client,
                    "/api/signin",
                    ShinySignInRequest(user: "alice", password: "guess")
                )
                #expect(wrong.status == .unauthorized)
            }
            // Locked: even the right password is not checked now.
            let locked = try await Self.json(
                client,
                "/api/signin",
                ShinySignInRequest(user: "alice", password: "Password1234")
            )
            #expect(locked.status == .tooManyRequests && locked.body.contains("too_many_attempts"))
            #expect(locked.headers[.retryAfter] == "30")
            // The page is throttled by the same counter.
            let page = try await ShinyPagesTests.post(
                client,
                "/signin",
                [("user", "alice"), ("password", "Password1234")]
            )
            #expect(page.status == .tooManyRequests && page.headers[.retryAfter] != nil)

            clock.advance(31)
            let open = try await Self.json(
                client,
                "/api/signin",
                ShinySignInRequest(user: "alice", password: "Password1234")
            )
            #expect(open.status == .ok)
            // A success clears the count: five more wrong guesses are allowed before the next lock.
            for _ in 0..<4 {
                #expect(
                    try await Self.json(client, "/api/signin", ShinySignInRequest(user: "alice", password: "x")).status
                        == .unauthorized
                )
            }
            #expect(
                try await Self.json(client, "/api/signin", ShinySignInRequest(user: "alice", password: "Password1234"))
                    .status == .ok
            )
        }
    }

    @Test func changePasswordIsNoUnthrottledPasswordOracle() async throws {
        let clock = TestClock()
        let shiny = try Shiny(configuration: .init(scryptLogN: 10, now: { clock.now }))
        try shiny.createAccount(user: "alice", password: "Password1234")
        try shiny.createAccount(user: "erin", password: "Erin-Password-2026")
        try await Application(router: shiny.router()).test(.router) { client in
            // The protocol endpoint: wrong current passwords under fresh request ids.
            for attempt in 0..<5 {
                let (_, wrong) = try await ShinyKitTests.post(
                    client,
                    "/account-modification/change-password",
                    ShinyKitTests.change("oracle-\(attempt)", password: "guess-\(attempt)")
                )
                #expect(wrong?.status == .failed)
            }
            let (_, locked) = try await ShinyKitTests.post(
                client,
                "/account-modification/change-password",
                ShinyKitTests.change("oracle-right")
            )
            #expect(locked?.status == .failed)
            #expect(locked?.error?.localizedFailureReason?.hasPrefix("Too many attempts") == true)
            #expect(try shiny.signIn(user: "alice", password: "Password1234"))  // unchanged

            // The change-password page.
            for _ in 0..<5 {
                let wrong = try await ShinyPagesTests.post(
                    client,
                    "/account/password",
                    [("user", "erin"), ("current", "guess"), ("new", "Erin-Password-2027")]
                )
                #expect(wrong.status == .unauthorized)
            }
            let page = try await ShinyPagesTests.post(
                client,
                "/account/password",
                [("user", "erin"), ("current", "Erin-Password-2026"), ("new", "Erin-Password-2027")]
            )
            #expect(page.status == .tooManyRequests)
            #expect(try shiny.signIn(user: "erin", password: "Erin-Password-2026"))
        }
    }

    @Test func stepUpCodesCountAcrossRequests() async throws {
        let clock = TestClock()
        let shiny = try Shiny(configuration: .init(scryptLogN: 10, now: { clock.now }))
        let secret = try #require(try shiny.createAccount(user: "bob", password: "Welcome12345", totp: true))
        let right = try TOTP(secret: secret).code(at: Date())
        let wrong = right == "000000" ? "111111" : "000000"
        try await Application(router: shiny.router()).test(.router) { client in
            // Opening new requests used to give five fresh guesses each: the account's count goes on.
            for (id, guesses) in [("guess-a", 3), ("guess-b", 2)] {
                for interaction in [Interaction.none, .allowed] {
                    _ = try await ShinyKitTests.post(
                        client,
                        "/account-modification/change-password",
                        ShinyKitTests.change(id, user: "bob", password: "Welcome12345", interaction: interaction)
                    )
                }
                for _ in 0..<guesses {
                    let page = try await ShinyPagesTests.post(
                        client,
                        "/account-modification/step-up/\(id)",
                        [("code", wrong)]
                    )
                    #expect(page.status == .unauthorized)
                }
            }
            let locked = try await ShinyPagesTests.post(
                client,
                "/account-modification/step-up/guess-b",
                [("code", right)]
            )
            #expect(locked.status == .tooManyRequests, "\(locked.body)")
            #expect(
                try await ShinyKitTests.get(client, "/account-modification/requests/guess-b").1.contains(
                    "presentInterface"
                )
            )
            clock.advance(31)
            let done = try await ShinyPagesTests.post(
                client,
                "/account-modification/step-up/guess-b",
                [("code", right)]
            )
            #expect(done.body.contains("Your password was changed"))
        }
    }

    @Test func guessesAreThrottledPerAddress() async throws {
        let shiny = try Shiny(
            configuration: .init(
                scryptLogN: 10,
                accountThrottle: .unlimited,
                addressThrottle: .init(
                    allowedFailures: 3,
                    firstLockout: 60_000,
                    maxLockout: 60_000,
                    forgetAfter: 600_000
                )
            )
        )
        try shiny.createAccount(user: "zoe", password: "Zoe-Password-2026")
        try await Application(router: shiny.router()).test(.live) { client in
            // One place guessing many accounts.
            for user in ["a", "b", "c"] {
                let wrong = try await Self.json(
                    client,
                    "/api/signin",
                    ShinySignInRequest(user: user, password: "guess")
                )
                #expect(wrong.status == .unauthorized)
            }
            let locked = try await Self.json(
                client,
                "/api/signin",
                ShinySignInRequest(user: "zoe", password: "Zoe-Password-2026")
            )
            #expect(locked.status == .tooManyRequests)
        }
    }

    // MARK: Sign in with Keyhaven

    @Test func signInWithKeyhavenIsBoundToTheBrowserThatStartedIt() async throws {
        let shiny = try Shiny(configuration: .init(scryptLogN: 10))
        try shiny.enableSignIn(
            .init(
                issuer: "http://127.0.0.1:9",
                providerURL: "http://127.0.0.1:9",
                clientId: "com.example.shiny",
                teamId: "TEAM",
                keyId: "KEY",
                privateKeyPEM: P256.Signing.PrivateKey().pemRepresentation,
                redirectURI: shiny.origin + Shiny.signInCallbackPath
            )
        )
        try await Application(router: shiny.router()).test(.router) { client in
            // The attacker starts a sign-in in its own browser: a state, bound to its cookie.
            let started = try await ShinyPagesTests.get(client, "/signin/keyhaven")
            let location = try #require(started.headers[.location])
            let state = try #require(location.firstMatch(of: #/[?&]state=([^&]+)/#).map { String($0.output.1) })
            let attackerCookie = try #require(ShinyPagesTests.setCookie(started, "shiny_signin"))
            #expect(
                started.headers[values: .setCookie].contains { $0.contains("HttpOnly") && $0.contains("SameSite=Lax") }
            )

            // It makes the victim's browser post the provider's answer (its own account's code).
            let callback = try await Self.post(
                client,
                Shiny.signInCallbackPath,
                [("state", state.removingPercentEncoding ?? state), ("code", "attackers-code")]
            )
            #expect(callback.status == .seeOther)
            let finish = try #require(callback.headers[.location])
            #expect(finish.hasPrefix("/signin/keyhaven/finish?handoff="))
            // The victim's browser follows without the attacker's cookie: refused, no session.
            let refused = try await ShinyPagesTests.get(client, finish, cookie: "shiny_signin=victims-own-value")
            #expect(refused.status == .forbidden && refused.body.contains("did not start in this browser"))
            #expect(ShinyPagesTests.session(refused) == nil)
            // The handoff and the state are used up.
            #expect(try await ShinyPagesTests.get(client, finish, cookie: attackerCookie).status == .badRequest)

            // The browser that started a sign-in passes the binding (and reaches the code exchange,
            // which fails here: no provider listens).
            let own = try await ShinyPagesTests.get(client, "/signin/keyhaven")
            let ownState = try #require(
                own.headers[.location]?.firstMatch(of: #/[?&]state=([^&]+)/#).map { String($0.output.1) }
            )
            let ownCookie = try #require(ShinyPagesTests.setCookie(own, "shiny_signin"))
            let ownCallback = try await Self.post(
                client,
                Shiny.signInCallbackPath,
                [("state", ownState.removingPercentEncoding ?? ownState), ("code", "a-code")]
            )
            let ownFinish = try #require(ownCallback.headers[.location])
            let exchanged = try await ShinyPagesTests.get(client, ownFinish, cookie: ownCookie)
            #expect(exchanged.status == .badGateway, "\(exchanged.body)")
        }
    }
}
