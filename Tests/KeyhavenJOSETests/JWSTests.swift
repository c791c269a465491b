import Crypto
import Foundation
import KeyhavenJOSE
import KeyhavenTesting
import Testing
import _KeyhavenSupport

/// Compact JWS and JWK on their own (the provider signs with them, the relying-party kit checks
/// with them): the algorithm is the key's, parsing is strict, and keys survive their JWK form.
@Suite(.offCooperativePool)
struct JWSTests {
    struct Claims: Codable, Equatable {
        var sub: String
        var n: Int
    }

    static func expect(_ code: JOSEError.Code, _ body: () throws(JOSEError) -> Void) {
        do {
            try body()
            Issue.record("expected \(code), nothing was thrown")
        } catch {
            #expect(error.code == code, "expected \(code), got \(error)")
        }
    }

    @Test func es256SignsAndVerifiesThroughItsJWK() throws {
        let key = ES256SigningKey.generate(kid: "k1")
        let token = try JWS.sign(Claims(sub: "ada", n: 7), with: key)
        let jws = try CompactJWS(token)
        #expect(jws.header == JWSHeader(alg: "ES256", kid: "k1"))
        let published = try ES256PublicKey(jwk: key.publicKey.jwk(kid: "k1"))
        try jws.verify(with: published)
        #expect(try jws.claims(as: Claims.self) == Claims(sub: "ada", n: 7))
        #expect(published.pemRepresentation == key.publicKey.pemRepresentation)

        let stranger = ES256SigningKey.generate(kid: "k1").publicKey
        Self.expect(.badSignature) { () throws(JOSEError) in try jws.verify(with: stranger) }
        // The same claims under another payload: the signature covers the payload.
        let parts = token.split(separator: ".")
        let forged = parts[0] + "." + Base64URL.encode(#"{"n":8,"sub":"ada"}"#) + "." + parts[2]
        Self.expect(.badSignature) { () throws(JOSEError) in try CompactJWS(String(forged)).verify(with: published) }
    }

    @Test func theKeyChoosesTheAlgorithmNotTheHeader() throws {
        let ec = ES256SigningKey.generate(kid: "k1")
        let rsa = try RSASigningKey.generate(kid: "r1")
        let rs256 = try CompactJWS(try JWS.sign(Claims(sub: "s", n: 1), with: rsa))
        try rs256.verify(with: try RSAPublicKey(jwk: rsa.publicJWK))
        Self.expect(.unsupportedAlgorithm) { () throws(JOSEError) in try rs256.verify(with: ec.publicKey) }
        let none = try CompactJWS(try JWS.sign(Claims(sub: "s", n: 1), header: #"{"alg":"none"}"#) { _ in [] })
        Self.expect(.unsupportedAlgorithm) { () throws(JOSEError) in try none.verify(with: rsa.publicKey) }
        Self.expect(.unsupportedAlgorithm) { () throws(JOSEError) in try none.verify(with: ec.publicKey) }
    }

    @Test func es256SignaturesMustBeRawNotDER() throws {
        let key = ES256SigningKey.generate(kid: "k1")
        let der = try JWS.sign(Claims(sub: "s", n: 1), header: #"{"alg":"ES256","kid":"k1"}"#) { input in
            let pem = try P256.Signing.PrivateKey(pemRepresentation: key.pemRepresentation)
            return Array(try pem.signature(for: input).derRepresentation)
        }
        Self.expect(.badSignature) { () throws(JOSEError) in try CompactJWS(der).verify(with: key.publicKey) }
    }

    @Test func parsingIsStrict() throws {
        let token = try JWS.sign(Claims(sub: "s", n: 1), with: ES256SigningKey.generate(kid: "k1"))
        let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let cases = [
            parts[0] + "." + parts[1],  // two parts
            token + ".",  // four parts
            parts[0] + "=." + parts[1] + "." + parts[2],  // padding
            Base64URL.encode(#"{"kid":"k1"}"#) + "." + parts[1] + "." + parts[2],  // no alg
            Base64URL.encode(#"{"alg":1}"#) + "." + parts[1] + "." + parts[2],  // alg not a string
            parts[0] + "." + Base64URL.encode("[1,2]") + "." + parts[2],  // payload not an object
        ]
        for bad in cases {
            Self.expect(.malformed) { () throws(JOSEError) in _ = try CompactJWS(bad) }
        }
        Self.expect(.missingClaim) { () throws(JOSEError) in
            _ = try CompactJWS(token).claims(as: IdentityTokenClaims.self)
        }
    }

    @Test func jwksRefuseKeysThatDoNotFit() throws {
        let rsa = try RSASigningKey.generate(kid: "r1")
        var wrongAlg = rsa.publicJWK
        wrongAlg.alg = "ES256"
        Self.expect(.invalidKey) { () throws(JOSEError) in _ = try RSAPublicKey(jwk: wrongAlg) }
        let ec = ES256SigningKey.generate(kid: "k1").publicKey.jwk(kid: "k1")
        Self.expect(.invalidKey) { () throws(JOSEError) in _ = try RSAPublicKey(jwk: ec) }
        var otherCurve = ec
        otherCurve.crv = "P-384"
        Self.expect(.invalidKey) { () throws(JOSEError) in _ = try ES256PublicKey(jwk: otherCurve) }
        var shortX = ec
        shortX.x = Base64URL.encode([UInt8](repeating: 1, count: 31))
        Self.expect(.invalidKey) { () throws(JOSEError) in _ = try ES256PublicKey(jwk: shortX) }
        Self.expect(.invalidKey) { () throws(JOSEError) in _ = try ES256PublicKey(pemRepresentation: "not a key") }

        let set = JWKSet(keys: [rsa.publicJWK, ec])
        #expect(set.key(withID: "k1") == ec && set.key(withID: "r1") == rsa.publicJWK && set.key(withID: "x") == nil)
        let reloaded = try RSASigningKey(kid: "r1", pemRepresentation: rsa.pemRepresentation)
        #expect(reloaded.publicJWK == rsa.publicJWK)
    }
}
