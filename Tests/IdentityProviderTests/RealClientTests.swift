import Foundation
import IdentityProvider
import IdentityProviderTestSupport
import JWTKit
import KeyhavenJOSE
import KeyhavenTesting
import RelyingParty
import Testing

/// Clients we did not write verify our tokens: PyJWT, joserfc and authlib (which checks at_hash)
/// through discovery and JWKS; vapor/jwt-kit's `AppleIdentityToken` with the issuer set to Apple's.
@Suite(.offCooperativePool)
struct RealClientTests {
    @Test(.enabled(if: ExternalTools.pythonClients, ExternalTools.pythonClientsReason))
    func pythonClientsCompleteACodeFlowAndVerifyTheToken() async throws {
        try await ProviderHarness.with { harness in
            let p8 = FileManager.default.temporaryDirectory.appendingPathComponent("team-\(UUID().uuidString).p8")
            try harness.teamKey.pemRepresentation.write(to: p8, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(at: p8) }
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .appendingPathComponent("Clients/real_clients.py")
            let python = CommandRunner(executable: URL(fileURLWithPath: "/usr/bin/env"))
            let result = try await python.runDetached([
                "python3", script.path, harness.baseURL, harness.clientId, harness.redirectURI, harness.teamId,
                harness.teamKey.kid, p8.path, harness.email, harness.password,
            ])
            #expect(result.status == 0, "\(result.stderr)")
            let report = try #require(
                try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
            )
            func field(_ client: String, _ name: String) -> String? {
                (report[client] as? [String: Any])?[name] as? String
            }
            let sub = field("authlib", "sub")
            #expect(sub != nil && sub == field("pyjwt", "sub") && sub == field("joserfc", "sub"))
            #expect(field("authlib", "email") == harness.email)
            #expect(field("authlib", "at_hash")?.isEmpty == false)
            #expect(field("user", "email") == harness.email)
            #expect(report["refresh_token"] as? Bool == true)
        }
    }

    @Test func jwtKitVerifiesItAsAnAppleIdentityToken() async throws {
        try await ProviderHarness.with(ProviderHarness.configuration(issuer: "https://appleid.apple.com")) { harness in
            let client = harness.client()
            let code = try #require(try await harness.authorizeInBrowser(share: false)["code"])
            let (tokens, claims) = try await client.exchange(code: code, redirectURI: harness.redirectURI, nonce: "n-1")
            let jwks = String(decoding: try JSONEncoder().encode(try await harness.provider.jwks()), as: UTF8.self)
            let keys = try await JWTKeyCollection().add(jwksJSON: jwks)
            let token = try await keys.verify(
                try #require(tokens.id_token),
                as: AppleIdentityToken.self,
                expectedAudience: harness.clientId
            )
            #expect(token.subject.value == claims.sub)
            #expect(token.isPrivateEmail?.value == true)
            #expect(token.emailVerified?.value == true)
            #expect(token.nonce == "n-1")
            #expect(token.nonceSupported?.value == true)
            #expect(token.email?.hasSuffix("@privaterelay.appleid.apple.com") == true)
            await #expect(throws: (any Error).self) {
                _ = try await keys.verify(tokens.id_token!, as: AppleIdentityToken.self, expectedAudience: "com.other")
            }
        }
    }

    @Test func stringBooleansAreAvailableAsACompatibilitySwitch() async throws {
        var configuration = ProviderHarness.configuration(issuer: "https://appleid.apple.com")
        configuration.stringBooleans = true
        try await ProviderHarness.with(configuration) { harness in
            let code = try #require(try await harness.authorizeInBrowser(share: false)["code"])
            let (tokens, _) = try await harness.client().exchange(
                code: code,
                redirectURI: harness.redirectURI,
                nonce: nil
            )
            let payload = String(decoding: try CompactJWS(tokens.id_token!).payload, as: UTF8.self)
            #expect(payload.contains(#""email_verified":"true""#) && payload.contains(#""is_private_email":"true""#))
            let keys = try await JWTKeyCollection().add(
                jwksJSON: String(decoding: try JSONEncoder().encode(try await harness.provider.jwks()), as: UTF8.self)
            )
            let token = try await keys.verify(
                tokens.id_token!,
                as: AppleIdentityToken.self,
                expectedAudience: harness.clientId
            )
            #expect(token.isPrivateEmail?.value == true)
        }
    }
}
