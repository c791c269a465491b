/// Why a token was refused or could not be made. Messages name the rule that failed, never a key,
/// a signature or a secret.
public struct JOSEError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Code: String, Hashable, Sendable {
        /// Not three base64url parts, or a header or payload that is not a JSON object.
        case malformed
        /// `none`, `HS256`, or any algorithm other than the one expected.
        case unsupportedAlgorithm
        /// No key with the token's `kid`.
        case unknownKey
        /// The key cannot be used (wrong type, too small, not a valid point).
        case invalidKey
        case badSignature
        case expired
        /// `iat`/`nbf` in the future beyond the leeway.
        case notYetValid
        case wrongIssuer
        case wrongAudience
        case badNonce
        /// A required claim is missing or has the wrong type.
        case missingClaim
        /// A claim is present but not acceptable (a lifetime too long, a wrong subject…).
        case invalidClaim
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
