import PasswordRules
import Testing

struct ValidationTests {
    typealias Failure = PasswordValidationReport.Failure

    @Test func validPasswordPasses() {
        let rules = PasswordRules("required: upper; required: digit; allowed: lower; minlength: 8; maxlength: 12")
        #expect(rules.validate("abcdeF1x").isValid)
        #expect(rules.validate("abcdeF1x").description == "pass")
    }

    @Test func lengthLimits() {
        let rules = PasswordRules("minlength: 8; maxlength: 10")
        #expect(rules.validate("short").failures == [.tooShort(length: 5, minimum: 8)])
        #expect(rules.validate("muchtoolongforthis").failures == [.tooLong(length: 18, maximum: 10)])
        // Length counts Unicode scalars, not bytes.
        #expect(PasswordRules("maxlength: 3; allowed: unicode").validate("ééé").isValid)
    }

    @Test func eachRequiredLineNeedsItsOwnCharacter() {
        let rules = PasswordRules("allowed: lower; required: digit; required: digit; required: upper, digit")
        #expect(
            rules.validate("ab1").failures == [
                .missingRequired(line: 1, classes: [.digit]), .missingRequired(line: 2, classes: [.upper, .digit]),
            ]
        )
        #expect(rules.validate("ab12").failures == [.missingRequired(line: 2, classes: [.upper, .digit])])
        #expect(rules.validate("a1b2C").isValid)
        #expect(rules.validate("123").isValid)
        // Matching, not greedy: line 1 may take the "A" so that line 2 gets the "1".
        let flexible = PasswordRules("required: upper, digit; required: digit")
        #expect(flexible.validate("1A").isValid)
    }

    @Test func disallowedCharactersAreReportedByPosition() {
        let rules = PasswordRules("allowed: lower, digit")
        let report = rules.validate("ab!c d")
        #expect(report.failures == [.disallowedCharacters(positions: [3, 5])])
        #expect(!report.description.contains("!"))
        #expect(
            PasswordRules("allowed: ascii-printable").validate("naïve").failures == [
                .disallowedCharacters(positions: [3])
            ]
        )
        #expect(PasswordRules("allowed: unicode").validate("naïve😀").isValid)
    }

    @Test func maxConsecutiveLimitsRepeatsAndSequences() {
        let rules = PasswordRules("max-consecutive: 2")
        #expect(rules.validate("aabba").isValid)
        #expect(rules.validate("xaaay").failures == [.repeatedRun(position: 2, length: 3, limit: 2)])
        #expect(rules.validate("xabcy").failures == [.sequentialRun(position: 2, length: 3, limit: 2)])
        #expect(rules.validate("x321y").failures == [.sequentialRun(position: 2, length: 3, limit: 2)])
        // Steps must stay inside a-z, A-Z or 0-9: "9:;" and "YZ[" are not sequences.
        #expect(rules.validate("9:;YZ[").isValid)
    }

    @Test func maxRepeatingAndMaxSequentialAreSeparate() {
        let repeating = PasswordRules("max-repeating: 2")
        #expect(repeating.validate("abcdef").isValid)
        #expect(!repeating.validate("aaa").isValid)
        let sequential = PasswordRules("max-sequential: 3")
        #expect(sequential.validate("aaaa").isValid)
        #expect(sequential.validate("abc").isValid)
        #expect(sequential.validate("cba").isValid)
        #expect(sequential.validate("abcba").isValid)
        #expect(sequential.validate("abcd").failures == [.sequentialRun(position: 1, length: 4, limit: 3)])
    }

    @Test func reportsEveryProblemAtOnce() {
        let rules = PasswordRules("required: upper; allowed: lower; minlength: 6; max-consecutive: 1")
        let report = rules.validate("aa!")
        #expect(report.failures.count == 4)
        #expect(report.description.contains("too short"))
        #expect(report.description.contains("required line 1"))
    }

    @Test func emptyRequiredLinesAreIgnored() {
        #expect(PasswordRules("required: []; minlength: 1").validate("x").isValid)
    }
}

extension ValidationTests {
    /// Apple's generator view: without an `allowed` line, the required classes are all that is
    /// allowed (`required: upper; required: digit` allows upper-case letters and digits only).
    @Test func requiredClassesDefineTheAllowedSetWhenNoneIsGiven() {
        let rules = PasswordRules("required: upper; required: digit")
        #expect(rules.validate("ABC1").isValid)
        #expect(rules.validate("AbC1").failures == [.disallowedCharacters(positions: [2])])
    }
}
