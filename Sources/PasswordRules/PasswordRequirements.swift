/// The character sets and limits a password must meet, derived from ``PasswordRules``.
///
/// This is the "generator view" made concrete: required classes are implicitly allowed, a rule that
/// allows nothing allows ascii-printable, and `unicode` admits any character when validating (a
/// generator types ascii-printable for it, as Apple's does).
public struct PasswordRequirements: Hashable, Sendable {
    /// Characters a password may contain (ASCII part).
    public var allowed: ASCIISet
    /// Whether any Unicode character is allowed (`allowed: unicode`).
    public var allowsUnicode: Bool
    /// One set per `required` line; a line containing `unicode` is met by any character.
    public var required: [RequiredLine]
    /// Longest run of one repeated character (`max-repeating`, or `max-consecutive`).
    public var repeatLimit: Int?
    /// Longest run of ±1 steps within `a-z`, `A-Z` or `0-9` (`max-sequential`, or `max-consecutive`).
    public var sequenceLimit: Int?
    public var minLength: Int?
    public var maxLength: Int?

    /// One `required` line.
    public struct RequiredLine: Hashable, Sendable {
        /// The line's position among the rules' `required` lines (0-based).
        public var index: Int
        public var classes: [CharacterClass]
        public var characters: ASCIISet
        public var admitsUnicode: Bool

        func isMet(by scalar: Unicode.Scalar) -> Bool {
            admitsUnicode || characters.contains(scalar)
        }
    }

    public init(_ rules: PasswordRules) {
        var allowedClasses = rules.allowed
        for line in rules.required {
            allowedClasses += line
        }
        if allowedClasses.isEmpty {
            allowedClasses = [.asciiPrintable]
        }
        allowed = allowedClasses.asciiCharacters
        allowsUnicode = allowedClasses.admitsUnicode
        required = rules.required.enumerated().compactMap { index, line in
            let characters = line.asciiCharacters
            guard !characters.isEmpty else { return nil }
            return RequiredLine(index: index, classes: line, characters: characters, admitsUnicode: line.admitsUnicode)
        }
        func strictest(_ a: Int?, _ b: Int?) -> Int? {
            switch (a, b) {
            case (nil, nil): return nil
            case (let a?, nil): return a
            case (nil, let b?): return b
            case (let a?, let b?): return min(a, b)
            }
        }
        repeatLimit = strictest(rules.maxConsecutive, rules.maxRepeating)
        sequenceLimit = strictest(rules.maxConsecutive, rules.maxSequential)
        minLength = rules.minLength
        maxLength = rules.maxLength
    }

    func isAllowed(_ scalar: Unicode.Scalar) -> Bool {
        allowsUnicode || allowed.contains(scalar)
    }
}
