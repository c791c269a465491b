import Crypto
import Foundation
import _CryptoExtras
import _KeyhavenSupport

/// A JSON Web Key (RFC 7517), as `/auth/keys` publishes RSA keys and teams register EC P-256 keys.
public struct JWK: Codable, Hashable, Sendable {
    public var kty: String
    public var kid: String?
    public var use: String?
    public var alg: String?
    // RSA
    public var n: String?
    public var e: String?
    // EC
    public var crv: String?
    public var x: String?
    public var y: String?

    public init(
        kty: String,
        kid: String? = nil,
        use: String? = nil,
        alg: String? = nil,
        n: String? = nil,
        e: String? = nil,
        crv: String? = nil,
        x: String? = nil,
        y: String? = nil
    ) {
        self.kty = kty
        self.kid = kid
        self.use = use
        self.alg = alg
        self.n = n
        self.e = e
        self.crv = crv
        self.x = x
        self.y = y
    }
}

/// `{"keys": [...]}`.
public struct JWKSet: Codable, Hashable, Sendable {
    public var keys: [JWK]

    public init(keys: [JWK]) { self.keys = keys }

    public func key(withID kid: String) -> JWK? { keys.first { $0.kid == kid } }
}

/// A public key that can check one JWS algorithm.
public protocol JWSVerificationKey: Sendable {
    /// The only `alg` this key accepts.
    var algorithm: String { get }
    func isValidSignature(_ signature: [UInt8], for signingInput: [UInt8]) -> Bool
}

/// An RS256 signing key (RSASSA-PKCS1-v1_5 with SHA-256), with the `kid` it is published under.
public struct RSASigningKey: Sendable {
    public let kid: String
    let key: _RSA.Signing.PrivateKey

    /// A new 2048-bit key.
    public static func generate(kid: String) throws -> RSASigningKey {
        RSASigningKey(kid: kid, key: try _RSA.Signing.PrivateKey(keySize: .bits2048))
    }

    public init(kid: String, pemRepresentation: String) throws {
        self.init(kid: kid, key: try _RSA.Signing.PrivateKey(pemRepresentation: pemRepresentation))
    }

    init(kid: String, key: _RSA.Signing.PrivateKey) {
        self.kid = kid
        self.key = key
    }

    public var pemRepresentation: String { key.pemRepresentation }

    public var publicKey: RSAPublicKey { RSAPublicKey(key: key.publicKey) }

    /// The public half as Apple publishes it: `kty`, `kid`, `use: sig`, `alg: RS256`, `n`, `e`.
    public var publicJWK: JWK { publicKey.jwk(kid: kid) }

    public func sign(_ signingInput: [UInt8]) throws -> [UInt8] {
        [UInt8](try key.signature(for: signingInput, padding: .insecurePKCS1v1_5).rawRepresentation)
    }
}

/// An RSA public key for RS256; keys under 2048 bits are refused.
public struct RSAPublicKey: JWSVerificationKey {
    let key: _RSA.Signing.PublicKey
    public var algorithm: String { "RS256" }

    init(key: _RSA.Signing.PublicKey) { self.key = key }

    public init(jwk: JWK) throws(JOSEError) {
        guard jwk.kty == "RSA", let n = jwk.n.flatMap(Base64URL.decode), let e = jwk.e.flatMap(Base64URL.decode)
        else { throw JOSEError(.invalidKey, "not an RSA key with n and e") }
        if let alg = jwk.alg, alg != "RS256" { throw JOSEError(.invalidKey, "the key is for \(alg), not RS256") }
        guard let key = try? _RSA.Signing.PublicKey(n: n, e: e) else {
            throw JOSEError(.invalidKey, "n and e do not form an RSA key")
        }
        guard key.keySizeInBits >= 2048 else {
            throw JOSEError(.invalidKey, "RSA keys under 2048 bits are refused")
        }
        self.key = key
    }

    public func jwk(kid: String) -> JWK {
        let primitives = try? key.getKeyPrimitives()
        return JWK(
            kty: "RSA",
            kid: kid,
            use: "sig",
            alg: "RS256",
            n: Base64URL.encode(primitives?.modulus ?? Data()),
            e: Base64URL.encode(primitives?.publicExponent ?? Data())
        )
    }

    public func isValidSignature(_ signature: [UInt8], for signingInput: [UInt8]) -> Bool {
        guard signature.count == key.keySizeInBits / 8 else { return false }
        return key.isValidSignature(
            _RSA.Signing.RSASignature(rawRepresentation: signature),
            for: signingInput,
            padding: .insecurePKCS1v1_5
        )
    }
}

/// An ES256 private key (P-256), as a developer's `.p8` file holds it; used to sign `client_secret`.
public struct ES256SigningKey: Sendable {
    public let kid: String
    let key: P256.Signing.PrivateKey

    public static func generate(kid: String) -> ES256SigningKey {
        ES256SigningKey(kid: kid, key: P256.Signing.PrivateKey())
    }

    /// From a PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`), as Apple's `.p8` files are.
    public init(kid: String, pemRepresentation: String) throws {
        self.init(kid: kid, key: try P256.Signing.PrivateKey(pemRepresentation: pemRepresentation))
    }

    init(kid: String, key: P256.Signing.PrivateKey) {
        self.kid = kid
        self.key = key
    }

    public var pemRepresentation: String { key.pemRepresentation }
    public var publicKey: ES256PublicKey { ES256PublicKey(key: key.publicKey) }

    /// JOSE form: the raw 64-byte r‖s, never DER.
    public func sign(_ signingInput: [UInt8]) throws -> [UInt8] {
        [UInt8](try key.signature(for: signingInput).rawRepresentation)
    }
}

/// An EC P-256 public key for ES256. Signatures must be the 64-byte r‖s form: DER is refused.
public struct ES256PublicKey: JWSVerificationKey {
    let key: P256.Signing.PublicKey
    public var algorithm: String { "ES256" }

    init(key: P256.Signing.PublicKey) { self.key = key }

    /// From a PEM `PUBLIC KEY` (SubjectPublicKeyInfo).
    public init(pemRepresentation: String) throws(JOSEError) {
        guard let key = try? P256.Signing.PublicKey(pemRepresentation: pemRepresentation) else {
            throw JOSEError(.invalidKey, "not a P-256 public key in PEM form")
        }
        self.key = key
    }

    public init(jwk: JWK) throws(JOSEError) {
        guard jwk.kty == "EC", jwk.crv == "P-256", let x = jwk.x.flatMap(Base64URL.decode),
            let y = jwk.y.flatMap(Base64URL.decode), x.count == 32, y.count == 32,
            let key = try? P256.Signing.PublicKey(rawRepresentation: x + y)
        else { throw JOSEError(.invalidKey, "not an EC P-256 key") }
        self.key = key
    }

    public var pemRepresentation: String { key.pemRepresentation }

    public func jwk(kid: String) -> JWK {
        let raw = [UInt8](key.rawRepresentation)
        return JWK(
            kty: "EC",
            kid: kid,
            use: "sig",
            alg: "ES256",
            crv: "P-256",
            x: Base64URL.encode(raw[0..<32]),
            y: Base64URL.encode(raw[32..<64])
        )
    }

    public func isValidSignature(_ signature: [UInt8], for signingInput: [UInt8]) -> Bool {
        guard signature.count == 64, let parsed = try? P256.Signing.ECDSASignature(rawRepresentation: signature)
        else { return false }
        return key.isValidSignature(parsed, for: signingInput)
    }
}
