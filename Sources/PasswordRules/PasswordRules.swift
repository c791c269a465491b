/// A parsed password-rules string (Apple's `passwordrules` language).
///
/// ```swift
/// let parsed = PasswordRules.parse("required: upper; required: digit; minlength: 8;")
/// print(parsed.rules)              // the generator view
/// print(PasswordRules.canonical("minlength: 8; required: upper,UPPER"))
/// // required: upper; minlength: 8;
/// let report = parsed.rules.validate("Passw0rd")
/// ```
///
/// Properties are combined the way Apple's parser combines them: every `required` line is kept in
/// order (each needs its own character), `allowed` lines are unioned, and the strictest
/// `minlength` / `maxlength` / `max-consecutive` wins.
public struct PasswordRules: Hashable, Sendable, CustomStringConvertible {
    /// The property names of the language, plus the `max-repeating` / `max-sequential` extension
    /// (apple/password-manager-resources PR #1255).
    public enum PropertyName: String, Sendable, CaseIterable {
        case required
        case allowed
        case maxConsecutive = "max-consecutive"
        case minLength = "minlength"
        case maxLength = "maxlength"
        /// Extension: at most N identical characters in a row.
        case maxRepeating = "max-repeating"
        /// Extension: at most N characters stepping by ±1 within `a-z`, `A-Z` or `0-9`.
        case maxSequential = "max-sequential"
    }

    /// Which of Apple's two outputs a parse produces.
    public enum View: Sendable {
        /// What generators use (`parsePasswordRules(input, false)`): required classes are also
        /// allowed, and a rule that allows nothing explicitly allows `ascii-printable`.
        case generator
        /// Apple's display / lint form (`parsePasswordRules(input, true)`): required classes are not
        /// copied into `allowed`, there is no default `allowed`, and custom classes are written so that
        /// they parse back to themselves.
        case display
    }

    /// Each line must be met by its own character; within a line, any class will do.
    public var required: [[CharacterClass]]
    /// Characters a password may contain. Empty means "not restricted" (display view only).
    public var allowed: [CharacterClass]
    /// `max-consecutive`: an alias for both ``maxRepeating`` and ``maxSequential`` (upstream PR #1255).
    public var maxConsecutive: Int?
    public var maxRepeating: Int?
    public var maxSequential: Int?
    public var minLength: Int?
    public var maxLength: Int?

    public init(
        required: [[CharacterClass]] = [],
        allowed: [CharacterClass] = [],
        maxConsecutive: Int? = nil,
        maxRepeating: Int? = nil,
        maxSequential: Int? = nil,
        minLength: Int? = nil,
        maxLength: Int? = nil
    ) {
        self.required = required
        self.allowed = allowed
        self.maxConsecutive = maxConsecutive
        self.maxRepeating = maxRepeating
        self.maxSequential = maxSequential
        self.minLength = minLength
        self.maxLength = maxLength
    }

    /// Whether the rules say nothing at all (the result of parsing an empty or discarded string in
    /// the display view).
    public var isEmpty: Bool { self == PasswordRules() }

    /// Apple's display form: `name: value;` pieces joined by one space, classes joined by ",".
    ///
    /// Order: every `required` line, `allowed`, `max-consecutive`, then the `max-repeating` and
    /// `max-sequential` extensions, `minlength`, `maxlength`. An empty rule set gives "".
    public var description: String {
        var pieces: [String] = []
        for line in required {
            pieces.append("required: \(line.ruleDescription);")
        }
        if !allowed.isEmpty {
            pieces.append("allowed: \(allowed.ruleDescription);")
        }
        if let maxConsecutive { pieces.append("max-consecutive: \(maxConsecutive);") }
        if let maxRepeating { pieces.append("max-repeating: \(maxRepeating);") }
        if let maxSequential { pieces.append("max-sequential: \(maxSequential);") }
        if let minLength { pieces.append("minlength: \(minLength);") }
        if let maxLength { pieces.append("maxlength: \(maxLength);") }
        return pieces.joined(separator: " ")
    }
}

/// The outcome of parsing: the rules plus every problem the parser recovered from.
public struct PasswordRulesParseResult: Hashable, Sendable {
    public var rules: PasswordRules
    public var diagnostics: [PasswordRulesDiagnostic]

    /// Whether the parser gave up on the whole string.
    public var wasDiscarded: Bool { diagnostics.contains { $0.consequence == .ruleDiscarded } }

    /// The diagnostics at or above `severity`.
    public func diagnostics(atLeast severity: PasswordRulesDiagnostic.Severity) -> [PasswordRulesDiagnostic] {
        diagnostics.filter { $0.severity >= severity }
    }
}

extension PasswordRules {
    /// Parses a rule string. Never fails: problems come back as diagnostics, exactly where Apple's
    /// parser would log them, and are recovered from the same way.
    public static func parse(_ text: String, view: View = .generator) -> PasswordRulesParseResult {
        var parser = PasswordRulesParser(text)
        let properties = parser.parseProperties() ?? []
        let rules = combine(properties, view: view)
        var diagnostics = parser.diagnostics
        if view == .display {
            for classes in rules.required + [rules.allowed] {
                for case .custom(let characters) in classes {
                    if let dash = characters.firstIndex(of: "-"), dash != characters.startIndex {
                        diagnostics.append(
                            PasswordRulesDiagnostic(
                                code: .displayDropsDash,
                                consequence: .warning,
                                message: "in the display form [\(characters)] the \"-\" is not first, so it "
                                    + "would not survive a re-parse: a known bug of Apple's canonical form, "
                                    + "reproduced here for parity",
                                offset: 0
                            )
                        )
                    }
                }
            }
        }
        return PasswordRulesParseResult(rules: rules, diagnostics: diagnostics)
    }

    /// Parses a rule string and returns it in Apple's display form (§6 of the reference): the
    /// canonical, re-parseable spelling. A rule that parses to nothing gives "".
    public static func canonical(_ text: String) -> String {
        parse(text, view: .display).rules.description
    }

    /// Parses a rule string in the generator view, ignoring diagnostics.
    public init(_ text: String) {
        self = Self.parse(text).rules
    }

    /// Combines properties as `parsePasswordRules` does.
    static func combine(_ properties: [PasswordRulesParser.Property], view: View) -> PasswordRules {
        let formatCompliant = view == .display
        var rules = PasswordRules()
        var allowedValues: [CharacterClass] = []
        for property in properties {
            switch property.name {
            case .maxConsecutive:
                rules.maxConsecutive = min(property.integer, rules.maxConsecutive ?? .max)
            case .maxRepeating:
                rules.maxRepeating = min(property.integer, rules.maxRepeating ?? .max)
            case .maxSequential:
                rules.maxSequential = min(property.integer, rules.maxSequential ?? .max)
            case .minLength:
                rules.minLength = max(property.integer, rules.minLength ?? 0)
            case .maxLength:
                rules.maxLength = min(property.integer, rules.maxLength ?? .max)
            case .required:
                let line = canonicalize(property.classes, formatCompliant: formatCompliant)
                rules.required.append(line)
                if view == .generator {
                    allowedValues += line
                }
            case .allowed:
                allowedValues += property.classes
            }
        }
        rules.allowed = canonicalize(allowedValues, formatCompliant: formatCompliant)
        if view == .generator && rules.allowed.isEmpty {
            rules.allowed = [.asciiPrintable]
        }
        return rules
    }
}
