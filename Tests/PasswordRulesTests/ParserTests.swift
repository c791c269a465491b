import PasswordRules
import Testing

/// Parser behaviour from §1–§5 of the password-rules reference, with the exact canonical output
/// (display view) Apple's parser gives, and what it does about each problem.
struct ParserTests {
    typealias Consequence = PasswordRulesDiagnostic.Consequence

    struct Case: Sendable, CustomTestStringConvertible {
        var input: String
        var display: String
        var consequence: Consequence?
        var testDescription: String { input.debugDescription }
    }

    // §5: whole string discarded.
    static let discarded: [Case] = [
        Case(input: "dummy: upper", display: "", consequence: .ruleDiscarded),
        Case(input: "Required: upper", display: "", consequence: .ruleDiscarded),
        Case(input: "upper: lower", display: "", consequence: .ruleDiscarded),
        Case(input: "minlength : 8", display: "", consequence: .ruleDiscarded),
        Case(input: "required: A", display: "", consequence: .ruleDiscarded),
        Case(input: "required: 1", display: "", consequence: .ruleDiscarded),
        Case(input: "allowed: upper [a]", display: "", consequence: .ruleDiscarded),
        Case(input: "required: upper,,", display: "", consequence: .ruleDiscarded),
        Case(input: "max-consecutive: upper", display: "", consequence: .ruleDiscarded),
        Case(input: "minlength: -1", display: "", consequence: .ruleDiscarded),
        Case(input: "minlength: 1.5", display: "", consequence: .ruleDiscarded),
        Case(input: "minlength: 1+1", display: "", consequence: .ruleDiscarded),
        Case(input: "required: []a]", display: "", consequence: .ruleDiscarded),
        Case(input: "required: [ab]c]", display: "", consequence: .ruleDiscarded),
        Case(input: "required: upper;lower", display: "", consequence: .ruleDiscarded),
        Case(input: "required: upper\u{0B}", display: "", consequence: .ruleDiscarded),
        Case(input: "minlength: 8; dummy: upper; maxlength: 9", display: "", consequence: .ruleDiscarded),
    ]

    // §5: the properties before the problem survive.
    static let partial: [Case] = [
        Case(input: "minlength: 8;;", display: "minlength: 8;", consequence: .remainderIgnored),
        Case(input: "minlength: 8; ; maxlength: 9", display: "minlength: 8;", consequence: .remainderIgnored),
        Case(input: "minlength: 8; [abc]", display: "minlength: 8;", consequence: .remainderIgnored),
    ]

    // §5: only that property is dropped.
    static let propertyDropped: [Case] = [
        Case(input: "minlength: 8; allowed: upper,", display: "minlength: 8;", consequence: .propertyDropped),
        Case(input: "minlength: 8 ; maxlength: 12", display: "maxlength: 12;", consequence: .propertyDropped),
        Case(input: "required:; minlength: 4", display: "minlength: 4;", consequence: .propertyDropped),
        Case(input: "required: ;", display: "", consequence: .propertyDropped),
        Case(input: "minlength: 0", display: "", consequence: .propertyDropped),
        Case(input: "max-consecutive: 0; maxlength: 0", display: "", consequence: .propertyDropped),
        // The reference lists `upper,;` with the discarding mistakes; in fact only the property goes.
        Case(input: "required: upper,; minlength: 8", display: "minlength: 8;", consequence: .propertyDropped),
        Case(input: "minlength: 8; maxlength", display: "minlength: 8;", consequence: .propertyDropped),
    ]

    // §3: custom classes, characters dropped one at a time.
    static let customClasses: [Case] = [
        Case(input: "required: [供A应B]", display: "required: [AB];", consequence: .characterDropped),
        Case(input: "required: [供应]", display: "required: ;", consequence: .characterDropped),
        Case(input: "required: [ ]", display: "required: [ ];", consequence: nil),
        Case(input: "required: [a-z]", display: "required: [az];", consequence: .characterDropped),
        Case(input: "allowed: [-a--------]", display: "allowed: [a-];", consequence: .characterDropped),
        Case(input: "allowed: [--]", display: "allowed: [-];", consequence: .characterDropped),
        Case(input: "allowed: [a]]", display: "allowed: [a]];", consequence: nil),
        Case(input: "allowed: []]", display: "allowed: []];", consequence: nil),
        Case(input: "allowed: [-]]", display: "allowed: [-]];", consequence: nil),
        Case(input: "allowed: [\\]", display: "allowed: [\\];", consequence: nil),
        Case(input: "required: [abc", display: "required: ;", consequence: .classDropped),
        Case(input: "allowed: upper, [abc", display: "allowed: upper;", consequence: .classDropped),
        Case(input: "required: []", display: "required: ;", consequence: .classDropped),
        Case(input: "allowed: [\t ]", display: "allowed: [ ];", consequence: .characterDropped),
        Case(input: "allowed: [aaab]", display: "allowed: [ab];", consequence: nil),
    ]

    // §4: combining properties and canonical output.
    static let canonical: [Case] = [
        Case(input: "", display: "", consequence: nil),
        Case(input: "required: uPPeR", display: "required: upper;", consequence: nil),
        Case(input: "allowed: [abcdefghijklmnopqrstuvwxyz]", display: "allowed: lower;", consequence: nil),
        Case(input: "allowed: upper, [AZ]", display: "allowed: upper;", consequence: nil),
        Case(input: "allowed: [*&^ABC]", display: "allowed: [ABC&*^];", consequence: nil),
        Case(input: "allowed: lower, [@#$]", display: "allowed: lower,[#$@];", consequence: nil),
        Case(input: "allowed: unicode, ascii-printable", display: "allowed: unicode;", consequence: nil),
        Case(input: "allowed: ascii-printable, unicode", display: "allowed: ascii-printable;", consequence: nil),
        Case(input: "allowed: special, upper, lower, digit", display: "allowed: ascii-printable;", consequence: nil),
        Case(input: "minlength: 20; maxlength: 10", display: "minlength: 20; maxlength: 10;", consequence: nil),
        Case(input: "required: digit; required: digit", display: "required: digit; required: digit;", consequence: nil),
        Case(
            input: "maxlength: 30; minlength: 8; minlength: 12; maxlength: 20; max-consecutive: 4; max-consecutive: 2",
            display: "max-consecutive: 2; minlength: 12; maxlength: 20;",
            consequence: nil
        ),
        Case(input: "allowed: upper; allowed: digit", display: "allowed: upper,digit;", consequence: nil),
        Case(input: "minlength: 08", display: "minlength: 8;", consequence: nil),
        Case(
            input:
                "minlength: 8; allowed: lower, [-#&@_]; maxlength: 20; required: upper, lower; required: digit; max-consecutive: 2",
            display:
                "required: upper,lower; required: digit; allowed: lower,[-#&@_]; max-consecutive: 2; minlength: 8; maxlength: 20;",
            consequence: nil
        ),
        Case(
            input: ##"required: [-!@#$%^&*_+=`|(){}[:;\"'<>,.?/ ]]"##,
            display: ##"required: [- !"#$%&'()*+,./:;<=>?@[\^_`{|}]];"##,
            consequence: nil
        ),
        Case(input: "\t\u{0C}\r\n required: upper \n", display: "required: upper;", consequence: nil),
        // Apple's display form moves "-" only to the front of the specials (upstream bug, kept for parity).
        Case(input: "allowed: [-a]", display: "allowed: [a-];", consequence: .warning),
        // Extension (upstream PR #1255).
        Case(
            input: "max-sequential: 3; max-repeating: 2; max-repeating: 4",
            display: "max-repeating: 2; max-sequential: 3;",
            consequence: nil
        ),
    ]

    @Test(arguments: discarded + partial + propertyDropped + customClasses + canonical)
    func canonicalForm(_ testCase: Case) {
        let result = PasswordRules.parse(testCase.input, view: .display)
        #expect(result.rules.description == testCase.display)
        #expect(PasswordRules.canonical(testCase.input) == testCase.display)
        if let consequence = testCase.consequence {
            #expect(result.diagnostics.contains { $0.consequence == consequence }, "\(result.diagnostics)")
        } else {
            #expect(result.diagnostics.isEmpty, "\(result.diagnostics)")
        }
        #expect(result.wasDiscarded == (testCase.consequence == .ruleDiscarded))
    }

    @Test func generatorViewCopiesRequiredIntoAllowed() {
        #expect(PasswordRules("required: upper").description == "required: upper; allowed: upper;")
        #expect(PasswordRules("").description == "allowed: ascii-printable;")
        #expect(
            PasswordRules("required: upper,lower; required: digit; allowed: lower,[-#&@_]").description
                == "required: upper,lower; required: digit; allowed: upper,lower,digit,[#&-@_];"
        )
        #expect(PasswordRules("required: []").description == "required: ; allowed: ascii-printable;")
    }

    @Test func overflowingIntegersAreClampedAndReported() {
        let result = PasswordRules.parse("maxlength: 99999999999999999999;", view: .display)
        #expect(result.rules.maxLength == Int.max)
        #expect(result.diagnostics.map(\.code) == [.integerOverflow])
    }

    @Test func diagnosticsPointAtTheProblem() {
        let result = PasswordRules.parse("minlength: 8; required: [a-z]", view: .display)
        #expect(result.diagnostics.count == 1)
        #expect(result.diagnostics[0].code == .misplacedDash)
        #expect(result.diagnostics[0].offset == 26)
    }

    @Test func neverCrashesOnArbitraryInput() {
        var rng = SystemRandomNumberGenerator()
        let alphabet = Array(
            "required allowed max-consecutive minlength maxlength upper lower digit [ ] - , ; : 0 9 \t\n\u{0B}é中😀"
        )
        for _ in 0..<2000 {
            let length = Int.random(in: 0..<60, using: &rng)
            let text = String((0..<length).map { _ in alphabet.randomElement(using: &rng)! })
            let display = PasswordRules.parse(text, view: .display)
            _ = PasswordRules.parse(text, view: .generator)
            // The display form is itself a valid rule whose own display form is stable, except for
            // the documented dash bug and integers past Int.max.
            if !display.diagnostics.contains(where: { $0.code == .displayDropsDash }) {
                let again = PasswordRules.canonical(display.rules.description)
                #expect(again == PasswordRules.canonical(again), "\(text.debugDescription)")
            }
        }
    }
}
