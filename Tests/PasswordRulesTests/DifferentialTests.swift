import Foundation
import KeyhavenTesting
import PasswordRules
import Testing

/// Compares our parser with recorded outputs of Apple's `PasswordRulesParser.js` on 4,000+ inputs:
/// curated edge cases plus seeded random rule-like strings (see the fixture's `source`).
@Suite(.offCooperativePool)
struct DifferentialTests {
    struct Fixture: Decodable {
        struct Case: Decodable {
            var input: String
            var display: String
            var generator: String
            var appleReportedErrors: Bool
        }
        var cases: [Case]
    }

    /// Inputs where we differ on purpose: our `max-repeating` / `max-sequential` extension (Apple
    /// discards the whole string), and integers beyond 2^53, which JavaScript rounds as doubles and we
    /// clamp to `Int.max`.
    static func isKnownDifference(_ input: String) -> Bool {
        input.contains("max-repeating") || input.contains("max-sequential")
            || input.contains("99999999999999999999")
    }

    @Test func matchesApplesParser() throws {
        let fixture = try Fixtures.decode(Fixture.self, "apple-parser-differential.json")
        #expect(fixture.cases.count > 4000)
        var compared = 0
        for testCase in fixture.cases where !Self.isKnownDifference(testCase.input) {
            compared += 1
            let display = PasswordRules.parse(testCase.input, view: .display)
            let generator = PasswordRules.parse(testCase.input, view: .generator)
            #expect(display.rules.description == testCase.display, "display of \(testCase.input.debugDescription)")
            #expect(
                generator.rules.description == testCase.generator,
                "generator of \(testCase.input.debugDescription)"
            )
            // Whenever Apple logs a problem, so do we (we also report some it accepts silently).
            if testCase.appleReportedErrors {
                #expect(
                    !display.diagnostics(atLeast: .error).isEmpty,
                    "no error for \(testCase.input.debugDescription)"
                )
            } else {
                #expect(display.diagnostics(atLeast: .error).isEmpty, "error for \(testCase.input.debugDescription)")
            }
        }
        #expect(compared > 3700)
    }
}
