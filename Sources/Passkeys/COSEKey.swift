public import Crypto
import Foundation

/// A credential public key as WebAuthn carries it (RFC 9053 COSE_Key in CBOR): ES256 (EC2, P-256)
/// or EdDSA (OKP, Ed25519) — the two Keyhaven's authenticator makes and its relying-party kit
/// verifies.
public enum COSEKey: Sendable, Hashable {
    case es256(P256.Signing.PublicKey)
    case ed25519(Curve25519.Signing.PublicKey)

    /// COSE algorithm identifiers.
    public enum Algorithm: Int, Sendable, CaseIterable {
        case es256 = -7
        case eddsa = -8
    }

    public var algorithm: Algorithm {
        switch self {
        case .es256: .es256
        case .ed25519: .eddsa
        }
    }

    /// The key as CBOR: `{1: kty, 3: alg, -1: crv, -2: x[, -3: y]}`.
    public var cbor: CBOR {
        switch self {
        case .es256(let key):
            let point = Array(key.x963Representation)  // 04 || x || y
            return .map([
                .init(CBOR(1), CBOR(2)), .init(CBOR(3), CBOR(-7)), .init(CBOR(-1), CBOR(1)),
                .init(CBOR(-2), .bytes(Array(point[1..<33]))), .init(CBOR(-3), .bytes(Array(point[33..<65]))),
            ])
        case .ed25519(let key):
            return .map([
                .init(CBOR(1), CBOR(1)), .init(CBOR(3), CBOR(-8)), .init(CBOR(-1), CBOR(6)),
                .init(CBOR(-2), .bytes(Array(key.rawRepresentation))),
            ])
        }
    }

    /// The key as an X.509 SubjectPublicKeyInfo (DER): what `getPublicKey()` returns in the page
    /// and the `publicKey` of `RegistrationResponseJSON`.
    public var subjectPublicKeyInfo: [UInt8] {
        switch self {
        case .es256(let key):
            return Array(key.derRepresentation)
        case .ed25519(let key):
            // RFC 8410: SEQUENCE { SEQUENCE { OID 1.3.101.112 }, BIT STRING (0 unused bits) key }.
            return [0x30, 0x2A, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x03, 0x21, 0x00]
                + Array(key.rawRepresentation)
        }
    }

    /// Reads a COSE key, refusing anything but a well-formed ES256 or Ed25519 key.
    public init(cbor: CBOR) throws(PasskeyError) {
        guard let kty = cbor[1]?.int, let alg = cbor[3]?.int, let crv = cbor[-1]?.int, let x = cbor[-2]?.byteString
        else { throw PasskeyError(.invalidKey, "the credential public key lacks kty, alg, crv or x") }
        switch (kty, alg, crv) {
        case (2, -7, 1):
            guard let y = cbor[-3]?.byteString, x.count == 32, y.count == 32,
                let key = try? P256.Signing.PublicKey(x963Representation: [4] + x + y)
            else { throw PasskeyError(.invalidKey, "the P-256 point is not on the curve or has the wrong size") }
            self = .es256(key)
        case (1, -8, 6):
            guard x.count == 32, let key = try? Curve25519.Signing.PublicKey(rawRepresentation: x) else {
                throw PasskeyError(.invalidKey, "the Ed25519 key has the wrong size")
            }
            self = .ed25519(key)
        default:
            throw PasskeyError(.unsupportedAlgorithm, "only ES256 (-7) and EdDSA (-8, Ed25519) keys are supported")
        }
    }

    /// Whether `signature` (ES256: ASN.1 DER, as WebAuthn sends it; EdDSA: 64 bytes) signs `data`.
    public func isValidSignature(_ signature: [UInt8], for data: [UInt8]) -> Bool {
        switch self {
        case .es256(let key):
            guard let parsed = try? P256.Signing.ECDSASignature(derRepresentation: signature) else { return false }
            return key.isValidSignature(parsed, for: data)
        case .ed25519(let key):
            return key.isValidSignature(signature, for: data)
        }
    }

    public static func == (lhs: COSEKey, rhs: COSEKey) -> Bool { lhs.cbor == rhs.cbor }
    public func hash(into hasher: inout Hasher) { hasher.combine(cbor) }
}
