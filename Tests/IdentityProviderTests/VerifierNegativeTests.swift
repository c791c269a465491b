import Crypto
import Foundation
import KeyhavenJOSE
import KeyhavenTesting
import RelyingParty
import Testing
import _KeyhavenSupport

@testable import IdentityProvider

/// The relying-party kit refuses every token it should: `alg: none`, HS256 keyed with the public
/// key, expired, wrong audience or issuer, unknown kid, bad nonce, a tampered payload.
@Suite(.offCooperativePool)
struct VerifierNegativeTests {
    static func claims(
        _ harness: ProviderHarness,
        exp: Int64 = 3_600,
        aud: String? = nil,
        iss: String? = nil
    )
        -> IdentityTokenClaims
    {
        let now = Int64(Date().timeIntervalSince1970)
        return IdentityTokenClaims(
            iss: iss ?? harness.provider.configuration.issuer,
            sub: "000001.0123456789abcdef0123456789abcdef.0001",
            aud: aud ?? harness.clientId,
            iat: now,
            exp: now + exp,
            nonce: "n-1",
            nonce_supported: true
        )
    }

    static func expectRefused(
        _ harness: ProviderHarness,
        _ token: String,
        nonce: String? = nil,
        _ code: JOSEError.Code
    ) async {
        do {
            _ = try await harness.client().verifier.verify(token, nonce: nonce)
            Issue.record("a token that should fail with \(code) was accepted")
        } catch {
            #expect(error.code == code, "expected \(code), got \(error)")
        }
    }

    @Test func everyBadTokenIsRefused() async throws {
        try await ProviderHarness.with { harness in
            let key = try await harness.provider.keys().signing
            let good = try JWS.sign(Self.claims(harness), with: key)
            // The genuine token verifies (so the refusals below are about what was changed).
            _ = try await harness.client().verifier.verify(good, nonce: "n-1")

            let none = try JWS.sign(Self.claims(harness), header: #"{"alg":"none","kid":"\#(key.kid)"}"#) { _ in [] }
            await Self.expectRefused(harness, none, .unsupportedAlgorithm)

            let publicPEM = Array(key.publicKey.jwk(kid: key.kid).n!.utf8)
            let hs256 = try JWS.sign(Self.claims(harness), header: #"{"alg":"HS256","kid":"\#(key.kid)"}"#) { input in
                Array(HMAC<SHA256>.authenticationCode(for: input, using: SymmetricKey(data: publicPEM)))
            }
            await Self.expectRefused(harness, hs256, .unsupportedAlgorithm)

            await Self.expectRefused(harness, try JWS.sign(Self.claims(harness, exp: -120), with: key), .expired)
            // Clocks drift: inside the 60 s leeway a just-expired token still verifies …
            _ = try await harness.client().verifier.verify(
                try JWS.sign(Self.claims(harness, exp: -30), with: key),
                nonce: "n-1"
            )
            // … and one issued more than that in the future does not.
            var future = Self.claims(harness)
            future.iat += 300
            future.exp += 300
            await Self.expectRefused(harness, try JWS.sign(future, with: key), .notYetValid)
            await Self.expectRefused(
                harness,
                try JWS.sign(Self.claims(harness, aud: "com.other"), with: key),
                .wrongAudience
            )
            await Self.expectRefused(
                harness,
                try JWS.sign(Self.claims(harness, iss: "https://appleid.apple.com"), with: key),
                .wrongIssuer
            )
            let stranger = try RSASigningKey.generate(kid: "UNKNOWNKID")
            await Self.expectRefused(harness, try JWS.sign(Self.claims(harness), with: stranger), .unknownKey)
            await Self.expectRefused(harness, good, nonce: "another-nonce", .badNonce)

            var parts = good.split(separator: ".").map(String.init)
            var payload = Self.claims(harness)
            payload.sub = "000001.ffffffffffffffffffffffffffffffff.0001"
            parts[1] = Base64URL.encode(try JSONEncoder().encode(payload))
            await Self.expectRefused(harness, parts.joined(separator: "."), .badSignature)

            await Self.expectRefused(harness, "not.a.jwt!", .malformed)
        }
    }

    @Test func theNonceMayBeTheSHA256OfTheRawNonce() async throws {
        try await ProviderHarness.with { harness in
            let raw = "raw-nonce-from-the-app"
            let hashed = SHA256.hash(data: Array(raw.utf8)).map { String(format: "%02x", $0) }.joined()
            var claims = Self.claims(harness)
            claims.nonce = hashed
            let token = try JWS.sign(claims, with: try await harness.provider.keys().signing)
            #expect(try await harness.client().verifier.verify(token, nonce: raw).nonce == hashed)
        }
    }

    @Test func rotationIsPickedUpByKidAndRetiredKeysStopVerifying() async throws {
        try await ProviderHarness.with { harness in
            let client = harness.client()
            let first = try #require(try await harness.authorizeInBrowser(responseType: "code id_token")["id_token"])
            _ = try await client.verifier.verify(first)
            #expect(await client.verifier.keys.fetchCount == 1)

            let oldKid = try CompactJWS(first).header.kid!
            let newKid = try await harness.provider.rotateSigningKey()
            #expect(try await harness.provider.signingKeyIDs() == [newKid, oldKid])
            let second = try #require(try await harness.authorizeInBrowser(responseType: "code id_token")["id_token"])
            #expect(try CompactJWS(second).header.kid == newKid)
            _ = try await client.verifier.verify(second)
            #expect(await client.verifier.keys.fetchCount == 2, "an unknown kid makes one refetch")
            _ = try await client.verifier.verify(first)  // the old key is still published

            try await harness.provider.retireSigningKey(oldKid)
            let fresh = harness.client()
            await Self.expectRefused(harness, first, .unknownKey)
            _ = try await fresh.verifier.verify(second)
            await #expect(throws: ProviderError.self) { try await harness.provider.retireSigningKey(newKid) }
        }
    }
}
