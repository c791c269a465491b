import AccountModification
import Foundation
import HTTPTypes
import Hummingbird
import KeyhavenJOSE
import RelyingParty
import Synchronization
import _KeyhavenSupport
import _KeyhavenWeb

/// "Sign in with Keyhaven" on shiny's pages, and the provider's server-to-server notifications.
extension Shiny {
    /// The callback path to register with the provider as a redirect URI.
    public static let signInCallbackPath = "/signin/keyhaven/callback"
    /// The path to register as the notification endpoint.
    public static let notificationPath = "/signin/keyhaven/notifications"

    /// Turns on Sign in with Keyhaven (and upgrades to it): the manifest starts offering them.
    public func enableSignIn(_ configuration: ShinySignInConfiguration) throws {
        try signIn.configure(configuration)
    }

    /// The `sub` an account is linked to, if it signs in with Keyhaven.
    public func linkedSubject(user: String) throws -> String? {
        try store.user(named: user)?.signInSubject
    }

    /// Whether the account still has a password.
    public func hasPassword(user: String) throws -> Bool {
        try store.user(named: user)?.hasPassword ?? false
    }

    /// The notification events shiny accepted, oldest first (`type` and `sub`).
    public var receivedNotifications: [(type: String, sub: String)] {
        signIn.notifications.withLock { $0.map { ($0.type, $0.sub) } }
    }

    /// How many sessions an account has open (the notification tests watch them end).
    public func sessionCount(user: String) throws -> Int {
        guard let user = try store.user(named: user) else { return 0 }
        return try store.sessionCount(for: user.id)
    }

    /// Opens a session (as a sign-in would); returns its token.
    public func startSession(user: String) throws -> String? {
        guard let user = try store.user(named: user) else { return nil }
        return try store.createSession(for: user.id)
    }

    /// Where the callback sends the browser on, to finish in a request that carries its cookies.
    static let signInFinishPath = "/signin/keyhaven/finish"
    static let signInCookie = "shiny_signin"

    /// The sign-in page again, with why Sign in with Keyhaven did not work.
    func signInPage(_ request: Request, error: String, status: HTTPResponse.Status) -> Response {
        formPage(request, status: status) { ShinyPages.signIn(csrf: $0, error: error) }
    }

    /// Sign in with Keyhaven in the browser. The provider answers with a cross-site `form_post`,
    /// which carries no SameSite=Lax cookie, so the callback cannot tell whose browser it is in: it
    /// keeps the answer for a minute under a random id and sends the browser on (303) to
    /// ``signInFinishPath``, a top-level GET that does carry shiny's cookies. There the sign-in
    /// finishes only if the browser holds the `shiny_signin` cookie set when *it* started this
    /// sign-in: an attacker's authorization posted into someone else's browser (login CSRF, review
    /// L19) is refused.
    func addSignIn(to router: Router<ShinyRequestContext>) {
        router.get("/signin/keyhaven") { _, _ in
            guard let (configuration, _) = self.signIn.configured else {
                return Self.html(ShinyPages.notFound(), status: .notFound)
            }
            let started = self.signIn.begin()
            let query = FormURLEncoding.encode([
                ("client_id", configuration.clientId), ("redirect_uri", configuration.redirectURI),
                ("response_type", "code"), ("response_mode", "form_post"), ("scope", "name email"),
                ("state", started.state), ("nonce", started.nonce),
            ])
            return Self.redirect(
                configuration.providerURL + "/auth/authorize?" + query,
                headers: HTTPFields(
                    cookies: Cookie(
                        name: Self.signInCookie,
                        value: started.browser,
                        maxAge: 600,
                        path: "/signin/keyhaven",
                        secure: self.publicOrigin.isSecure,
                        httpOnly: true,
                        sameSite: .lax
                    )
                )
            )
        }
        router.post(RouterPath(stringLiteral: Self.signInCallbackPath)) { request, _ in
            let form = try await WebForm.fields(of: request)
            guard self.signIn.configured != nil else {
                return Self.html(ShinyPages.notFound(), status: .notFound)
            }
            guard let handoff = self.signIn.hold(state: form["state"] ?? "", code: form["code"], error: form["error"])
            else {
                return self.signInPage(request, error: "That sign-in expired; try again.", status: .badRequest)
            }
            return Self.redirect(Self.signInFinishPath + "?handoff=" + handoff)
        }
        router.get(RouterPath(stringLiteral: Self.signInFinishPath)) { request, _ in
            guard let (configuration, client) = self.signIn.configured else {
                return Self.html(ShinyPages.notFound(), status: .notFound)
            }
            let handoff = try WebForm.query(of: request)["handoff"] ?? ""
            guard let answer = self.signIn.take(handoff: handoff) else {
                return self.signInPage(request, error: "That sign-in expired; try again.", status: .badRequest)
            }
            guard
                let nonce = self.signIn.finish(
                    state: answer.state,
                    browser: request.cookies[Self.signInCookie]?.value ?? ""
                )
            else {
                return self.signInPage(
                    request,
                    error: "This sign-in did not start in this browser. Start again from shiny's sign-in page.",
                    status: .forbidden
                )
            }
            if let error = answer.error {
                return self.signInPage(request, error: "Sign in with Keyhaven was cancelled (\(error)).", status: .ok)
            }
            guard let code = answer.code else {
                return self.signInPage(request, error: "The provider sent no code.", status: .badRequest)
            }
            do {
                let (_, claims) = try await client.exchange(
                    code: code,
                    redirectURI: configuration.redirectURI,
                    nonce: nonce
                )
                let user =
                    try self.store.user(signInSubject: claims.sub)
                    ?? self.store.createLinkedUser(name: claims.email ?? claims.sub, subject: claims.sub)
                let token = try self.store.createSession(for: user.id)
                var headers = self.sessionCookieHeader(token)
                headers.setCookie(.expired(Self.signInCookie, path: "/signin/keyhaven"))
                return Self.redirect("/account", headers: headers)
            } catch {
                return self.signInPage(
                    request,
                    error: "Sign in with Keyhaven did not work: \(error)",
                    status: .badGateway
                )
            }
        }
        router.post(RouterPath(stringLiteral: Self.notificationPath)) { request, _ in
            guard let (_, client) = self.signIn.configured,
                let body = try? await request.body.collect(upTo: 1 << 16)
            else { return Response(status: .notFound) }
            let event: NotificationEvent
            do {
                event = try await client.verifier.verifyNotification(Array(body.readableBytesView)).event
            } catch {
                throw ShinyAPIError(.badRequest, "invalid_notification", "invalid notification: \(error)")
            }
            switch event.kind {
            case .consentRevoked:
                // Treated as a sign-out: every session of the linked account ends.
                if let user = try self.store.user(signInSubject: event.sub) { try self.store.endSessions(for: user.id) }
            case .accountDelete:
                if let user = try self.store.user(signInSubject: event.sub) {
                    try self.store.endSessions(for: user.id)
                    try self.store.unlinkSignIn(subject: event.sub)
                }
            case .emailDisabled, .emailEnabled, .none:
                break  // shiny sends no mail; a real service would pause or resume it here
            }
            self.signIn.notifications.withLock { $0.append(event) }
            return Response(status: .ok)
        }
    }
}
