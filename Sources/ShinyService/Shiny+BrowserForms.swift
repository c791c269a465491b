import Crypto
import Foundation
import HTTPTypes
public import Hummingbird
public import NIOCore
import _KeyhavenSupport

/// shiny's request context: Hummingbird's basic one plus the peer's address, which the guessing
/// limits count against. (Behind a reverse proxy every client shares the proxy's address: a real
/// service reads the client's from the proxy's header, believed from that proxy only.)
public struct ShinyRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }
}

/// The defences of shiny's browser forms (security review L19, issue 13 #4), the pattern Keyhaven's
/// provider pages use:
///
/// - every form carries a CSRF token equal to the browser's `shiny_csrf` cookie (double submit: a
///   page on another site can neither read the cookie nor set it), compared in constant time;
/// - a post whose `Origin` (or `Sec-Fetch-Site`) names another site is refused even with the token;
/// - pages allow no script but shiny's own file (passkeys), only their own style sheet, fetches
///   and forms to shiny itself, and no framing (`frame-ancestors 'none'`, `X-Frame-Options: DENY`);
/// - cookies are `HttpOnly; SameSite=Lax`, and `Secure` when shiny is served over https.
extension Shiny {
    static let csrfCookie = "shiny_csrf"
    static let sessionCookie = "shiny_session"

    /// `; Secure` when shiny's public origin is https.
    var cookieSecurity: String { publicOrigin.isSecure ? "; Secure" : "" }

    func sessionCookieHeader(_ token: String) -> HTTPFields {
        [.setCookie: "\(Self.sessionCookie)=\(token); Path=/; HttpOnly; SameSite=Lax\(cookieSecurity)"]
    }

    /// The browser's CSRF token: its cookie's when it has a well-formed one, else a new one and the
    /// header that sets it.
    func formToken(_ request: Request) -> (token: String, headers: HTTPFields) {
        if let token = request.cookies[Self.csrfCookie]?.value, Self.isWellFormedToken(token) {
            return (token, [:])
        }
        let token = Hex.encode(ShinyStore.randomBytes(16))
        return (
            token,
            [.setCookie: "\(Self.csrfCookie)=\(token); Path=/; Max-Age=86400; HttpOnly; SameSite=Lax\(cookieSecurity)"]
        )
    }

    static func isWellFormedToken(_ token: String) -> Bool {
        token.utf8.count == 32 && token.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    /// Whether a form post comes from shiny's own page in this browser: the form's `csrf` equals
    /// the browser's cookie, and the browser does not say the post came from another site.
    func isGenuineForm(_ form: [String: String], _ request: Request) -> Bool {
        isGenuine(request, token: form["csrf"])
    }

    /// Whether `request` comes from shiny's own page in this browser: same origin, and `token` (a
    /// form's `csrf` field, or the `X-CSRF-Token` header of the pages' script) equal to the
    /// browser's cookie.
    func isGenuine(_ request: Request, token: String?) -> Bool {
        guard isSameOrigin(request), let cookie = request.cookies[Self.csrfCookie]?.value,
            Self.isWellFormedToken(cookie), let token
        else { return false }
        return constantTimeEqual(token, cookie)
    }

    /// No `Origin` (older browsers send none; the token still applies), or shiny's own public
    /// origin; `Origin: null` is refused. A `Sec-Fetch-Site` of `cross-site` or `same-site` is
    /// refused too.
    func isSameOrigin(_ request: Request) -> Bool {
        if let site = request.headers[HTTPField.Name("Sec-Fetch-Site")!]?.lowercased(),
            site == "cross-site" || site == "same-site"
        {
            return false
        }
        guard let origin = request.headers[.origin] else { return true }
        guard let sent = ServiceOrigin.of(url: origin), let own = ServiceOrigin.of(url: publicOrigin.current) else {
            return false
        }
        return sent == own
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

    /// No inline script (shiny's own script file only); the pages' one style sheet; fetches and
    /// forms to shiny only; never framed.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; "
        + "frame-ancestors 'none'; base-uri 'none'"

    /// A page: HTML, never cached, never framed, under ``contentSecurityPolicy``.
    static func html(_ page: HTML, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        var fields = headers
        fields[.contentType] = "text/html; charset=utf-8"
        fields[.cacheControl] = "no-store"
        fields[HTTPField.Name("Content-Security-Policy")!] = contentSecurityPolicy
        fields[HTTPField.Name("X-Frame-Options")!] = "DENY"
        fields[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        fields[HTTPField.Name("Referrer-Policy")!] = "same-origin"
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(string: page.rendered)))
    }
}
