import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing
import _KeyhavenSupport
import _KeyhavenWeb

/// ``SecurityHeadersMiddleware`` puts the headers on every response: a route's, an error that
/// renders itself, not-found, and an error that does not (a bare 500).
struct SecurityHeadersTests {
    struct Broken: Error {}

    static let headers = SecurityHeaders(
        contentSecurityPolicy: .ownOrigin(),
        additional: [HTTPField.Name("Cross-Origin-Opener-Policy")!: "same-origin"]
    )

    static func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.add(middleware: SecurityHeadersMiddleware(headers))
        router.get("/page") { _, _ in HTMLResponse("<p>hello</p>") }
        router.get("/cached") { _, _ in Response(status: .ok, headers: [.cacheControl: "max-age=60"]) }
        router.get("/own-policy") { _, _ in
            HTMLResponse(
                "<p>answer</p>",
                headers: [
                    .contentSecurityPolicy: ContentSecurityPolicy.ownOrigin(formAction: "https://a.example").description
                ]
            )
        }
        router.get("/refused") { _, _ -> Response in throw HTTPError(.forbidden, message: "no") }
        router.get("/broken") { _, _ -> Response in throw Broken() }
        return router
    }

    /// What every response must carry (the apps' walks use the same check).
    static func expectHeaders(_ headers: HTTPFields, _ path: String) {
        let policy = headers[.contentSecurityPolicy] ?? ""
        #expect(policy.contains("default-src 'none'") && policy.contains("frame-ancestors 'none'"), "\(path)")
        #expect(!policy.contains("unsafe-inline") && !policy.contains("unsafe-eval"), "\(path)")
        #expect(headers[HTTPField.Name("X-Frame-Options")!] == "DENY", "\(path)")
        #expect(headers[.xContentTypeOptions] == "nosniff", "\(path)")
        #expect(headers[HTTPField.Name("Referrer-Policy")!] == "same-origin", "\(path)")
        #expect(headers[.cacheControl] != nil, "\(path)")
    }

    @Test func everyResponseCarriesTheHeadersErrorsIncluded() async throws {
        try await Application(router: Self.router()).test(.router) { client in
            for (path, status) in [
                ("/page", HTTPResponse.Status.ok), ("/refused", .forbidden), ("/no-such-page", .notFound),
                ("/broken", .internalServerError),
            ] {
                try await client.execute(uri: path, method: .get) { response in
                    #expect(response.status == status, "\(path)")
                    Self.expectHeaders(response.headers, path)
                    #expect(response.headers[.cacheControl] == "no-store", "\(path)")
                    #expect(response.headers[HTTPField.Name("Cross-Origin-Opener-Policy")!] == "same-origin")
                }
            }
            // An error's text is not shown when it is not an HTTP error (it may quote the request).
            try await client.execute(uri: "/broken", method: .get) { #expect($0.body.readableBytes == 0) }
        }
    }

    @Test func aRouteMayChooseItsCachingAndWidenItsFormAction() async throws {
        try await Application(router: Self.router()).test(.router) { client in
            try await client.execute(uri: "/cached", method: .get) { response in
                #expect(response.headers[.cacheControl] == "max-age=60")
                Self.expectHeaders(response.headers, "/cached")
            }
            try await client.execute(uri: "/own-policy", method: .get) { response in
                let policy = response.headers[.contentSecurityPolicy] ?? ""
                #expect(policy.contains("form-action 'self' https://a.example"))
                #expect(response.headers[values: .contentSecurityPolicy].count == 1)
                Self.expectHeaders(response.headers, "/own-policy")
            }
        }
    }

    @Test func thePolicyOfPagesThatUseOnlyTheirOwnServer() {
        #expect(
            ContentSecurityPolicy.ownOrigin().description
                == "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; "
                + "frame-ancestors 'none'; base-uri 'none'"
        )
        let app = ContentSecurityPolicy.ownOrigin(fetch: true, dataImages: true).description
        #expect(app.contains("img-src 'self' data:; connect-src 'self';"))
    }
}
