import Foundation
import _KeyhavenSupport

/// A JWS protected header. Only what Sign in with Apple uses: `alg`, `kid`, `typ`.
public struct JWSHeader: Codable, Hashable, Sendable {
    public var alg: String
    public var kid: String?
    public var typ: String?

    public init(alg: String, kid: String? = nil, typ: String? = nil) {
        self.alg = alg
        self.kid = kid
        self.typ = typ
    }
}

/// A compact-serialized JWS taken apart, not yet verified.
public struct CompactJWS: Sendable {
    public let header: JWSHeader
    public let payload: [UInt8]
    public let signingInput: [UInt8]
    public let signature: [UInt8]

    /// Parses `header.payload.signature`, strictly: three parts, canonical base64url, a header
    /// that is a JSON object with a string `alg`, a payload that is a JSON object.
    public init(_ token: String) throws(JOSEError) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw JOSEError(.malformed, "a JWS has three dot-separated parts") }
        guard let headerBytes = Base64URL.decode(parts[0]), let payload = Base64URL.decode(parts[1]),
            let signature = Base64URL.decode(parts[2])
        else { throw JOSEError(.malformed, "a part is not base64url") }
        guard let header = try? JSONDecoder().decode(JWSHeader.self, from: Data(headerBytes)) else {
            throw JOSEError(.malformed, "the header is not a JSON object with alg")
        }
        guard (try? JSONSerialization.jsonObject(with: Data(payload))) is [String: Any] else {
            throw JOSEError(.malformed, "the payload is not a JSON object")
        }
        self.header = header
        self.payload = payload
        self.signingInput = Array(parts[0].utf8) + [UInt8(ascii: ".")] + Array(parts[1].utf8)
        self.signature = signature
    }

    /// Checks the signature with `key`. The algorithm is the key's, never the header's choice:
    /// `none`, `HS256` (an RSA public key used as an HMAC secret) or anything else is refused.
    public func verify(with key: any JWSVerificationKey) throws(JOSEError) {
        guard header.alg == key.algorithm else {
            throw JOSEError(.unsupportedAlgorithm, "alg \(header.alg.debugDescription) is not \(key.algorithm)")
        }
        guard key.isValidSignature(signature, for: signingInput) else {
            throw JOSEError(.badSignature, "the signature does not verify")
        }
    }

    public func claims<Claims: Decodable>(as type: Claims.Type) throws(JOSEError) -> Claims {
        do {
            return try JSONDecoder().decode(Claims.self, from: Data(payload))
        } catch {
            throw JOSEError(.missingClaim, "the claims do not have the expected shape (\(Self.describe(error)))")
        }
    }

    static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _): return "no \(key.stringValue)"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            return "wrong type for \(context.codingPath.map(\.stringValue).joined(separator: "."))"
        case DecodingError.dataCorrupted(let context):
            return "bad \(context.codingPath.map(\.stringValue).joined(separator: "."))"
        default: return "undecodable"
        }
    }
}

/// Signing compact JWS tokens.
public enum JWS {
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
        return encoder
    }()

    /// An RS256 token with Apple's header shape `{"kid":…,"alg":"RS256"}`.
    public static func sign(_ claims: some Encodable, with key: RSASigningKey) throws -> String {
        try sign(claims, header: #"{"kid":\#(quoted(key.kid)),"alg":"RS256"}"#, signer: key.sign)
    }

    /// An ES256 token (`client_secret`): `{"alg":"ES256","kid":…}`.
    public static func sign(_ claims: some Encodable, with key: ES256SigningKey) throws -> String {
        try sign(claims, header: #"{"alg":"ES256","kid":\#(quoted(key.kid))}"#, signer: key.sign)
    }

    static func quoted(_ text: String) -> String {
        let data = (try? encoder.encode(text)) ?? Data(#""""#.utf8)
        return String(decoding: data, as: UTF8.self)
    }

    /// Any header (tests forge tokens with this).
    public static func sign(
        _ claims: some Encodable,
        header: String,
        signer: ([UInt8]) throws -> [UInt8]
    ) throws -> String {
        let payload: [UInt8] =
            if let writable = claims as? any JSONObjectWritable { writable.jsonBytes } else {
                Array(try encoder.encode(claims))
            }
        let input = Base64URL.encode(header) + "." + Base64URL.encode(payload)
        return input + "." + Base64URL.encode(try signer(Array(input.utf8)))
    }
}
