import Foundation
import HTTPTypes
public import Hummingbird
import NIOCore
import _KeyhavenSupport

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

/// Every request passes here first: `Host` must name this app on loopback (DNS rebinding), pages
/// other than the launch and the style sheet and script need the session (the cookie *and* the
/// path's capability), state changes need a same-origin `Origin` (and the CSRF token, checked where
/// the body is read), and every response gets the security headers.
struct WebAppGuard: RouterMiddleware {
    let app: WebApp

    static let publicPaths: Set<String> = ["/launch", "/assets/keyhaven.css", "/assets/app.js", "/favicon.ico"]

    func handle(
        _ request: Request,
        context: WebAppContext,
        next: (Request, WebAppContext) async throws -> Response
    ) async throws -> Response {
        let path = request.uri.path
        let api = path.hasPrefix("/api/")
        var response: Response
        do {
            response = try await check(request, context: context, next: next)
        } catch let error as WebAppError where error.code == .locked && !api {
            // Only a route behind the session check says "locked": the capability is the session's.
            response = WebApp.redirect(context.path("/unlock"))
        } catch let error as WebAppError {
            response = WebApp.errorResponse(error, api: api)
        } catch let error as HTTPError where error.status == .notFound {
            response = WebApp.errorResponse(WebAppError(.notFound, "There is no such page."), api: api)
        } catch let error as HTTPError where error.status == .contentTooLarge {
            response = WebApp.errorResponse(WebAppError(.badRequest, "The request is too large."), api: api)
        } catch {
            // Never the error's text: it may quote what the request carried.
            response = WebApp.errorResponse(WebAppError(.badRequest, "The request could not be handled."), api: api)
        }
        WebApp.addSecurityHeaders(&response.headers)
        return response
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
                guard let given = request.headers[HTTPField.Name("X-CSRF-Token")!],
                    constantTimeEqual(given, session.csrf)
                else { throw WebAppError.staleForm }
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

    /// A state change from the app's own pages: `Origin` is this app (browsers send it on every
    /// POST) and `Sec-Fetch-Site`, when sent, says same-origin.
    func isSameOrigin(_ request: Request) -> Bool {
        guard let origin = request.headers[.origin], port != nil, origin == self.origin else { return false }
        if let site = request.headers[HTTPField.Name("Sec-Fetch-Site")!], site != "same-origin" { return false }
        return true
    }

    /// No inline script and no framing; nothing cached; no referrer leaves the app.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        + "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

    static func addSecurityHeaders(_ headers: inout HTTPFields) {
        headers[HTTPField.Name("Content-Security-Policy")!] = contentSecurityPolicy
        headers[HTTPField.Name("X-Frame-Options")!] = "DENY"
        headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        // `same-origin`, not `no-referrer`: with no-referrer, browsers send `Origin: null` on the
        // app's own form posts. An origin includes the port, so no other server on 127.0.0.1, and no
        // other site (change-password pages), ever gets a referrer: the session's capability in
        // the path (`/s/CAPABILITY/…`) reaches only this app.
        headers[HTTPField.Name("Referrer-Policy")!] = "same-origin"
        headers[HTTPField.Name("Cross-Origin-Opener-Policy")!] = "same-origin"
        headers[HTTPField.Name("Cross-Origin-Resource-Policy")!] = "same-origin"
        if headers[.cacheControl] == nil { headers[.cacheControl] = "no-store" }
    }

    static func html(_ page: HTML, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        var fields = headers
        fields[.contentType] = "text/html; charset=utf-8"
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(string: page.rendered)))
    }

    /// JSON as `keyhaven … --json` prints it (keys sorted, slashes unescaped, ISO 8601 dates).
    static func json(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes, .prettyPrinted]
        encoder.dateEncodingStrategy = .iso8601
        let data = try encoder.encode(value)
        return Response(
            status: status,
            headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: data))
        )
    }

    static func redirect(_ location: String, headers: HTTPFields = [:]) -> Response {
        var fields = headers
        fields[.location] = location
        return Response(status: .seeOther, headers: fields)
    }

    static func errorResponse(_ error: WebAppError, api: Bool) -> Response {
        let status: HTTPResponse.Status =
            switch error.code {
            case .forbidden: .forbidden
            case .unauthorized: .unauthorized
            case .notFound: .notFound
            case .locked: HTTPResponse.Status(code: 423, reasonPhrase: "Locked")
            default: .badRequest
            }
        if api {
            return (try? json(["error": error.code.description, "message": error.message], status: status))
                ?? Response(status: status)
        }
        let title =
            switch error.code {
            case .forbidden: "Refused"
            case .unauthorized: "Keyhaven"
            case .notFound: "Not found"
            default: "Something went wrong"
            }
        return html(WebAppPages.message(title, error.message), status: status)
    }
}
