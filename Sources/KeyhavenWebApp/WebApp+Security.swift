import Foundation
import HTTPTypes
public import Hummingbird
import NIOCore
import _KeyhavenSupport
import _KeyhavenWeb

/// The app's request context: the capability the path carried (``SessionPaths``), and the session
/// the cookie and that capability name together, once ``WebAppGuard`` found it.
public struct WebAppContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The `CAPABILITY` of a request for `/s/CAPABILITY/…` (routed as `/…`).
    var capability: String?
    var token: String?
    var session: WebApp.Session?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
    }

    /// The session's CSRF token (empty before a session exists).
    var csrf: String { session?.csrf ?? "" }

    /// What the session's pages need: its CSRF token and the base of its paths (`/s/CAPABILITY`).
    /// Pages are only served once ``WebAppGuard`` found the session the capability belongs to.
    var page: WebAppPages.Session {
        WebAppPages.Session(csrf: csrf, base: capability.map { "/s/\($0)" } ?? "")
    }

    /// `path` (an app path such as `/vault`) inside the session: `/s/CAPABILITY/vault`.
    func path(_ path: String) -> String { page.path(path) }
}

/// Routes `/s/CAPABILITY/rest` as `/rest`, with `CAPABILITY` in the context for ``WebAppGuard``
/// (security review #5). Cookies ignore ports (RFC 6265 §8.5), so the session cookie may reach
/// another server on 127.0.0.1; the capability does not: it is only in the app's own URLs, which no
/// other origin reads (same-origin policy) or is told (`Referrer-Policy: same-origin` names the
/// port too), and the cookie's `Path` is `/s/CAPABILITY/`, so browsers do not even send the cookie
/// to `/` of another port. A session needs both.
struct SessionPaths<Inner: HTTPResponder>: HTTPResponder where Inner.Context == WebAppContext {
    let inner: Inner

    func respond(to request: Request, context: WebAppContext) async throws -> Response {
        guard let path = request.head.path, let (capability, rest) = Self.split(path) else {
            return try await inner.respond(to: request, context: context)
        }
        var head = request.head
        head.path = rest
        var context = context
        context.capability = capability
        return try await inner.respond(to: Request(head: head, body: request.body), context: context)
    }

    /// `/s/CAPABILITY/rest?query` → (`CAPABILITY`, `/rest?query`); nil for any other path.
    static func split(_ path: String) -> (capability: String, rest: String)? {
        guard path.hasPrefix("/s/") else { return nil }
        let tail = path.dropFirst(3)
        guard let slash = tail.firstIndex(of: "/") else { return nil }
        let capability = String(tail[..<slash])
        guard !capability.isEmpty, capability.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
        else { return nil }
        return (capability, String(tail[slash...]))
    }
}

/// Every request passes here first (after ``SecurityHeadersMiddleware``, which gives every response
/// the security headers): `Host` must name this app on loopback (DNS rebinding), a query may not
/// repeat a field (``WebForm``), pages other than the launch and the assets need the session (the
/// cookie *and* the path's capability), and state changes need a same-origin `Origin` (and the
/// CSRF token: here for `/api/…`, where the body is read for forms). What goes wrong becomes a
/// ``WebAppError``, which renders itself: a page, or JSON under `/api/`.
struct WebAppGuard: RouterMiddleware {
    let app: WebApp

    static let publicPaths: Set<String> = Set(["/launch", "/favicon.ico"] + WebApp.assets.map(\.path))

    func handle(
        _ request: Request,
        context: WebAppContext,
        next: (Request, WebAppContext) async throws -> Response
    ) async throws -> Response {
        do {
            return try await check(request, context: context, next: next)
        } catch let error as WebAppError where error.code == .locked && !request.uri.path.hasPrefix("/api/") {
            // Only a route behind the session check says "locked": the capability is the session's.
            return WebApp.redirect(context.path("/unlock"))
        } catch let error as WebAppError {
            throw error
        } catch let error as WebFormError {
            let problem =
                switch error.code {
                case .duplicateField: "A field was given more than once"
                case .unknownField: "The form has a field this page does not send"
                default: "The form could not be read"
                }
            throw WebAppError(.badRequest, problem + ": reload the page and try again.")
        } catch let error as any HTTPResponseError where error.status == .notFound {
            throw WebAppError(.notFound, "There is no such page.")
        } catch let error as any HTTPResponseError where error.status == .contentTooLarge {
            throw WebAppError(.badRequest, "The request is too large.")
        } catch {
            // Never the error's text: it may quote what the request carried.
            throw WebAppError(.badRequest, "The request could not be handled.")
        }
    }

    func check(
        _ request: Request,
        context: WebAppContext,
        next: (Request, WebAppContext) async throws -> Response
    ) async throws -> Response {
        guard app.isOwnAuthority(request.head.authority) else {
            throw WebAppError(
                .forbidden,
                "This address does not belong to Keyhaven (the Host header names another site)."
            )
        }
        // One strict rule for queries too: a repeated field never reaches a route.
        _ = try WebForm.query(of: request)
        let path = request.uri.path
        if Self.publicPaths.contains(path) { return try await next(request, context) }
        var context = context
        guard let token = request.cookies[WebApp.cookieName]?.value,
            let session = app.session(token: token, capability: context.capability)
        else {
            throw WebAppError(
                .unauthorized,
                "Open Keyhaven from the command line: `keyhaven ui` prints a link that lets this browser in."
            )
        }
        context.token = token
        context.session = session
        if request.method != .get && request.method != .head {
            guard app.isSameOrigin(request) else {
                throw WebAppError(.forbidden, "This request came from another site and was refused.")
            }
            if path.hasPrefix("/api/") {
                guard CSRF.matches(request.headers[CSRF.header], session.csrf) else { throw WebAppError.staleForm }
            }
        }
        return try await next(request, context)
    }
}

extension WebAppError {
    static var staleForm: WebAppError {
        WebAppError(.forbidden, "This form is out of date or came from elsewhere: reload the page and try again.")
    }
}

extension WebApp {
    /// `127.0.0.1:PORT` exactly: the only address the app hands out. Not `localhost:PORT`, which
    /// browsers may resolve to `::1`, where another user may listen on the same port.
    func isOwnAuthority(_ authority: String?) -> Bool {
        guard let authority, let port else { return false }
        return authority == "127.0.0.1:\(port)"
    }

    /// A state change from the app's own pages (``CSRF/isSameOrigin(_:originRequired:isOwn:)``):
    /// `Origin` is this app (browsers send it on every POST) and `Sec-Fetch-Site`, when sent, says
    /// same-origin.
    func isSameOrigin(_ request: Request) -> Bool {
        guard port != nil, let own = ServiceOrigin.of(url: origin) else { return false }
        return CSRF.isSameOrigin(request, originRequired: true) { $0 == own }
    }

    /// Every response (``SecurityHeadersMiddleware``): no inline script and no framing; nothing
    /// cached unless a route says so; no referrer leaves the app — `Referrer-Policy: same-origin`
    /// (with no-referrer, browsers send `Origin: null` on the app's own form posts): an origin
    /// includes the port, so no other server on 127.0.0.1, and no other site (change-password
    /// pages), ever gets a referrer, and the session's capability in the path (`/s/CAPABILITY/…`)
    /// reaches only this app. The app's windows and resources are its own (cross-origin opener and
    /// resource policies).
    static let securityHeaders = SecurityHeaders(
        contentSecurityPolicy: .ownOrigin(fetch: true, dataImages: true),
        additional: [
            HTTPField.Name("Cross-Origin-Opener-Policy")!: "same-origin",
            HTTPField.Name("Cross-Origin-Resource-Policy")!: "same-origin",
        ]
    )

    /// The style sheet and `Resources/app.js` (revalidated on every use: an upgraded app serves new ones).
    static let assets: [StaticAsset] = [
        .stylesheet(cacheControl: "no-cache"),
        .script("/assets/app.js", PackageResources.app_js, cacheControl: "no-cache"),
    ]

    static func html(_ page: HTML, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        HTMLResponse(page, status: status, headers: headers).response
    }

    /// JSON in the servers' one style (``WebJSON``: the documents `keyhaven … --json` prints, compact).
    static func json(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        try JSONResponse(value, status: status).response
    }

    /// 303 See Other (``Redirect``).
    static func redirect(_ location: String, headers: HTTPFields = [:]) -> Response {
        Redirect(to: location, headers: headers).response
    }
}

/// A ``WebAppError`` renders itself (Hummingbird's `HTTPResponseError`): its status from its code,
/// and under `/api/` the JSON `{"error": CODE, "message": …}` the app's script reads, elsewhere a
/// page that says what happened and what to do.
extension WebAppError: ResponseGenerator, HTTPResponseError {
    public var status: HTTPResponse.Status {
        switch code {
        case .forbidden: .forbidden
        case .unauthorized: .unauthorized
        case .notFound: .notFound
        case .locked: HTTPResponse.Status(code: 423, reasonPhrase: "Locked")
        default: .badRequest
        }
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        if request.uri.path.hasPrefix("/api/") {
            return try JSONResponse(["error": code.description, "message": message], status: status).response
        }
        let title =
            switch code {
            case .forbidden: "Refused"
            case .unauthorized: "Keyhaven"
            case .notFound: "Not found"
            default: "Something went wrong"
            }
        return HTMLResponse(WebAppPages.message(title, message), status: status).response
    }
}
