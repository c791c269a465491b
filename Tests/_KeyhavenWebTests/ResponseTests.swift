import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing
import _KeyhavenSupport
import _KeyhavenWeb

/// The response types: one redirect rule (303), one JSON style, pages as HTML, assets as files,
/// cookies written by Hummingbird's `Cookie`.
struct ResponseTests {
    @Test func aRedirectIsSeeOtherAndNeverCached() {
        let response = Redirect(to: "/account", headers: HTTPFields(cookies: Cookie(name: "a", value: "b"))).response
        #expect(response.status == .seeOther)
        #expect(response.headers[.location] == "/account")
        #expect(response.headers[.cacheControl] == "no-store")
        #expect(response.headers[.setCookie]?.hasPrefix("a=b") == true)
    }

    struct Document: Encodable {
        var zeta = "z/slash"
        var alpha = 1
        var when = Date(timeIntervalSince1970: 0)
    }

    @Test func jsonIsCompactSortedWithUnescapedSlashesAndISODates() throws {
        let response = try JSONResponse(Document(), status: .created).response
        #expect(response.status == .created)
        #expect(response.headers[.contentType] == "application/json")
        let body = String(decoding: try WebJSON.encode(Document()), as: UTF8.self)
        #expect(body == #"{"alpha":1,"when":"1970-01-01T00:00:00Z","zeta":"z/slash"}"#)
        // JSONValue's own encoding is the same style.
        let value: JSONValue = ["b": "x/y", "a": 1]
        #expect(try WebJSON.encode(value) == Array(value.encoded()))
    }

    @Test func contextsAnswerResponseEncodableValuesInTheSameStyle() async throws {
        struct Answer: ResponseEncodable {
            var b = "/"
            var a = true
        }
        let router = Router(context: WebRequestContext.self)
        router.get("/answer") { _, _ in Answer() }
        try await Application(router: router).test(.router) { client in
            try await client.execute(uri: "/answer", method: .get) { response in
                #expect(String(buffer: response.body) == #"{"a":true,"b":"/"}"#)
            }
        }
    }

    @Test func pagesAreHTMLAndEscapeWhatTheyInterpolate() {
        let name = "<script>"
        let response = HTMLResponse("<p>\(name)</p>", status: .notFound).response
        #expect(response.status == .notFound)
        #expect(response.headers[.contentType] == "text/html; charset=utf-8")
        #expect(
            HTML.hiddenField("csrf", #""><b>"#).rendered
                == #"<input type="hidden" name="csrf" value="&quot;&gt;&lt;b&gt;">"#
        )
    }

    @Test func assetsAreServedWithTheirTypesAndCaching() async throws {
        let assets: [StaticAsset] = [
            .stylesheet(cacheControl: "max-age=3600"),
            .script("/assets/app.js", Array("let x = 1;\n".utf8), cacheControl: "no-cache"),
        ]
        #expect(assets.map(\.path) == [DesignSystem.path, "/assets/app.js"])
        let router = Router()
        router.add(assets: assets)
        try await Application(router: router).test(.router) { client in
            try await client.execute(uri: "/assets/app.js", method: .get) { response in
                #expect(response.headers[.contentType] == "text/javascript; charset=utf-8")
                #expect(response.headers[.cacheControl] == "no-cache")
                #expect(String(buffer: response.body) == "let x = 1;\n")
            }
            try await client.execute(uri: DesignSystem.path, method: .get) { response in
                #expect(response.headers[.contentType] == "text/css; charset=utf-8")
                #expect(String(buffer: response.body) == DesignSystem.stylesheet)
            }
        }
    }

    @Test func anExpiredCookieEndsTheOneItNames() {
        let cookie = Cookie.expired("kh_session", path: "/signin")
        #expect(cookie.maxAge == 0 && cookie.value.isEmpty && cookie.path == "/signin" && cookie.httpOnly)
    }
}
