import Foundation
import IdentityProvider
import IdentityProviderTestSupport
import KeyhavenJOSE
import KeyhavenTesting
import OneTimeCodes
import RelyingParty
import Testing
import _KeyhavenSupport

/// The whole web flow over HTTP, and the token endpoint's rules, as a Sign in with Apple client
/// would see them.
@Suite(.offCooperativePool)
struct ProtocolFlowTests {
    @Test func webFlowGivesAVerifiedTokenWithTheUserOnlyTheFirstTime() async throws {
        try await ProviderHarness.with { harness in
            let fields = try await harness.authorizeInBrowser(share: false)
            #expect(fields["state"] == "st-1")
            let code = try #require(fields["code"])
            let user = try #require(fields["user"])
            let decoded = try JSONSerialization.jsonObject(with: Data(user.utf8)) as? [String: Any]
            #expect((decoded?["name"] as? [String: String]) == ["firstName": "Ada", "lastName": "Lovelace"])
            let relay = try #require(decoded?["email"] as? String)
            #expect(relay.hasSuffix("@privaterelay.idp.keyhaven.test"))
            #expect(relay.split(separator: "@")[0].count == 10)

            let client = harness.client()
            let (tokens, claims) = try await client.exchange(code: code, redirectURI: harness.redirectURI, nonce: "n-1")
            #expect(tokens.token_type == "Bearer" && tokens.expires_in == 3600 && tokens.refresh_token != nil)
            #expect(claims.iss == "https://idp.keyhaven.test")
            #expect(claims.aud == harness.clientId)
            #expect(claims.email == relay)
            #expect(claims.is_private_email == BoolClaim(true))
            #expect(claims.email_verified == BoolClaim(true))
            #expect(claims.nonce == "n-1" && claims.nonce_supported == true)
            #expect(claims.at_hash == IdentityTokenClaims.halfHash(tokens.access_token))
            #expect(claims.real_user_status == 1)
            #expect(claims.exp - claims.iat == 86_400)
            // auth_time: when Ada signed in on the page, moments before the exchange.
            let authTime = try #require(claims.auth_time)
            #expect(authTime <= claims.iat && claims.iat - authTime < 60)
            #expect(claims.sub.split(separator: ".").count == 3)

            // Booleans are JSON booleans on the wire.
            let payload = try CompactJWS(try #require(tokens.id_token)).payload
            let raw = try #require(try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])
            #expect(raw["email_verified"] as? Bool == true)
            #expect(String(decoding: payload, as: UTF8.self).contains(#""is_private_email":true"#))

            // Second authorization: no consent step, no user field, same sub and relay.
            let again = try await harness.authorizeInBrowser(share: true)
            #expect(again["user"] == nil)
            let (_, second) = try await client.exchange(
                code: try #require(again["code"]),
                redirectURI: harness.redirectURI,
                nonce: "n-1"
            )
            #expect(second.sub == claims.sub)
            #expect(second.email == relay)

            // Refresh: a new id_token, no new refresh token.
            let refreshed = try await client.refresh(try #require(tokens.refresh_token))
            #expect(refreshed.refresh_token == nil && refreshed.id_token != nil)
            let refreshedClaims = try CompactJWS(try #require(refreshed.id_token)).claims(as: IdentityTokenClaims.self)
            #expect(refreshedClaims.auth_time == authTime && refreshedClaims.sub == claims.sub)
        }
    }

    @Test func codeIdTokenCarriesCHash() async throws {
        try await ProviderHarness.with { harness in
            let fields = try await harness.authorizeInBrowser(scope: "email", responseType: "code id_token")
            let code = try #require(fields["code"])
            let claims = try await harness.client().verifier.verify(try #require(fields["id_token"]), nonce: "n-1")
            #expect(claims.c_hash == IdentityTokenClaims.halfHash(code))
            #expect(claims.at_hash == nil)
            #expect(claims.email == harness.email && claims.is_private_email == nil)
        }
    }

    @Test func reusingACodeFailsAndRevokesWhatItIssued() async throws {
        try await ProviderHarness.with { harness in
            let code = try #require(try await harness.authorizeInBrowser()["code"])
            let client = harness.client()
            let (tokens, _) = try await client.exchange(code: code, redirectURI: harness.redirectURI, nonce: nil)
            await #expect {
                _ = try await client.exchange(code: code, redirectURI: harness.redirectURI, nonce: nil)
            } throws: { error in
                (error as? RelyingPartyError)?.oauthError == "invalid_grant"
                    && (error as? RelyingPartyError)?.message.contains("The code has already been used.") == true
            }
            await #expect {
                _ = try await client.refresh(try #require(tokens.refresh_token))
            } throws: { ($0 as? RelyingPartyError)?.oauthError == "invalid_grant" }
        }
    }

    @Test func anExpiredCodeIsRefused() async throws {
        let clock = TestNow()
        var configuration = ProviderHarness.configuration()
        configuration.now = { clock.now }
        try await ProviderHarness.with(configuration) { harness in
            let code = try #require(try await harness.authorizeInBrowser()["code"])
            clock.advance(301)
            await #expect {
                _ = try await harness.client(now: { clock.now }).exchange(
                    code: code,
                    redirectURI: harness.redirectURI,
                    nonce: nil
                )
            } throws: {
                ($0 as? RelyingPartyError)?.message.contains("The code has expired or has been revoked.") == true
            }
        }
    }

    @Test func aRedirectMismatchIsInvalidClient() async throws {
        try await ProviderHarness.with { harness in
            let code = try #require(try await harness.authorizeInBrowser()["code"])
            await #expect {
                _ = try await harness.client().exchange(
                    code: code,
                    redirectURI: "https://shiny.example.com/other",
                    nonce: nil
                )
            } throws: { ($0 as? RelyingPartyError)?.oauthError == "invalid_client" }
            // The code was not spent by the mismatch.
            _ = try await harness.client().exchange(code: code, redirectURI: harness.redirectURI, nonce: nil)
        }
    }
}

extension ProtocolFlowTests {
    @Test func aOneTimeCodeIsAskedForWhenTheAccountHasOne() async throws {
        try await ProviderHarness.with { harness in
            let (_, secret) = try await harness.provider.createUser(
                email: "grace@example.com",
                password: "grace's password",
                totp: true
            )
            let totp = try TOTP(secret: try #require(secret))
            let web = WebSession()
            let query = FormURLEncoding.encode([
                ("client_id", harness.clientId), ("redirect_uri", harness.redirectURI), ("response_type", "code"),
                ("response_mode", "form_post"), ("scope", "email"), ("state", "s"),
            ])
            var fields = WebSession.hiddenFields(try await web.get(harness.baseURL + "/auth/authorize?" + query).body)
            fields["email"] = "grace@example.com"
            fields["password"] = "grace's password"
            fields["action"] = "signin"
            let asked = try await web.post(harness.baseURL + "/auth/authorize", fields: fields)
            #expect(asked.body.contains(#"id="code""#) && asked.body.contains("authenticator"))
            fields["code"] = "000000" == totp.code(at: Date()) ? "111111" : "000000"
            let wrong = try await web.post(harness.baseURL + "/auth/authorize", fields: fields)
            #expect(wrong.status == 401 && wrong.body.contains("The code is not right."))
            fields["code"] = totp.code(at: Date())
            var page = try await web.post(harness.baseURL + "/auth/authorize", fields: fields)
            var consent = WebSession.hiddenFields(page.body)
            consent["share_email"] = "hide"
            consent["action"] = "continue"
            page = try await web.post(harness.baseURL + "/auth/authorize/consent", fields: consent)
            let code = try #require(WebSession.hiddenFields(page.body)["code"])
            let (_, claims) = try await harness.client().exchange(
                code: code,
                redirectURI: harness.redirectURI,
                nonce: nil
            )
            #expect(claims.real_user_status == 2, "a second factor was checked")

            // The relay address is per person and team: another service of the team sees the same one.
            try await harness.provider.registerClient(
                id: "com.example.shiny.ios",
                teamId: harness.teamId,
                name: "Shiny for iOS",
                redirectURIs: ["https://shiny.example.com/ios/callback"]
            )
            let user = try #require(try await harness.provider.user(email: "grace@example.com"))
            let native = try await harness.provider.nativeAuthorizationRequest(
                clientId: "com.example.shiny.ios",
                origin: "https://shiny.example.com",
                scopes: ["email"],
                state: nil,
                nonce: nil
            ).get()
            let response = try await harness.provider.authorize(
                native,
                authentication: Authentication(userId: user.id, authTime: 0, secondFactor: true),
                shareEmail: false
            )
            let other = try CompactJWS(try #require(response.id_token)).claims(as: IdentityTokenClaims.self)
            #expect(other.email == claims.email && other.sub == claims.sub)
        }
    }
}
