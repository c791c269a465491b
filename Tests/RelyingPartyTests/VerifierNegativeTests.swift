import Crypto
import Foundation
import IdentityProviderTestSupport
import KeyhavenJOSE
import KeyhavenTesting
import RelyingParty
import Testing
import _CryptoExtras
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

            // The algorithm is the key's: ES256 named with the provider's RSA kid is refused before
            // any signature is checked, and a token without a kid finds no key.
            let team = ES256SigningKey.generate(kid: key.kid)
            let es256 = try JWS.sign(Self.claims(harness), header: #"{"alg":"ES256","kid":"\#(key.kid)"}"#) {
                try team.sign($0)
            }
            await Self.expectRefused(harness, es256, .unsupportedAlgorithm)
            let noKid = try JWS.sign(Self.claims(harness), header: #"{"alg":"RS256"}"#) { try key.sign($0) }
            await Self.expectRefused(harness, noKid, .unknownKey)
        }
    }

    /// A key set served from memory.
    struct StaticKeys: RelyingPartyTransport {
        let set: JWKSet
        func get(_ url: String) async throws -> (status: Int, body: [UInt8]) {
            (200, Array(try JSONEncoder().encode(set)))
        }
        func postForm(
            _ url: String,
            fields: [(String, String)],
            bearer: String?
        ) async throws -> (
            status: Int, body: [UInt8]
        ) { (404, []) }
    }

    /// P-256 keys in the set verify ES256 tokens, and only those; RSA keys under 2048 bits are left out.
    @Test func es256KeysCheckES256TokensOnlyAndSmallRSAKeysAreIgnored() async throws {
        let ec = ES256SigningKey.generate(kid: "EC1")
        let rsa = try RSASigningKey.generate(kid: "RSA1")
        // A 1024-bit modulus (any odd number with its top bit set makes a public key).
        var modulus = (0..<128).map { _ in UInt8.random(in: 0...255) }
        modulus[0] |= 0x80
        modulus[127] |= 1
        let small = JWK(kty: "RSA", kid: "SMALL1", alg: "RS256", n: Base64URL.encode(modulus), e: "AQAB")
        let issuer = "https://idp.example.test"
        let verifier = IdentityTokenVerifier(
            issuer: issuer,
            audiences: ["com.example.app"],
            keys: JWKSCache(
                url: "https://idp.example.test/auth/keys",
                transport: StaticKeys(
                    set: JWKSet(keys: [ec.publicKey.jwk(kid: ec.kid), rsa.publicJWK, small])
                )
            )
        )
        let now = Int64(Date().timeIntervalSince1970)
        let claims = IdentityTokenClaims(iss: issuer, sub: "s", aud: "com.example.app", iat: now, exp: now + 60)
        #expect(try await verifier.verify(try JWS.sign(claims, with: ec)).sub == "s")
        #expect(try await verifier.verify(try JWS.sign(claims, with: rsa)).sub == "s")
        for (token, code) in [
            (try JWS.sign(claims, header: #"{"alg":"RS256","kid":"EC1"}"#) { try rsa.sign($0) }, .unsupportedAlgorithm),
            (try JWS.sign(claims, header: #"{"alg":"RS256","kid":"SMALL1"}"#) { try rsa.sign($0) }, .unknownKey),
        ] as [(String, JOSEError.Code)] {
            do {
                _ = try await verifier.verify(token)
                Issue.record("a token that should fail with \(code) was accepted")
            } catch {
                #expect(error.code == code, "expected \(code), got \(error)")
            }
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
