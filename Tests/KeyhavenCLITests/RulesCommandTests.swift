import Foundation
import KeyhavenTesting
import PasswordRules
import Testing

/// End-to-end tests of `keyhaven rules …` and `keyhaven generate`, run against the built binary.
struct RulesCommandTests {
    let keyhaven = CommandRunner.keyhaven()

    @Test func canonicalOfOneRule() throws {
        let result = try keyhaven.run(["rules", "canonical", "minlength: 8; required: upper,UPPER; allowed: [a-c]"])
        #expect(result.status == 0)
        #expect(result.lines == ["required: upper; allowed: [ac]; minlength: 8;"])
        #expect(result.stderr.contains("may only appear as the first character"))
    }

    @Test func canonicalFromStandardInputKeepsOrderAndEmptyLines() throws {
        let input = "required: digit\r\ndummy: x\n\nmaxlength: 4;minlength: 2\n"
        let result = try keyhaven.run(["rules", "canonical", "-"], stdin: input)
        #expect(result.status == 0)
        #expect(result.lines == ["required: digit;", "", "", "minlength: 2; maxlength: 4;"])
        #expect(result.stderr.contains("line 2:"))
        #expect(!result.stderr.contains("line 1:"))
    }

    @Test func allQuirksAreCanonicalWithoutDiagnostics() throws {
        let rules = PasswordRulesQuirks.shared.entries.values.map(\.ruleText)
        let result = try keyhaven.run(
            ["rules", "canonical", "-", "--strict"],
            stdin: rules.joined(separator: "\n") + "\n"
        )
        #expect(result.status == 0)
        #expect(result.stderr.isEmpty, "\(result.stderr)")
        #expect(result.lines.count == rules.count)
        #expect(result.lines == rules.map(PasswordRules.canonical))
        // And the canonical forms are fixed points.
        let again = try keyhaven.run(["rules", "canonical", "-"], stdin: result.stdout)
        #expect(again.lines == result.lines)
    }

    @Test func strictFailsOnErrors() throws {
        let result = try keyhaven.run(["rules", "canonical", "--strict", "Required: upper"])
        #expect(result.status == 1)
        #expect(result.lines == [""])
    }

    @Test func checkReportsEachPasswordAndExitsOneOnFailure() throws {
        let rules = "required: upper; required: digit; allowed: lower; minlength: 8"
        let pass = try keyhaven.run(["rules", "check", "--rules", rules, "Abcdefg1"])
        #expect(pass.status == 0)
        #expect(pass.lines == ["pass"])
        let mixed = try keyhaven.run(["rules", "check", "--rules", rules], stdin: "Abcdefg1\nshort\nABCDEFGH1\n")
        #expect(mixed.status == 1)
        #expect(mixed.lines.count == 3)
        #expect(mixed.lines[0] == "pass")
        #expect(mixed.lines[1].hasPrefix("fail: too short: 5 characters, minlength is 8"))
        #expect(mixed.lines[1].contains("required line 1"))
        #expect(mixed.lines[1].contains("required line 2"))
        #expect(mixed.lines[2] == "pass")
        // Passwords are never echoed.
        #expect(!mixed.stdout.contains("short") || mixed.stdout.contains("too short"))
        #expect(!mixed.stdout.contains("Abcdefg1"))
    }

    @Test func checkJSON() throws {
        let result = try keyhaven.run(["rules", "check", "--json", "--rules", "minlength: 4", "abc", "abcd"])
        #expect(result.status == 1)
        struct Line: Decodable {
            var valid: Bool
            var failures: [String]
        }
        let lines = try result.lines.map { try JSONDecoder().decode(Line.self, from: Data($0.utf8)) }
        #expect(lines.map(\.valid) == [false, true])
        #expect(lines[0].failures == ["too short: 3 characters, minlength is 4"])
    }

    @Test func lookup() throws {
        let found = try keyhaven.run(["rules", "lookup", "appleid.apple.com"])
        #expect(found.status == 0)
        #expect(found.lines == [PasswordRulesQuirks.shared.entries["apple.com"]!.ruleText])
        let missing = try keyhaven.run(["rules", "lookup", "no-such-site.example"])
        #expect(missing.status == 0)
        #expect(missing.lines == ["none"])
        let json = try keyhaven.run(["rules", "lookup", "--json", "https://www.apple.com/x"])
        #expect(json.stdout.contains(#""domain":"apple.com""#))
    }

    @Test func generateDefaultFormat() throws {
        let result = try keyhaven.run(["generate", "--count", "5"])
        #expect(result.status == 0)
        #expect(result.lines.count == 5)
        for password in result.lines {
            #expect(password.count == 20)
            #expect(PasswordRules("").validate(password).isValid)
        }
        #expect(Set(result.lines).count == 5)
    }

    @Test func generateWithRulesAndDomain() throws {
        let rules = "required: [!#]; allowed: lower; maxlength: 10"
        let result = try keyhaven.run(["generate", "--rules", rules, "-n", "20"])
        #expect(result.status == 0)
        for password in result.lines {
            #expect(PasswordRules(rules).validate(password).isValid)
        }
        let quirk = PasswordRulesQuirks.shared.rules(forDomain: "americanexpress.com")!
        let byDomain = try keyhaven.run(["generate", "--domain", "americanexpress.com", "-n", "20"])
        #expect(byDomain.lines.count == 20)
        for password in byDomain.lines {
            #expect(quirk.rules.validate(password).isValid)
        }
    }

    @Test func generateJSON() throws {
        let result = try keyhaven.run(["generate", "--json", "-n", "3", "--rules", "allowed: digit; maxlength: 6"])
        struct Report: Decodable {
            var passwords: [String]
            var style: String
            var rules: String?
            var bits: Double
        }
        let report = try JSONDecoder().decode(Report.self, from: Data(result.stdout.utf8))
        #expect(report.passwords.count == 3)
        #expect(report.passwords.allSatisfy { $0.count == 6 && $0.allSatisfy(\.isNumber) })
        #expect(report.style == "random")
        #expect(report.rules == "allowed: digit; maxlength: 6;")
        #expect(abs(report.bits - 19.9) < 0.1)
    }

    @Test func impossibleRulesAreAClearError() throws {
        let result = try keyhaven.run(["generate", "--rules", "minlength: 30; maxlength: 10"])
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.contains("minlength 30 is greater than maxlength 10"))
    }

    @Test func badUsageIsExplained() throws {
        let result = try keyhaven.run(["generate", "--rules", "x", "--domain", "y"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("either --rules or --domain"))
    }
}
