/// Which password rules apply to a service — the one decision every caller makes the same way
/// (`keyhaven generate --domain`, `add`, `edit --generate`, upgrades, AutoFill):
///
/// 1. the service's own requirements (its account-modification manifest's
///    `passwordGenerationRequirements`, or a field's `passwordrules` attribute), when given;
/// 2. otherwise Apple's published quirk for the first of the service's domains that has one;
/// 3. otherwise none: Apple's format (`PasswordGenerator()`).
///
/// ```swift
/// let choice = try ServicePasswordRules(requirements: manifest.passwordGenerationRequirements,
///                                       domains: ["github.com"])
/// let password = try choice.generator().generate()
/// ```
public struct ServicePasswordRules: Sendable {
    /// Where the rules came from.
    public enum Source: Sendable, Hashable, CustomStringConvertible {
        /// The service's own requirements.
        case service
        /// Apple's quirk for this domain (the entry's domain, which may be a parent).
        case quirk(domain: String)
        /// No rules: Apple's format.
        case appleFormat

        public var description: String {
            switch self {
            case .service: "rules"
            case .quirk(let domain): "quirk:\(domain)"
            case .appleFormat: "default"
            }
        }
    }

    /// The rules, nil for Apple's format.
    public let rules: PasswordRules?
    /// The rules as text (the requirements or the quirk's rule), nil for Apple's format.
    public let ruleText: String?
    public let source: Source

    /// The rules for a service: `requirements` when non-empty, else the first quirk among
    /// `domains` (domains or URLs), else Apple's format.
    public init(requirements: String?, domains: [String], quirks: PasswordRulesQuirks = .shared) {
        if let requirements, requirements.contains(where: { !$0.isWhitespace }) {
            rules = PasswordRules(requirements)
            ruleText = requirements
            source = .service
            return
        }
        for domain in domains {
            if let quirk = quirks.rules(forDomain: domain) {
                rules = quirk.rules
                ruleText = quirk.ruleText
                source = .quirk(domain: quirk.domain)
                return
            }
        }
        rules = nil
        ruleText = nil
        source = .appleFormat
    }

    /// A generator for these rules; throws when they cannot be met.
    public func generator() throws(PasswordGenerationError) -> PasswordGenerator {
        guard let rules else { return PasswordGenerator() }
        return try PasswordGenerator(rules: rules)
    }

    /// A new password, from `rng`.
    public func generate<R: RandomNumberGenerator>(using rng: inout R) throws(PasswordGenerationError) -> String {
        try generator().generate(using: &rng)
    }

    /// A new password from the system's secure generator.
    public func generate() throws(PasswordGenerationError) -> String {
        try generator().generate()
    }
}
