import Foundation
import KeyhavenJOSE
import _KeyhavenSupport

/// One fuzz input, the first byte choosing what the rest is:
/// - even: a compact JWS (`header.payload.signature`), as the provider receives `client_secret`
///   tokens and clients receive id_tokens;
/// - odd: a JWK set (`{"keys": [...]}`), as a relying party downloads it, each key then made into
///   a verification key.
///
/// Beyond "no crash": a parsed JWS re-encodes to exactly its parts (canonical base64url, so one
/// token has one meaning), its signing input is its first two parts, and a signature made by no key
/// verifies under none; a JWK that makes a key re-exports as a JWK that makes the same key; every
/// base64url part round-trips.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: start, count: count)
    guard let mode = bytes.first else { return 0 }
    let text = String(decoding: bytes.dropFirst(), as: UTF8.self)
    if mode & 1 == 0 {
        fuzzToken(text)
    } else {
        fuzzKeySet(Array(bytes.dropFirst()))
    }
    return 0
}

/// Keys made once: a JWS signed by nobody must verify under neither.
let rsaKey = try! RSASigningKey.generate(kid: "fuzz-rsa")
let ecKey = ES256SigningKey.generate(kid: "fuzz-ec")

func fuzzToken(_ token: String) {
    for part in token.split(separator: ".", omittingEmptySubsequences: false) {
        if let decoded = Base64URL.decode(part), Base64URL.encode(decoded) != part {
            fatalError("base64url accepted a non-canonical part")
        }
    }
    guard let jws = try? CompactJWS(token) else { return }
    let parts = token.split(separator: ".", omittingEmptySubsequences: false)
    guard parts.count == 3 else { fatalError("a JWS without three parts parsed") }
    guard Base64URL.encode(jws.payload) == parts[1], Base64URL.encode(jws.signature) == parts[2] else {
        fatalError("a JWS part does not re-encode to itself")
    }
    guard jws.signingInput == Array(parts[0].utf8) + [UInt8(ascii: ".")] + Array(parts[1].utf8) else {
        fatalError("the signing input is not header.payload")
    }
    guard (try? JSONSerialization.jsonObject(with: Data(jws.payload))) is [String: Any] else {
        fatalError("a payload that is not a JSON object parsed")
    }
    // Nobody signed this with our keys: a successful verification would be a forgery.
    if (try? jws.verify(with: rsaKey.publicKey)) != nil || (try? jws.verify(with: ecKey.publicKey)) != nil {
        fatalError("a token verified under a key that never signed it")
    }
    _ = try? jws.claims(as: IdentityTokenClaims.self)
    _ = try? jws.claims(as: ClientSecretClaims.self)
    _ = try? jws.claims(as: NotificationClaims.self)
}

func fuzzKeySet(_ bytes: [UInt8]) {
    if let pem = String(validating: bytes, as: UTF8.self) {
        _ = try? ES256PublicKey(pemRepresentation: pem)
    }
    guard let set = try? JSONDecoder().decode(JWKSet.self, from: Data(bytes)) else { return }
    // The set re-encodes and decodes to itself.
    guard let encoded = try? JSONEncoder().encode(set),
        let again = try? JSONDecoder().decode(JWKSet.self, from: encoded),
        again == set
    else { fatalError("a JWK set does not survive encoding") }
    for jwk in set.keys {
        if let key = try? RSAPublicKey(jwk: jwk) {
            let exported = key.jwk(kid: jwk.kid ?? "")
            guard let reimported = try? RSAPublicKey(jwk: exported), reimported.jwk(kid: "") == key.jwk(kid: "") else {
                fatalError("an RSA key does not survive export")
            }
        }
        if let key = try? ES256PublicKey(jwk: jwk) {
            let exported = key.jwk(kid: jwk.kid ?? "")
            guard exported.x == jwk.x, exported.y == jwk.y,
                let reimported = try? ES256PublicKey(jwk: exported),
                reimported.pemRepresentation == key.pemRepresentation
            else { fatalError("an EC key does not survive export") }
        }
        _ = set.key(withID: jwk.kid ?? "")
    }
}

/// Real tokens and key sets, made with the provider's own signing code: RS256 id_tokens and ES256
/// client secrets (selector 0), the matching JWK sets and a PEM public key (selector 1), and the
/// classic forgeries (`alg: none`, `HS256`) for the parser to refuse.
func seeds() -> [[UInt8]] {
    let claims = IdentityTokenClaims(
        iss: "https://idp.example",
        sub: "000123.abc",
        aud: "com.example.web",
        iat: 1_700_000_000,
        exp: 1_700_000_600,
        nonce: "n-0S6_WzA2Mj",
        email: "ada@example.com",
        email_verified: BoolClaim(true, asString: true)
    )
    let secret = ClientSecretClaims(
        iss: "TEAMID1234",
        iat: 1_700_000_000,
        exp: 1_700_000_600,
        aud: "https://idp.example",
        sub: "com.example.web"
    )
    var tokens = [try! JWS.sign(claims, with: rsaKey), try! JWS.sign(secret, with: ecKey)]
    tokens.append(try! JWS.sign(claims, header: #"{"alg":"none"}"#) { _ in [] })
    tokens.append(try! JWS.sign(claims, header: #"{"alg":"HS256","kid":"fuzz-rsa"}"#) { Array($0.prefix(32)) })
    let sets = [
        JWKSet(keys: [rsaKey.publicJWK, ecKey.publicKey.jwk(kid: "fuzz-ec")]),
        JWKSet(keys: [JWK(kty: "oct", kid: "k"), JWK(kty: "EC", crv: "P-384", x: "AA", y: "AA")]),
    ]
    var result = tokens.map { [0] + Array($0.utf8) }
    result += sets.map { [1] + Array(try! JSONEncoder().encode($0)) }
    result.append([1] + Array(ecKey.publicKey.pemRepresentation.utf8))
    return result
}
