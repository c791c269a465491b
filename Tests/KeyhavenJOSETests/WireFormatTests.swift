import Foundation
import KeyhavenJOSE
import KeyhavenTesting
import Testing
import _KeyhavenSupport

/// The byte-level encodings every token goes through: base64url, and claims written by hand.
@Suite(.offCooperativePool)
struct WireFormatTests {
    @Test(arguments: 0..<40) func base64URLMatchesFoundation(length: Int) {
        let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        let expected = Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        #expect(Base64URL.encode(bytes) == expected)
        #expect(Base64URL.decode(expected) == bytes)
    }

    @Test func base64URLIsStrict() {
        #expect(Base64URL.decode("QQ==") == nil, "padding")
        #expect(Base64URL.decode("Q+") == nil, "the standard alphabet")
        #expect(Base64URL.decode("QR") == nil, "non-canonical trailing bits")
        #expect(Base64URL.decode("Q") == nil, "an impossible length")
        #expect(Base64URL.decode("QQ") == [0x41])
    }

    @Test func claimsWrittenByHandDecodeToTheSameClaims() throws {
        for asString in [false, true] {
            let claims = IdentityTokenClaims(
                iss: "https://id.example/\"quoted\"\\",
                sub: "000001.abc.0001",
                aud: "com.example\n\u{01}é",
                iat: 1_700_000_000,
                exp: 1_700_086_400,
                nonce: "n/1",
                nonce_supported: true,
                at_hash: "h",
                email: "a@b.c",
                email_verified: BoolClaim(true, asString: asString),
                is_private_email: BoolClaim(false, asString: asString),
                auth_time: 5,
                real_user_status: 2,
                transfer_sub: "t"
            )
            let decoded = try JSONDecoder().decode(IdentityTokenClaims.self, from: Data(claims.jsonBytes))
            #expect(decoded == claims)
            #expect(try JSONSerialization.jsonObject(with: Data(claims.jsonBytes)) is [String: Any])
        }
    }
}
