import Foundation
import KeyhavenTesting
import PasswordRules
import Testing

@Suite(.offCooperativePool)
struct QuirksTests {
    static let quirks = PasswordRulesQuirks.shared

    @Test func shipsAllOfApplesQuirks() throws {
        #expect(Self.quirks.entries.count == 434)
        // The compiled-in copy is the committed resource file, byte for byte.
        let resource = Fixtures.packageRoot().appendingPathComponent(
            "Sources/PasswordRules/Resources/password-rules.json"
        )
        let onDisk = try PasswordRulesQuirks(json: String(decoding: Data(contentsOf: resource), as: UTF8.self))
        #expect(onDisk.entries == Self.quirks.entries)
    }

    @Test func everyQuirkParsesCleanlyAndRoundTrips() {
        for entry in Self.quirks.entries.values {
            let parsed = PasswordRules.parse(entry.ruleText, view: .display)
            // Apple's CI rejects any quirk that makes its parser log; non-ASCII characters inside
            // classes (five quirks have them) are dropped silently there and are notices here.
            #expect(parsed.diagnostics(atLeast: .warning).isEmpty, "\(entry.domain): \(parsed.diagnostics)")
            #expect(parsed.diagnostics.allSatisfy { $0.code == .nonPrintableCharacter }, "\(entry.domain)")
            let canonical = parsed.rules.description
            #expect(!canonical.isEmpty, "\(entry.domain)")
            let reparsed = PasswordRules.parse(canonical, view: .display)
            #expect(reparsed.diagnostics.isEmpty, "\(entry.domain): \(reparsed.diagnostics)")
            #expect(reparsed.rules.description == canonical, "\(entry.domain)")
            #expect(reparsed.rules == parsed.rules, "\(entry.domain)")
            // The generator view of the canonical form equals the generator view of the original.
            #expect(PasswordRules(canonical) == entry.rules, "\(entry.domain)")
        }
    }

    @Test func twoHundredGeneratedPasswordsPerQuirkPassValidation() throws {
        var rng = SeededRandomNumberGenerator(seed: 434)
        var styles: [String: Int] = [:]
        for entry in Self.quirks.entries.values.sorted(by: { $0.domain < $1.domain }) {
            let generator = try PasswordGenerator(rules: entry.rules)
            styles["\(generator.style)".prefix(6).description, default: 0] += 1
            for _ in 0..<200 {
                let password = try generator.generate(using: &rng)
                let report = entry.rules.validate(password)
                #expect(report.isValid, "\(entry.domain): \(report)")
                if !report.isValid { break }
            }
        }
        // Both styles are exercised by the real-world rules.
        #expect(styles.count == 2, "\(styles)")
    }

    @Test(arguments: [
        ("apple.com", "apple.com"),
        ("APPLE.COM.", "apple.com"),
        ("id.apple.com", "apple.com"),
        ("a.b.apple.com", "apple.com"),
        ("https://appleid.apple.com/account", "apple.com"),
        ("apple.com:443", "apple.com"),
    ])
    func subdomainsMatch(_ query: String, _ expected: String) {
        #expect(Self.quirks.rules(forDomain: query)?.domain == expected)
    }

    @Test func unrelatedDomainsDoNotMatch() {
        #expect(Self.quirks.rules(forDomain: "notapple.com") == nil)
        #expect(Self.quirks.rules(forDomain: "apple.com.evil.example") == nil)
        #expect(Self.quirks.rules(forDomain: "") == nil)
        #expect(Self.quirks.rules(forDomain: "com") == nil)
    }

    @Test func exactDomainMatchOnlyEntriesIgnoreSubdomains() throws {
        let json = """
            {
              "example.com": {"password-rules": "minlength: 8;", "exact-domain-match-only": true},
              "example.org": {"password-rules": "minlength: 9;"},
              "login.example.org": {"password-rules": "minlength: 10;", "exact-domain-match-only": true}
            }
            """
        let quirks = try PasswordRulesQuirks(json: json)
        #expect(quirks.rules(forDomain: "example.com")?.rules.minLength == 8)
        #expect(quirks.rules(forDomain: "www.example.com") == nil)
        #expect(quirks.rules(forDomain: "a.example.org")?.rules.minLength == 9)
        #expect(quirks.rules(forDomain: "login.example.org")?.rules.minLength == 10)
        // A more specific exact-only entry does not block its parent for deeper subdomains.
        #expect(quirks.rules(forDomain: "x.login.example.org")?.rules.minLength == 9)
    }
}
