/// Why no password can be generated for a set of rules.
///
/// A struct with an opaque ``Code`` so new cases never break callers; compare errors by code.
public struct PasswordGenerationError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String {
            case minLengthExceedsMaxLength, requiredNotAllowed, tooManyRequiredLines, limitsUnsatisfiable
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }
        public var description: String { base.rawValue }

        /// `minlength` is greater than `maxlength`.
        public static let minLengthExceedsMaxLength = Code(.minLengthExceedsMaxLength)
        /// A `required` line has no character the password may contain.
        public static let requiredNotAllowed = Code(.requiredNotAllowed)
        /// More `required` lines than `maxlength` characters.
        public static let tooManyRequiredLines = Code(.tooManyRequiredLines)
        /// The repeat / sequence limits cannot be met with the allowed characters at this length.
        public static let limitsUnsatisfiable = Code(.limitsUnsatisfiable)
    }

    public var code: Code
    /// What is impossible and how the rules could be changed. Never contains a password.
    public var reason: String

    public init(code: Code, reason: String) {
        self.code = code
        self.reason = reason
    }

    public var description: String { "PasswordGenerationError.\(code): \(reason)" }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
