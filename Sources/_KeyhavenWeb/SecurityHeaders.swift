public import HTTPTypes
public import Hummingbird
import Logging

/// The security headers of every response a Keyhaven web server sends: the identity provider's
/// pages, the local web app and shiny. Each app passes its own Content-Security-Policy; the rest
/// is the same everywhere:
///
/// - `Content-Security-Policy`: the app's (a response that set one itself keeps it: the provider's
///   authorization pages add the service's origin to `form-action`);
/// - `X-Frame-Options: DENY` (with the policy's `frame-ancestors 'none'`: never framed);
/// - `X-Content-Type-Options: nosniff` (a script or style sheet is only ever what its type says);
/// - `Referrer-Policy: same-origin` (not `no-referrer`: with it, browsers send `Origin: null` on the
///   pages' own form posts, which the CSRF checks refuse);
/// - `Cache-Control`: ``cacheControl`` (`no-store`) unless the route chose one (assets, discovery);
/// - ``additional`` headers the app wants on everything (the web app's cross-origin isolation).
///
/// ``SecurityHeadersMiddleware`` adds them to every response, errors included.
public struct SecurityHeaders: Sendable {
    public var contentSecurityPolicy: ContentSecurityPolicy
    /// `Cache-Control` for responses that set none; nil leaves them without.
    public var cacheControl: String?
    public var additional: HTTPFields

    public init(
        contentSecurityPolicy: ContentSecurityPolicy,
        cacheControl: String? = "no-store",
        additional: HTTPFields = [:]
    ) {
        self.contentSecurityPolicy = contentSecurityPolicy
        self.cacheControl = cacheControl
        self.additional = additional
    }

    /// Sets the headers on `headers`; a `Content-Security-Policy` or `Cache-Control` already there
    /// stays.
    public func apply(to headers: inout HTTPFields) {
        if headers[.contentSecurityPolicy] == nil {
            headers[.contentSecurityPolicy] = contentSecurityPolicy.description
        }
        headers[.xFrameOptions] = "DENY"
        headers[.xContentTypeOptions] = "nosniff"
        headers[.referrerPolicy] = "same-origin"
        if headers[.cacheControl] == nil, let cacheControl { headers[.cacheControl] = cacheControl }
        for field in additional { headers[field.name] = field.value }
    }
}

extension ContentSecurityPolicy {
    /// The policy of pages that use only what their own server serves: nothing by default; scripts,
    /// style sheets and images from the server itself (images also as `data:` URLs when asked);
    /// `fetch` to it when the pages' script calls it; forms posted to it (and to `formAction`, an
    /// origin such as the service an authorization answers); never framed; no `<base>`. No inline
    /// script or style: every script and the style sheet are files.
    public static func ownOrigin(
        fetch: Bool = false,
        dataImages: Bool = false,
        formAction: String? = nil
    ) -> ContentSecurityPolicy {
        var directives: [Directive] = [.defaultSrc(.none), .scriptSrc(.self), .styleSrc(.self)]
        directives.append(dataImages ? .imgSrc(.self, "data:") : .imgSrc(.self))
        if fetch { directives.append(.connectSrc(.self)) }
        directives.append(formAction.map { .formAction(.self, .uri($0)) } ?? .formAction(.self))
        directives += [.frameAncestors(.none), .baseURI(.none)]
        return ContentSecurityPolicy(directives)
    }
}

extension HTTPField.Name {
    static let xFrameOptions = Self("X-Frame-Options")!
    static let referrerPolicy = Self("Referrer-Policy")!
}

/// Adds ``SecurityHeaders`` to every response of the routes added after it: the router's own
/// answers, errors that render themselves (`HTTPResponseError`: rendered here, so they carry the
/// headers too), not-found, and any other error, which becomes a bare 500 (its text may quote what
/// the request carried, so it is logged by type only, at debug level). Add it to a router first,
/// before any route (Hummingbird applies middleware to the routes added after it).
public struct SecurityHeadersMiddleware<Context: RequestContext>: RouterMiddleware {
    public let headers: SecurityHeaders

    public init(_ headers: SecurityHeaders) {
        self.headers = headers
    }

    public func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as any HTTPResponseError {
            response = (try? error.response(from: request, context: context)) ?? Response(status: error.status)
        } catch {
            context.logger.debug("unhandled error", metadata: ["error.type": "\(type(of: error))"])
            response = Response(status: .internalServerError)
        }
        headers.apply(to: &response.headers)
        return response
    }
}

extension Router {
    /// A router for a Keyhaven server: ``SecurityHeadersMiddleware`` with `securityHeaders` comes
    /// first, so every route added to it, now or later, answers with the headers; then `assets`.
    public convenience init(context: Context.Type, securityHeaders: SecurityHeaders, assets: [StaticAsset] = []) {
        self.init(context: context)
        add(middleware: SecurityHeadersMiddleware(securityHeaders))
        add(assets: assets)
    }
}
