import Foundation
import HTTPTypes
import Hummingbird
import _KeyhavenSupport
public import _KeyhavenWeb

/// shiny's request context: Keyhaven's web toolkit's (`_KeyhavenWeb`), Hummingbird's basic context
/// plus the peer's address, which the guessing limits count against. (Behind a reverse proxy every
/// client shares the proxy's address: a real service reads the client's from the proxy's header,
/// believed from that proxy only.) shiny is example code: a service that copies it writes the
/// toolkit's few pieces it uses — this context, the security-headers middleware, the strict form
/// reader, the double-submit token — in its own code, or uses Hummingbird's directly.
public typealias ShinyRequestContext = WebRequestContext

/// The defences of shiny's browser forms (security review L19, issue 13 #4), the pattern Keyhaven's
/// provider pages use (both through `_KeyhavenWeb`):
///
/// - every form carries a CSRF token equal to the browser's `shiny_csrf` cookie (double submit,
///   ``DoubleSubmitToken``: a page on another site can neither read the cookie nor set it),
///   compared in constant time;
/// - a post whose `Origin` (or `Sec-Fetch-Site`) names another site is refused even with the token;
/// - a form is read strictly (``WebForm``): a field given twice, or a body that is not a form, is
///   refused (400, 415) rather than read as the first copy or as an empty form;
/// - every response carries the security headers (``SecurityHeadersMiddleware``): pages allow no
///   script but shiny's own file (passkeys), only their own style sheet, fetches and forms to
///   shiny itself, and no framing (`frame-ancestors 'none'`, `X-Frame-Options: DENY`), with
///   `nosniff` and no caching;
/// - cookies are `HttpOnly; SameSite=Lax`, and `Secure` when shiny is served over https.
extension Shiny {
    static let csrfCookie = "shiny_csrf"
    static let sessionCookie = "shiny_session"

    /// No inline script (shiny's own script file only); the pages' one style sheet; fetches and
    /// forms to shiny only; never framed; never cached unless a route says so (its assets).
    static let securityHeaders = SecurityHeaders(contentSecurityPolicy: .ownOrigin(fetch: true))

    /// The style sheet, and the passkey script (`Resources/shiny-passkeys.js`).
    static let assets: [StaticAsset] = [
        .stylesheet(cacheControl: "max-age=3600"),
        .script("/assets/shiny-passkeys.js", PackageResources.shiny_passkeys_js, cacheControl: "max-age=300"),
    ]

    /// The forms' double-submit token: a day's cookie, kept while the browser holds a good one.
    static let csrfTokens = DoubleSubmitToken(cookieName: csrfCookie, maxAge: 86400) { ShinyStore.randomBytes($0) }

    func sessionCookieHeader(_ token: String) -> HTTPFields {
        HTTPFields(
            cookies: Cookie(
                name: Self.sessionCookie,
                value: token,
                path: "/",
                secure: publicOrigin.isSecure,
                httpOnly: true,
                sameSite: .lax
            )
        )
    }

    /// The browser's CSRF token: its cookie's when it has a well-formed one, else a new one and the
    /// header that sets it.
    func formToken(_ request: Request) -> (token: String, headers: HTTPFields) {
        Self.csrfTokens.issue(for: request, reuse: true, secure: publicOrigin.isSecure)
    }

    /// Whether a form post comes from shiny's own page in this browser: the form's `csrf` equals
    /// the browser's cookie, and the browser does not say the post came from another site.
    func isGenuineForm(_ form: [String: String], _ request: Request) -> Bool {
        isGenuine(request, token: form["csrf"])
    }

    /// Routes a form post: `handle` gets the form's fields only when the form is genuine
    /// (``isGenuineForm(_:_:)``); a forged or stale one gets ``staleForm(headers:)``. Every page's
    /// form posts through here, so none can skip the check.
    func postForm(
        _ path: RouterPath,
        to router: Router<ShinyRequestContext>,
        _ handle: @escaping @Sendable (Request, ShinyRequestContext, [String: String]) async throws -> Response
    ) {
        router.post(path) { request, context in
            let form = try await WebForm.fields(of: request)
            guard self.isGenuineForm(form, request) else { return Self.staleForm() }
            return try await handle(request, context, form)
        }
    }

    /// Whether `request` comes from shiny's own page in this browser: same origin (no `Origin`, or
    /// shiny's public origin; not `null`; no `Sec-Fetch-Site` of another site), and `token` (a
    /// form's `csrf` field, or the `X-CSRF-Token` header of the pages' script) equal to the
    /// browser's cookie.
    func isGenuine(_ request: Request, token: String?) -> Bool {
        let own = ServiceOrigin.of(url: publicOrigin.current)
        return CSRF.isSameOrigin(request, originRequired: false) { $0 == own }
            && Self.csrfTokens.isGenuine(request, token: token)
    }

    /// The page a forged or stale form gets.
    static func staleForm(headers: HTTPFields = [:]) -> Response {
        html(
            ShinyPages.message(
                "Please try again",
                "This form expired or did not come from shiny's own page. Reload the page and try again."
            ),
            status: .forbidden,
            headers: headers
        )
    }

    /// A page refused because of too many wrong guesses: 429 with `Retry-After`.
    static func tooMany(_ locked: ShinyThrottle.Locked, page: (String) -> HTML) -> Response {
        html(page(locked.message), status: .tooManyRequests, headers: [.retryAfter: String(locked.retryAfter)])
    }

    /// The address the guessing limits count against.
    static func clientAddress(_ context: some RequestContext) -> String? {
        (context as? any RemoteAddressRequestContext)?.remoteAddress?.ipAddress
    }

    /// A page (its security headers come from ``SecurityHeadersMiddleware``).
    static func html(_ page: HTML, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        HTMLResponse(page, status: status, headers: headers).response
    }

    /// A page with a form: `page` made with this browser's CSRF token (``formToken(_:)``), whose
    /// cookie the response sets.
    func formPage(_ request: Request, status: HTTPResponse.Status = .ok, _ page: (String) -> HTML) -> Response {
        let (token, headers) = formToken(request)
        return Self.html(page(token), status: status, headers: headers)
    }
}
