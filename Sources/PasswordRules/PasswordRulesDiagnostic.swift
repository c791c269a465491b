/// A problem the parser found and recovered from.
///
/// Apple's parser never throws: it logs and recovers, sometimes by discarding the whole rule string.
/// We report every such event as a value so callers can show it, lint with it, or ignore it.
public struct PasswordRulesDiagnostic: Hashable, Sendable, CustomStringConvertible {
    /// What the parser did about the problem.
    public enum Consequence: String, Hashable, Sendable, CaseIterable {
        /// The whole rule string was discarded; the result is the default rules.
        case ruleDiscarded = "rule discarded"
        /// Parsing stopped here; the properties before it were kept.
        case remainderIgnored = "remainder ignored"
        /// This one property was dropped; the rest was kept.
        case propertyDropped = "property dropped"
        /// One custom character class was dropped from a property's value.
        case classDropped = "class dropped"
        /// One character was dropped from a custom character class.
        case characterDropped = "character dropped"
        /// An integer too large for this platform was clamped.
        case valueClamped = "value clamped"
        /// Nothing was dropped, but the output has a known problem.
        case warning = "warning"
    }

    /// How loudly a problem should be reported.
    public enum Severity: String, Hashable, Sendable, Comparable {
        /// Apple's parser accepts this silently (a non-printable character in a class, a value of 0,
        /// an empty value or class). Rules in the wild have them: Apple's own quirks contain
        /// non-ASCII characters in classes.
        case notice
        /// Accepted by Apple's parser without complaint, but the result is probably not what was
        /// meant (our clamping of huge integers, the display form's dash bug).
        case warning
        /// Apple's parser logs this as an error (and its CI rejects quirks that have one).
        case error

        public static func < (lhs: Self, rhs: Self) -> Bool {
            let order: [Severity] = [.notice, .warning, .error]
            return order.firstIndex(of: lhs)! < order.firstIndex(of: rhs)!
        }
    }

    /// Stable identifiers for matching diagnostics in code and tests.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        public static let unknownProperty = Code("unknown-property")
        public static let missingColon = Code("missing-colon")
        public static let emptyValue = Code("empty-value")
        public static let unknownCharacterClass = Code("unknown-character-class")
        public static let expectedCharacterClass = Code("expected-character-class")
        public static let trailingComma = Code("trailing-comma")
        public static let expectedSeparator = Code("expected-separator")
        public static let unterminatedCharacterClass = Code("unterminated-character-class")
        public static let emptyCharacterClass = Code("empty-character-class")
        public static let misplacedDash = Code("misplaced-dash")
        public static let nonPrintableCharacter = Code("non-printable-character")
        public static let notAnInteger = Code("not-an-integer")
        public static let zeroValue = Code("zero-value")
        public static let integerOverflow = Code("integer-overflow")
        public static let expectedPropertyName = Code("expected-property-name")
        /// The display form puts a `-` after letters or digits, so it will not re-parse as a dash
        /// (Apple's canonical form has this bug; we reproduce it and warn).
        public static let displayDropsDash = Code("display-drops-dash")
    }

    public var code: Code
    public var consequence: Consequence
    /// Derived from the code: see ``Severity``.
    public var severity: Severity {
        switch code {
        case .nonPrintableCharacter, .zeroValue, .emptyValue, .emptyCharacterClass: return .notice
        case .integerOverflow, .displayDropsDash: return .warning
        default: return .error
        }
    }
    /// What went wrong, in words. Rules are public data, so quoting them is safe.
    public var message: String
    /// Offset of the problem in the rule string, in Unicode scalars.
    public var offset: Int

    public init(code: Code, consequence: Consequence, message: String, offset: Int) {
        self.code = code
        self.consequence = consequence
        self.message = message
        self.offset = offset
    }

    public var description: String { "\(severity.rawValue): offset \(offset): \(message) (\(consequence.rawValue))" }
}
