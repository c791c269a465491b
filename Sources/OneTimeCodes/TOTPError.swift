/// Why a TOTP secret or `otpauth://` URI cannot be used. Messages never contain the secret.
///
/// A struct with an opaque ``Code`` so new cases never break callers; errors compare by code.
public struct TOTPError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String {
            case missingSecret, invalidSecret, unsupportedParameters
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }
        public var description: String { base.rawValue }

        /// An `otpauth://` URI without a `secret` parameter.
        public static let missingSecret = Code(.missingSecret)
        /// The secret is not base32 (RFC 4648), or is empty.
        public static let invalidSecret = Code(.invalidSecret)
        /// Digits outside 6…10, or a period that is not positive.
        public static let unsupportedParameters = Code(.unsupportedParameters)
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
