import Foundation
import _KeyhavenSupport

/// Apple's per-site password rules (`quirks/password-rules.json` from apple/password-manager-resources,
/// MIT; see `Resources/README.md`), compiled into the binary.
///
/// ```swift
/// if let quirk = PasswordRulesQuirks.shared.rules(forDomain: "login.example.com") {
///     print(quirk.domain, quirk.rules)
/// }
/// ```
public struct PasswordRulesQuirks: Sendable {
    /// One entry of the quirks file.
    public struct Entry: Hashable, Sendable {
        /// The domain the entry is keyed by.
        public var domain: String
        /// The rule string exactly as in the file.
        public var ruleText: String
        /// The parsed rules (generator view).
        public var rules: PasswordRules
        /// When true, the entry matches only `domain` itself, not its subdomains.
        public var exactDomainMatchOnly: Bool
    }

    /// All entries, by domain.
    public let entries: [String: Entry]

    /// The quirks shipped with Keyhaven.
    public static let shared = parseEmbedded("password-rules.json") {
        try PasswordRulesQuirks(json: embeddedPasswordRulesJSON)
    }

    /// Loads a file in the format of `quirks/password-rules.json`.
    public init(json: String) throws {
        struct Raw: Decodable {
            var passwordRules: String
            var exactDomainMatchOnly: Bool?
            enum CodingKeys: String, CodingKey {
                case passwordRules = "password-rules"
                case exactDomainMatchOnly = "exact-domain-match-only"
            }
        }
        let raw = try JSONDecoder().decode([String: Raw].self, from: Data(json.utf8))
        var entries: [String: Entry] = [:]
        for (domain, value) in raw {
            let key = Self.normalize(domain)
            entries[key] = Entry(
                domain: key,
                ruleText: value.passwordRules,
                rules: PasswordRules(value.passwordRules),
                exactDomainMatchOnly: value.exactDomainMatchOnly ?? false
            )
        }
        self.entries = entries
    }

    /// The quirk for `domain`, following Apple's matching: an entry matches its own domain and all of
    /// its subdomains (`example.com` matches `a.b.example.com`), except entries marked
    /// `exact-domain-match-only`, which match only themselves. The most specific entry wins.
    ///
    /// `domain` may also be a URL (`https://Login.Example.com/path`); its host is used. Case and a
    /// trailing dot are ignored.
    public func rules(forDomain domain: String) -> Entry? {
        var host = Self.normalize(Self.host(of: domain))
        guard !host.isEmpty else { return nil }
        if let entry = entries[host] {
            return entry
        }
        while let dot = host.firstIndex(of: ".") {
            host = String(host[host.index(after: dot)...])
            if let entry = entries[host], !entry.exactDomainMatchOnly {
                return entry
            }
        }
        return nil
    }

    /// Lower-cases a domain and drops a trailing dot, as lookups do.
    public static func normalize(_ domain: String) -> String {
        var result = domain.trimmingCharacters(in: .whitespaces).lowercased()
        while result.hasSuffix(".") {
            result.removeLast()
        }
        return result
    }

    /// The host of a URL-looking string, or the string itself.
    static func host(of text: String) -> String {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.contains("://"), let host = URLComponents(string: trimmed)?.host {
            return host
        }
        // "example.com/path" or "example.com:443"
        let cut = trimmed.firstIndex { $0 == "/" || $0 == ":" } ?? trimmed.endIndex
        return String(trimmed[..<cut])
    }
}
