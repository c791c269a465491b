import Foundation

/// Generates strong passwords that satisfy password rules.
///
/// ```swift
/// let generator = try PasswordGenerator(rules: PasswordRules("required: digit; maxlength: 12;"))
/// let password = try generator.generate()               // system CSPRNG
/// var rng = SeededRandomNumberGenerator(seed: 1)          // from KeyhavenTesting
/// let fixed = try generator.generate(using: &rng)         // reproducible in tests
/// ```
///
/// - With no rules, or rules that admit it, passwords use Apple's format: 20 characters
///   `xxxxxx-xxxxxx-xxxxxx` of consonant–vowel syllables with exactly one upper-case letter and one
///   digit (about 71 bits). Without `-` in the allowed set the dashes are dropped (18 characters).
/// - Otherwise passwords are drawn uniformly from the allowed characters at the longest length the
///   rules allow, up to ``defaultLength`` (longer when the alphabet is small, to keep ≥ 71 bits),
///   and kept only if every `required` line has its own character and the repeat / sequence limits
///   hold — rejection sampling, so every valid password of that length is equally likely. If that is
///   too unlikely to succeed quickly, a constructive generator places each required line's
///   character at its own random position and avoids forbidden runs.
/// - The space character is never drawn unless a `required` line can only be met by it: it is
///   legal in `special` but is trimmed or mistyped by too many sites.
/// - Impossible rules fail at `init` with a ``PasswordGenerationError``; generation never loops
///   forever.
public struct PasswordGenerator: Sendable {
    /// Preferred length when rules leave it open.
    public static let defaultLength = 20
    /// Longest password generated when rules do not ask for more.
    public static let maximumDefaultLength = 64
    /// Entropy the random style aims for when the alphabet is small.
    public static let targetBits = 71.0

    /// How the generator builds passwords for its rules.
    public enum Style: Hashable, Sendable {
        /// Apple's syllable format; `dashes` is false when `-` is not allowed.
        case appleFormat(dashes: Bool)
        /// Uniform characters from `alphabet` at `length`.
        case random(length: Int, alphabet: String)
    }

    public let requirements: PasswordRequirements
    /// The style this generator tries first.
    public let style: Style
    let randomPlan: RandomPlan?

    /// A generator for Apple's default format (no rules).
    public init() {
        requirements = PasswordRequirements(PasswordRules(allowed: [.asciiPrintable]))
        style = .appleFormat(dashes: true)
        randomPlan = nil
    }

    /// A generator for `rules` (generator view, or display view: both give the same requirements).
    /// - Throws: ``PasswordGenerationError`` when the rules cannot be met by any password.
    public init(rules: PasswordRules) throws(PasswordGenerationError) {
        let requirements = PasswordRequirements(rules)
        self.requirements = requirements
        let plan = try RandomPlan(requirements)
        if let dashes = Self.appleFormatDashes(requirements) {
            style = .appleFormat(dashes: dashes)
        } else {
            style = .random(length: plan.length, alphabet: String(decoding: plan.alphabet, as: UTF8.self))
        }
        randomPlan = plan
    }

    /// A password from the system's cryptographically secure generator.
    public func generate() throws(PasswordGenerationError) -> String {
        var rng = SystemRandomNumberGenerator()
        return try generate(using: &rng)
    }

    /// A password drawn with `rng`. Pass a cryptographically secure generator outside tests.
    public func generate<R: RandomNumberGenerator>(using rng: inout R) throws(PasswordGenerationError) -> String {
        if case .appleFormat(let dashes) = style {
            for _ in 0..<Self.appleFormatAttempts {
                let candidate = Self.appleFormatScalars(dashes: dashes, using: &rng)
                if randomPlan == nil || requirements.validate(scalars: candidate).isValid {
                    return String(String.UnicodeScalarView(candidate))
                }
            }
        }
        guard let randomPlan else {
            preconditionFailure("the default format always validates against its own rules")
        }
        return try randomPlan.generate(requirements, using: &rng)
    }

    /// Bits of entropy of the first-choice style (the uniform estimate for the random style).
    public var estimatedBits: Double {
        switch style {
        case .appleFormat:
            return Self.appleFormatBits
        case .random(let length, let alphabet):
            let size = Double(alphabet.utf8.count)
            return size > 1 ? Double(length) * log2(size) : 0
        }
    }

    static let appleFormatAttempts = 64
}
