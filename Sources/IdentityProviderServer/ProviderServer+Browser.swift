import Foundation
import HTTPTypes
import Hummingbird
import IdentityProvider
import KeyhavenJOSE
import OneTimeCodes
import _KeyhavenSupport
import _KeyhavenWeb

/// The browser flow: sign-in page, consent, the response to the service; and the account page.
extension ProviderServer {
    static let sessionCookie = "kh_session"

    func sessionHeader(_ token: String) -> HTTPFields {
        HTTPFields(
            cookies: Cookie(
                name: Self.sessionCookie,
                value: token,
                path: "/",
                secure: secureCookies,
                httpOnly: true,
                sameSite: .lax
            )
        )
    }

    /// The known-device cookie (security review M9): given to a browser on a successful sign-in,
    /// it lets that browser's attempts count on a counter of their own, so a stranger who locks
    /// the account's counter (for unknown devices) does not lock its owner out. Random, HttpOnly,
    /// SameSite=Lax, Secure on https; the provider keeps only its hash.
    static let deviceCookie = "kh_device"

    /// The headers of a successful browser sign-in: the session cookie, and a known-device cookie
    /// unless the browser already holds a current one for this person.
    func signedInHeaders(
        _ token: String,
        _ authentication: Authentication,
        _ request: Request
    ) async throws -> HTTPFields {
        var headers = sessionHeader(token)
        let presented = Self.cookie(Self.deviceCookie, in: request)
        if try await !provider.isKnownDevice(presented, userId: authentication.userId) {
            let device = try await provider.rememberDevice(authentication)
            headers.setCookie(
                Cookie(
                    name: Self.deviceCookie,
                    value: device,
                    maxAge: Int(provider.configuration.knownDeviceLifetime),
                    path: "/",
                    secure: secureCookies,
                    httpOnly: true,
                    sameSite: .lax
                )
            )
        }
        return headers
    }

    /// The sign-in forms' CSRF defence (security review Medium #6, login CSRF): there is no session
    /// yet to bind a token to, so the page sets a random `kh_login` cookie (HttpOnly,
    /// SameSite=Lax) and carries the same value in the form (double submit); a post must bring
    /// both, equal, and — when the browser names one — an `Origin` that is the provider's own.
    static let loginCookie = "kh_login"

    /// The sign-in forms' double-submit token (``DoubleSubmitToken``), new for every page shown.
    var loginTokens: DoubleSubmitToken {
        DoubleSubmitToken(cookieName: Self.loginCookie, maxAge: 3600, randomBytes: provider.configuration.randomBytes)
    }

    func newLoginToken(_ request: Request) -> (token: String, headers: HTTPFields) {
        loginTokens.issue(for: request, reuse: false, secure: secureCookies)
    }

    func isGenuineSignIn(_ form: [String: String], _ request: Request) -> Bool {
        isSameOrigin(request) && loginTokens.isGenuine(request, token: form["login_token"])
    }

    /// Whether a browser post comes from the provider's own pages
    /// (``CSRF/isSameOrigin(_:originRequired:isOwn:)``): no `Origin` (older browsers send none; the
    /// form tokens still apply), or one naming where the provider is served — the public URL, or the
    /// host the request was sent to. `Origin: null` (sandboxed frames, some redirects), and a
    /// `Sec-Fetch-Site` of another site, are refused.
    func isSameOrigin(_ request: Request) -> Bool {
        let own = ServiceOrigin.of(url: endpointBase ?? provider.configuration.baseURL)
        let authority = request.head.authority?.lowercased()
        return CSRF.isSameOrigin(request, originRequired: false) { origin in
            if origin == own { return true }
            guard let authority else { return false }
            let written = origin.port.map { "\(origin.urlHost):\($0)" } ?? origin.urlHost
            return authority == written || authority == "\(origin.urlHost):\(origin.effectivePort)"
        }
    }

    /// The origin an authorization's answer goes to, for the pages' `form-action`.
    static func answerOrigin(_ authorization: AuthorizationRequest) -> String? {
        authorization.redirectURI.flatMap { ServiceOrigin.of(url: $0)?.serialized }
    }

    static func expiredSignIn() -> Response {
        html(
            ProviderPages.message(
                "Sign in with Keyhaven",
                "This sign-in page expired or did not come from Keyhaven. Start again from the service or the account page."
            ),
            status: .forbidden
        )
    }

    func currentSession(_ request: Request) async -> (token: String, authentication: Authentication)? {
        guard let token = Self.cookie(Self.sessionCookie, in: request),
            let authentication = try? await provider.session(token)
        else { return nil }
        return (token, authentication)
    }

    /// Sends the response to the service as the request's `response_mode` says.
    static func respond(_ response: AuthorizationResponse, to request: AuthorizationRequest) throws -> Response {
        guard let redirectURI = request.redirectURI else {
            return try json(.ok, response)
        }
        switch request.responseMode {
        case .formPost:
            return html(
                ProviderPages.formPost(to: redirectURI, fields: response.fields),
                formAction: ServiceOrigin.of(url: redirectURI)?.serialized
            )
        case .query:
            let separator = redirectURI.contains("?") ? "&" : "?"
            return redirect(redirectURI + separator + FormURLEncoding.encode(response.fields))
        case .fragment:
            return redirect(redirectURI + "#" + FormURLEncoding.encode(response.fields))
        }
    }

    /// Signed in: the consent step when this service is new to the person, else the response.
    func proceed(
        _ authorization: AuthorizationRequest,
        session: (token: String, authentication: Authentication),
        headers: HTTPFields = [:]
    ) async throws -> Response {
        if let prompt = try await provider.consentPrompt(authorization, userId: session.authentication.userId) {
            return Self.html(
                ProviderPages.consent(
                    prompt,
                    fields: authorization.parameters,
                    formToken: provider.formToken(forSession: session.token)
                ),
                headers: headers,
                formAction: Self.answerOrigin(authorization)
            )
        }
        let response = try await provider.authorize(
            authorization,
            authentication: session.authentication,
            shareEmail: nil
        )
        var result = try Self.respond(response, to: authorization)
        for field in headers { result.headers.append(field) }
        return result
    }

    func addAuthorizeRoutes(to router: Router<ProviderRequestContext>) {
        let provider = self.provider
        router.get("/auth/authorize") { request, _ in
            let parameters = try Self.query(request)
            switch try await provider.validateAuthorization(parameters) {
            case .failure(let error):
                return try Self.error(error)
            case .success(let authorization):
                if let session = await self.currentSession(request) {
                    return try await self.proceed(authorization, session: session)
                }
                let name = try await provider.client(authorization.clientId)?.name
                let login = self.newLoginToken(request)
                return Self.html(
                    ProviderPages.signIn(
                        action: "/auth/authorize",
                        serviceName: name,
                        fields: authorization.parameters,
                        loginToken: login.token
                    ),
                    headers: login.headers,
                    formAction: Self.answerOrigin(authorization)
                )
            }
        }
        router.post("/auth/authorize") { request, context in
            let (form, authorization) = try await self.authorizationForm(request)
            guard self.isGenuineSignIn(form, request) else { return Self.expiredSignIn() }
            if form["action"] == "cancel" {
                return try Self.respond(provider.cancelled(authorization), to: authorization)
            }
            let name = try await provider.client(authorization.clientId)?.name
            do {
                let authentication = try await self.authenticate(form, request, context)
                let token = try await provider.startSession(authentication)
                return try await self.proceed(
                    authorization,
                    session: (token, authentication),
                    headers: self.signedInHeaders(token, authentication, request)
                )
            } catch let error as ProviderError {
                return Self.signInAgain(
                    error,
                    action: "/auth/authorize",
                    serviceName: name,
                    fields: authorization.parameters,
                    form: form,
                    formAction: Self.answerOrigin(authorization)
                )
            }
        }
        router.post("/auth/authorize/consent") { request, _ in
            let (form, authorization) = try await self.authorizationForm(request)
            guard self.isSameOrigin(request), let session = await self.currentSession(request),
                self.validFormToken(form, session: session)
            else {
                return Self.html(
                    ProviderPages.message("Sign in with Keyhaven", "Your session ended. Start again from the service."),
                    status: .forbidden
                )
            }
            if form["action"] == "cancel" {
                return try Self.respond(provider.cancelled(authorization), to: authorization)
            }
            let share = form["share_email"] != "hide"
            let response = try await provider.authorize(
                authorization,
                authentication: session.authentication,
                shareEmail: authorization.wantsEmail ? share : nil
            )
            return try Self.respond(response, to: authorization)
        }
    }

    // MARK: Account page

    func addAccountRoutes(to router: Router<ProviderRequestContext>) {
        let provider = self.provider
        router.get("/account") { request, _ in
            guard let session = await self.currentSession(request) else {
                let login = self.newLoginToken(request)
                return Self.html(
                    ProviderPages.signIn(
                        action: "/account/signin",
                        serviceName: nil,
                        fields: [],
                        loginToken: login.token
                    ),
                    headers: login.headers
                )
            }
            return try await self.accountPage(session, message: try Self.query(request)["message"])
        }
        router.post("/account/signin") { request, context in
            let form = try Self.answer(await Self.oauthForm(request))
            guard self.isGenuineSignIn(form, request) else { return Self.expiredSignIn() }
            do {
                let authentication = try await self.authenticate(form, request, context)
                let token = try await provider.startSession(authentication)
                return Self.redirect(
                    "/account",
                    headers: try await self.signedInHeaders(token, authentication, request)
                )
            } catch let error as ProviderError {
                return Self.signInAgain(error, action: "/account/signin", serviceName: nil, fields: [], form: form)
            }
        }
        router.post("/account/services/stop") { request, _ in
            try await self.accountAction(request) { session, form in
                try await provider.stopUsing(userId: session.authentication.userId, clientId: form["client_id"] ?? "")
                return "Stopped using Sign in with Keyhaven with \(form["client_id"] ?? "")."
            }
        }
        router.post("/account/services/relay") { request, _ in
            try await self.accountAction(request) { session, form in
                let enabled = form["enabled"] == "1"
                try await provider.setRelayForwarding(
                    userId: session.authentication.userId,
                    clientId: form["client_id"] ?? "",
                    enabled: enabled
                )
                return "Forwarding turned \(enabled ? "on" : "off")."
            }
        }
        router.post("/account/delete") { request, _ in
            guard self.isSameOrigin(request), let form = await Self.form(request),
                let session = await self.currentSession(request),
                self.validFormToken(form, session: session), form["confirm"] == "yes"
            else {
                return Self.html(
                    ProviderPages.message("Not deleted", "Confirm the deletion to delete."),
                    status: .badRequest
                )
            }
            try await provider.deleteAccount(userId: session.authentication.userId)
            return Self.html(
                ProviderPages.message("Account deleted", "Your account is deleted; every service you used was told."),
                headers: HTTPFields(cookies: .expired(Self.sessionCookie))
            )
        }
        router.post("/account/signout") { request, _ in
            if self.isSameOrigin(request), let form = await Self.form(request),
                let session = await self.currentSession(request), self.validFormToken(form, session: session)
            {
                try await provider.endSession(session.token)
            }
            return Self.redirect("/account", headers: HTTPFields(cookies: .expired(Self.sessionCookie)))
        }
    }

    /// The consent and account forms' synchronizer token: the session's own (``CSRF/matches(_:_:)``).
    func validFormToken(_ form: [String: String], session: (token: String, authentication: Authentication)) -> Bool {
        CSRF.matches(form["form_token"], provider.formToken(forSession: session.token))
    }

    func accountAction(
        _ request: Request,
        _ action: @Sendable ((token: String, authentication: Authentication), [String: String]) async throws -> String
    ) async throws -> Response {
        guard isSameOrigin(request), let form = await Self.form(request),
            let session = await currentSession(request), validFormToken(form, session: session)
        else { return Self.redirect("/account") }
        let message: String
        do {
            message = try await action(session, form)
        } catch let error as ProviderError {
            message = error.message
        }
        return Self.redirect("/account?message=" + FormURLEncoding.escape(message))
    }

    func accountPage(
        _ session: (token: String, authentication: Authentication),
        message: String?
    ) async throws -> Response {
        let services = try await provider.connectedServices(userId: session.authentication.userId)
        let email = try await provider.email(userId: session.authentication.userId) ?? ""
        return Self.html(
            ProviderPages.account(
                email: email,
                services: services,
                formToken: provider.formToken(forSession: session.token),
                message: message
            )
        )
    }

    /// A browser form that carries an authorization request: its fields and the validated request;
    /// throws the OAuth error Apple answers with otherwise.
    func authorizationForm(_ request: Request) async throws -> ([String: String], AuthorizationRequest) {
        let form = try Self.answer(await Self.oauthForm(request))
        return (form, try Self.answer(try await provider.validateAuthorization(form)))
    }
}
