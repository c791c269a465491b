import AsyncHTTPClient
import Foundation
import IdentityProviderTestSupport
import NIOCore
import NIOHTTP1
import Testing
import _KeyhavenSupport

/// Security review Medium #6 and issue 13 #4: the provider's pages resist login CSRF, cross-site
/// posts and framing, and allow no inline script.
struct BrowserFormSecurityTests {
    @Test func loginCSRFIsRefused() async throws {
        try await ProviderHarness.with { harness in
            let signin = harness.baseURL + "/account/signin"
            let credentials = [("email", harness.email), ("password", harness.password)]
            // The attacker's page posts its own credentials with no token: refused, no session.
            let bare = try await RawHTTP.post(signin, fields: credentials)
            #expect(bare.status == 403 && bare.body.contains("expired"))
            // A token the attacker made up, with a cookie it cannot set for the provider: refused.
            let forged = try await RawHTTP.post(
                signin,
                fields: credentials + [("login_token", String(repeating: "a", count: 32))]
            )
            #expect(forged.status == 403)
            // Even holding a matching pair (say, from its own visit), another Origin is refused.
            let page = try await RawHTTP.get(harness.baseURL + "/account")
            let token = try #require(WebSession.hiddenFields(page.body)["login_token"])
            let crossSite = try await RawHTTP.post(
                signin,
                fields: credentials + [("login_token", token)],
                cookie: "kh_login=\(token)",
                origin: "https://attacker.example"
            )
            #expect(crossSite.status == 403)
            let nullOrigin = try await RawHTTP.post(
                signin,
                fields: credentials + [("login_token", token)],
                cookie: "kh_login=\(token)",
                origin: "null"
            )
            #expect(nullOrigin.status == 403)
            // The provider's own page, as a browser posts it: signed in.
            let genuine = try await RawHTTP.post(
                signin,
                fields: credentials + [("login_token", token)],
                cookie: "kh_login=\(token)",
                origin: harness.baseURL
            )
            #expect(genuine.status == 303)
        }
    }

    @Test func pagesForbidFramingAndInlineScript() async throws {
        try await ProviderHarness.with { harness in
            let response = try await HTTPClient.shared.execute(
                HTTPClientRequest(url: harness.baseURL + "/account"),
                timeout: .seconds(30)
            )
            let policy = try #require(response.headers.first(name: "Content-Security-Policy"))
            #expect(policy.contains("frame-ancestors 'none'"))
            #expect(policy.contains("script-src 'self'") && !policy.contains("unsafe-inline"))
            #expect(policy.contains("form-action 'self'"))
            #expect(response.headers.first(name: "X-Frame-Options") == "DENY")
            let cookie = try #require(response.headers.first(name: "Set-Cookie"))
            #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"))
            let body = String(buffer: try await response.body.collect(upTo: 1 << 20))
            #expect(!body.contains("<script>"))

            // The form_post hand-off uses the provider's own script, and may post only to the service.
            let fields = try await harness.authorizeInBrowser()
            #expect(fields["code"] != nil)
            let script = try await HTTPClient.shared.execute(
                HTTPClientRequest(url: harness.baseURL + "/auth/handoff.js"),
                timeout: .seconds(30)
            )
            #expect(script.status.code == 200)
            #expect(script.headers.first(name: "Content-Type")?.hasPrefix("text/javascript") == true)
        }
    }

    /// The account page's actions (stop using a service, delete the account) carry the session's
    /// form token already; a post from another origin is refused even with it.
    @Test func accountActionsRefuseOtherOrigins() async throws {
        try await ProviderHarness.with { harness in
            let page = try await RawHTTP.get(harness.baseURL + "/account")
            let token = try #require(WebSession.hiddenFields(page.body)["login_token"])
            let signedIn = try await RawHTTP.post(
                harness.baseURL + "/account/signin",
                fields: [("email", harness.email), ("password", harness.password), ("login_token", token)],
                cookie: "kh_login=\(token)",
                origin: harness.baseURL
            )
            #expect(signedIn.status == 303)
            let setCookie = try #require(signedIn.headers.first(name: "Set-Cookie"))
            let session = String(setCookie.split(separator: ";")[0])
            let account = try await RawHTTP.get(harness.baseURL + "/account", cookie: session)
            let formToken = try #require(WebSession.hiddenFields(account.body)["form_token"])
            let attack = try await RawHTTP.post(
                harness.baseURL + "/account/delete",
                fields: [("confirm", "yes"), ("form_token", formToken)],
                cookie: session,
                origin: "https://attacker.example"
            )
            #expect(attack.status == 400)
            // Still there: the account page still answers for this session.
            #expect(try await RawHTTP.get(harness.baseURL + "/account", cookie: session).body.contains(#"id="delete""#))
        }
    }
}
