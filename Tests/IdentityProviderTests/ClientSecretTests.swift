import AsyncHTTPClient
import Crypto
import Foundation
import IdentityProvider
import IdentityProviderTestSupport
import KeyhavenJOSE
import KeyhavenTesting
import NIOCore
import NIOHTTP1
import RelyingParty
import Testing
import _KeyhavenSupport

/// `/auth/token`'s client authentication and wire rules: each bad `client_secret` is
/// `invalid_client`; JSON bodies, misspelled grant types and repeated parameters are refused.
@Suite(.offCooperativePool)
struct ClientSecretTests {
    static func post(
        _ url: String,
        body: String,
        contentType: String = "application/x-www-form-urlencoded"
    )
        async throws -> (status: Int, json: [String: String])
    {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: contentType)
        request.body = .bytes(ByteBuffer(string: body))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let data = try await response.body.collect(upTo: 1 << 20)
        let object = try? JSONSerialization.jsonObject(with: Data(data.readableBytesView)) as? [String: Any]
        let json = (object ?? [:]).mapValues { "\($0)" }
        return (Int(response.status.code), json)
    }

    static func secret(
        _ harness: ProviderHarness,
        key: ES256SigningKey? = nil,
        iss: String? = nil,
        aud: String? = nil,
        sub: String? = nil,
        iat: Int64 = 0,
        lifetime: Int64 = 86_400,
        der: Bool = false
    ) throws -> String {
        let now = Int64(Date().timeIntervalSince1970) + iat
        let claims = ClientSecretClaims(
            iss: iss ?? harness.teamId,
            iat: now,
            exp: now + lifetime,
            aud: aud ?? harness.provider.configuration.issuer,
            sub: sub ?? harness.clientId
        )
        let signer = key ?? harness.teamKey
        if der {
            return try JWS.sign(claims, header: #"{"alg":"ES256","kid":"\#(signer.kid)"}"#) { input in
                let raw = try signer.sign(input)
                return Array(try P256.Signing.ECDSASignature(rawRepresentation: raw).derRepresentation)
            }
        }
        return try JWS.sign(claims, with: signer)
    }

    /// Credential state answers only an authenticated client, and only about its own users.
    @Test func credentialStateNeedsTheClientsSecret() async throws {
        try await ProviderHarness.with { harness in
            let code = try #require(try await harness.authorizeInBrowser()["code"])
            let (_, claims) = try await harness.client().exchange(
                code: code,
                redirectURI: harness.redirectURI,
                nonce: nil
            )
            let url = harness.baseURL + "/auth/credentialstate"
            let missing = FormURLEncoding.encode([("client_id", harness.clientId), ("sub", claims.sub)])
            let (status, json) = try await Self.post(url, body: missing)
            #expect(status == 400 && json["error"] == "invalid_client", "\(json)")
            #expect(json["state"] == nil)
            let forged = FormURLEncoding.encode([
                ("client_id", harness.clientId), ("sub", claims.sub),
                ("client_secret", try Self.secret(harness, key: .generate(kid: "ROGUEKEY02"))),
            ])
            let (forgedStatus, forgedJSON) = try await Self.post(url, body: forged)
            #expect(forgedStatus == 400 && forgedJSON["error"] == "invalid_client" && forgedJSON["state"] == nil)
            let good = FormURLEncoding.encode([
                ("client_id", harness.clientId), ("sub", claims.sub), ("client_secret", try Self.secret(harness)),
            ])
            let (goodStatus, goodJSON) = try await Self.post(url, body: good)
            #expect(goodStatus == 200 && goodJSON["state"] == "authorized", "\(goodJSON)")
        }
    }

    @Test func badClientSecretsAreInvalidClient() async throws {
        try await ProviderHarness.with { harness in
            let code = try #require(try await harness.authorizeInBrowser()["code"])
            func attempt(_ secret: String, _ name: String = "") async throws -> [String: String] {
                let body = FormURLEncoding.encode([
                    ("client_id", harness.clientId), ("client_secret", secret), ("code", code),
                    ("grant_type", "authorization_code"), ("redirect_uri", harness.redirectURI),
                ])
                let (status, json) = try await Self.post(harness.baseURL + "/auth/token", body: body)
                #expect(status == (name.isEmpty ? 200 : 400), "\(name)")
                return json
            }
            let cases: [(String, String)] = [
                ("an unregistered key", try Self.secret(harness, key: .generate(kid: "ROGUEKEY01"))),
                ("another team's iss", try Self.secret(harness, iss: "ZZZZZZZZZZ")),
                ("the wrong aud", try Self.secret(harness, aud: "https://appleid.apple.com")),
                ("a sub that is not the client", try Self.secret(harness, sub: "com.example.other")),
                ("an exp more than 6 months out", try Self.secret(harness, lifetime: 15_777_001)),
                ("an expired secret", try Self.secret(harness, iat: -7_200, lifetime: 3_600)),
                ("a DER signature", try Self.secret(harness, der: true)),
                ("not a JWT", "secret"),
            ]
            for (name, secret) in cases {
                let json = try await attempt(secret, name)
                #expect(json["error"] == "invalid_client", "\(name): \(json)")
                #expect(json["error_description"]?.isEmpty == false)
            }
            // Exactly six months is allowed, and the code was not spent by the failures.
            let json = try await attempt(try Self.secret(harness, lifetime: 15_777_000))
            #expect(json["id_token"] != nil, "\(json)")
        }
    }

    @Test func wireRules() async throws {
        try await ProviderHarness.with { harness in
            let secret = try Self.secret(harness)
            let url = harness.baseURL + "/auth/token"
            let json = try await Self.post(
                url,
                body: #"{"client_id":"\#(harness.clientId)","grant_type":"refresh_token"}"#,
                contentType: "application/json"
            )
            #expect(json.status == 400 && json.json["error"] == "invalid_request")
            let misspelled = try await Self.post(
                url,
                body: FormURLEncoding.encode([
                    ("client_id", harness.clientId), ("client_secret", secret), ("grand_type", "authorization_code"),
                ])
            )
            #expect(misspelled.json["error"] == "unsupported_grant_type")
            let twice = try await Self.post(url, body: "client_id=a&client_id=b&grant_type=refresh_token")
            #expect(twice.json["error"] == "invalid_request")
            let noRefresh = try await Self.post(
                url,
                body: FormURLEncoding.encode([
                    ("client_id", harness.clientId), ("client_secret", secret), ("grant_type", "refresh_token"),
                    ("refresh_token", "r.unknown"),
                ])
            )
            #expect(noRefresh.json["error"] == "invalid_grant")
            let badScope = try await Self.post(
                url,
                body: FormURLEncoding.encode([
                    ("client_id", harness.clientId), ("client_secret", secret), ("grant_type", "client_credentials"),
                    ("scope", "email"),
                ])
            )
            #expect(badScope.json["error"] == "invalid_scope")
            // Revoking an unknown token succeeds with an empty body; a bad client does not.
            let revoke = try await Self.post(
                harness.baseURL + "/auth/revoke",
                body: FormURLEncoding.encode([
                    ("client_id", harness.clientId), ("client_secret", secret), ("token", "r.unknown"),
                ])
            )
            #expect(revoke.status == 200)
            let badRevoke = try await Self.post(
                harness.baseURL + "/auth/revoke",
                body: FormURLEncoding.encode([("client_id", harness.clientId), ("token", "x")])
            )
            #expect(badRevoke.status == 400 && badRevoke.json["error"] == "invalid_client")
        }
    }

    @Test func authorizeParameterRules() async throws {
        try await ProviderHarness.with { harness in
            func authorize(_ fields: [(String, String)]) async throws -> [String: String] {
                let response = try await HTTPClient.shared.execute(
                    HTTPClientRequest(url: harness.baseURL + "/auth/authorize?" + FormURLEncoding.encode(fields)),
                    timeout: .seconds(30)
                )
                let body = try await response.body.collect(upTo: 1 << 20)
                return (try? JSONDecoder().decode([String: String].self, from: Data(body.readableBytesView))) ?? [:]
            }
            let base = [("client_id", harness.clientId), ("redirect_uri", harness.redirectURI)]
            let scopeWithoutFormPost = try await authorize(base + [("response_type", "code"), ("scope", "email")])
            #expect(
                scopeWithoutFormPost["error_description"]
                    == "response_mode must be form_post when name or email scope is requested."
            )
            let idTokenInQuery = try await authorize(
                base + [("response_type", "code id_token"), ("response_mode", "query")]
            )
            #expect(idTokenInQuery["error_description"] == "Invalid response mode")
            let loneIDToken = try await authorize(base + [("response_type", "id_token")])
            #expect(loneIDToken["error"] == "unsupported_response_type")
            let foreignRedirect = try await authorize([
                ("client_id", harness.clientId), ("redirect_uri", "https://evil.example/cb"), ("response_type", "code"),
            ])
            #expect(foreignRedirect["error"] == "invalid_client")
            let unknownScope = try await authorize(
                base + [("response_type", "code"), ("scope", "phone"), ("response_mode", "form_post")]
            )
            #expect(unknownScope["error"] == "invalid_scope")
        }
    }

    @Test func redirectRules() {
        #expect(RedirectRules.problem(with: "https://shiny.example.com/cb", allowInsecure: false) == nil)
        #expect(RedirectRules.problem(with: "http://shiny.example.com/cb", allowInsecure: false) != nil)
        #expect(RedirectRules.problem(with: "https://127.0.0.1/cb", allowInsecure: false) != nil)
        #expect(RedirectRules.problem(with: "https://localhost/cb", allowInsecure: false) != nil)
        #expect(RedirectRules.problem(with: "https://shiny.example.com/cb#x", allowInsecure: false) != nil)
        #expect(RedirectRules.problem(with: "http://127.0.0.1:8080/cb", allowInsecure: true) == nil)
    }
}
