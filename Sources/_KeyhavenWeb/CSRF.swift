public import HTTPTypes
public import Hummingbird
public import _KeyhavenSupport

/// Keyhaven's defences against cross-site request forgery, the same in the three apps:
///
/// - a **token** every state change carries, compared in constant time: a synchronizer token the
///   server keeps with the session (the web app's, the provider's consent and account forms:
///   ``matches(_:_:)``) or, before there is a session, a double-submit cookie (``DoubleSubmitToken``:
///   the provider's sign-in forms, shiny's forms);
/// - **where the browser says the request came from** (``isSameOrigin(_:originRequired:isOwn:)``).
public enum CSRF {
    /// The header the pages' own scripts send their token in (a page on another site cannot set it
    /// without a CORS preflight, which these servers never grant).
    public static let header = HTTPField.Name("X-CSRF-Token")!

    /// Whether `given` (a form's field or ``header``) is the session's token `expected`, compared in
    /// constant time. Nothing given, or no token kept, never matches.
    public static func matches(_ given: String?, _ expected: String) -> Bool {
        guard let given, !expected.isEmpty else { return false }
        return constantTimeEqual(given, expected)
    }

    /// Whether the browser says `request` comes from a page of this server:
    /// - `Sec-Fetch-Site`, when sent, is `same-origin`, or `none` (what the person did themselves:
    ///   no other site's page can cause it);
    /// - `Origin`, when sent, is an origin `isOwn` accepts; `Origin: null` (sandboxed frames, some
    ///   redirects) is refused. Without `Origin` (older browsers send none on some posts) the
    ///   request passes unless `originRequired`; the token still applies.
    public static func isSameOrigin(
        _ request: Request,
        originRequired: Bool,
        isOwn: (ServiceOrigin) -> Bool
    ) -> Bool {
        if let site = request.headers[.secFetchSite]?.lowercased(), site != "same-origin", site != "none" {
            return false
        }
        guard let header = request.headers[.origin] else { return !originRequired }
        guard let origin = ServiceOrigin.of(url: header) else { return false }
        return isOwn(origin)
    }
}

/// A double-submit CSRF token, for forms shown before there is a session: the page sets a random
/// cookie (HttpOnly, `SameSite=Lax`, `Secure` on https) and carries the same value in its forms; a
/// post must bring both, equal. A page on another site can neither read the cookie nor set it.
public struct DoubleSubmitToken: Sendable {
    public let cookieName: String
    /// How long the cookie lives, in seconds.
    public let maxAge: Int
    /// Where the tokens come from (16 random bytes each, as 32 hex digits).
    public let randomBytes: @Sendable (Int) -> [UInt8]

    public init(cookieName: String, maxAge: Int, randomBytes: @escaping @Sendable (Int) -> [UInt8]) {
        self.cookieName = cookieName
        self.maxAge = maxAge
        self.randomBytes = randomBytes
    }

    /// The token a page's forms carry, and the headers that set its cookie: the browser's own token
    /// when `reuse` and it holds a well-formed one (no header then), else a new one.
    public func issue(for request: Request, reuse: Bool, secure: Bool) -> (token: String, headers: HTTPFields) {
        if reuse, let token = request.cookies[cookieName]?.value, Self.isWellFormed(token) {
            return (token, [:])
        }
        let token = Hex.encode(randomBytes(16))
        let cookie = Cookie(
            name: cookieName,
            value: token,
            maxAge: maxAge,
            path: "/",
            secure: secure,
            httpOnly: true,
            sameSite: .lax
        )
        return (token, HTTPFields(cookies: cookie))
    }

    /// Whether `token` (a form's field, or ``CSRF/header``) equals the browser's cookie, compared in
    /// constant time; a missing or malformed cookie never matches.
    public func isGenuine(_ request: Request, token: String?) -> Bool {
        guard let cookie = request.cookies[cookieName]?.value, Self.isWellFormed(cookie) else { return false }
        return CSRF.matches(token, cookie)
    }

    /// 32 lowercase hex digits, as ``issue(for:reuse:secure:)`` makes them.
    public static func isWellFormed(_ token: String) -> Bool {
        token.utf8.count == 32 && token.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }
}

extension HTTPField.Name {
    static let secFetchSite = Self("Sec-Fetch-Site")!
}
