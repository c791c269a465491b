/// Why a token was refused or could not be made. Messages name the rule that failed, never a key,
/// a signature or a secret.
///
/// A struct with an opaque ``Code`` so new cases never break callers; errors compare by code.
public struct JOSEError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String {
            case malformed, unsupportedAlgorithm, unknownKey, invalidKey, badSignature, expired, notYetValid
            case wrongIssuer, wrongAudience, badNonce, missingClaim, invalidClaim
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }
        /// The code's name (`expired`, `badSignature`…); the token endpoint quotes it.
        public var description: String { base.rawValue }

        /// Not three base64url parts, or a header or payload that is not a JSON object.
        public static let malformed = Code(.malformed)
        /// `none`, `HS256`, or any algorithm other than the one expected.
        public static let unsupportedAlgorithm = Code(.unsupportedAlgorithm)
        /// No key with the token's `kid`.
        public static let unknownKey = Code(.unknownKey)
        /// The key cannot be used (wrong type, too small, not a valid point).
        public static let invalidKey = Code(.invalidKey)
        /// The signature does not verify.
        public static let badSignature = Code(.badSignature)
        /// `exp` is past, beyond the leeway.
        public static let expired = Code(.expired)
        /// `iat`/`nbf` in the future beyond the leeway.
        public static let notYetValid = Code(.notYetValid)
        public static let wrongIssuer = Code(.wrongIssuer)
        public static let wrongAudience = Code(.wrongAudience)
        public static let badNonce = Code(.badNonce)
        /// A required claim is missing or has the wrong type.
        public static let missingClaim = Code(.missingClaim)
        /// A claim is present but not acceptable (a lifetime too long, a wrong subject…).
        public static let invalidClaim = Code(.invalidClaim)
    }

    public var code: Code
    /// Which rule failed. Never contains a key, a signature or a secret.
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
