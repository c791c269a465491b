import Foundation
import KeyhavenTesting
import PasswordRules
import Testing

@Suite(.offCooperativePool)
struct GeneratorTests {
    static let consonants = Set("bcdfghjkmnpqrstvwxz")
    static let vowels = Set("aeiouy")

    // MARK: Apple's format

    @Test func defaultFormatShape() throws {
        var rng = SeededRandomNumberGenerator(seed: 1)
        let generator = PasswordGenerator()
        #expect(generator.style == .appleFormat(dashes: true))
        for _ in 0..<2000 {
            let password = try generator.generate(using: &rng)
            let characters = Array(password)
            #expect(characters.count == 20)
            #expect(characters[6] == "-" && characters[13] == "-")
            #expect(characters.filter(\.isUppercase).count == 1)
            #expect(characters.filter(\.isNumber).count == 1)
            #expect(!characters.contains("O") && !characters.contains("l") && !characters.contains("L"))
            // Letters follow CVC CVC | CVC CVC | CVC CV (the digit sits in the short group).
            let groups = password.split(separator: "-").map { Array($0.lowercased().filter(\.isLetter)) }
            for group in groups {
                let pattern: [Set<Character>] =
                    group.count == 6
                    ? [Self.consonants, Self.vowels, Self.consonants, Self.consonants, Self.vowels, Self.consonants]
                    : [Self.consonants, Self.vowels, Self.consonants, Self.consonants, Self.vowels]
                #expect(group.count == pattern.count, "\(password)")
                for (letter, allowed) in zip(group, pattern) {
                    #expect(allowed.contains(letter), "\(password)")
                }
            }
            #expect(PasswordRules("").validate(password).isValid)
        }
    }

    /// Pearson's chi-squared statistic of `counts` against `expected`.
    static func chiSquared(_ counts: [Int], expected: [Double]) -> Double {
        zip(counts, expected).reduce(0) { sum, pair in
            let difference = Double(pair.0) - pair.1
            return sum + difference * difference / pair.1
        }
    }

    @Test func defaultFormatStatistics() throws {
        var rng = SeededRandomNumberGenerator(seed: 7)
        let generator = PasswordGenerator()
        let samples = 50_000
        var digitPositions = [Int: Int]()
        var upperSlots = [Int](repeating: 0, count: 17)  // index among the 17 letters, in generation order
        var upperOnVowel = 0
        var digits = [Int](repeating: 0, count: 10)
        for _ in 0..<samples {
            let password = Array(try generator.generate(using: &rng))
            let digitIndex = password.firstIndex(where: \.isNumber)!
            digitPositions[digitIndex, default: 0] += 1
            digits[Int(String(password[digitIndex]))!] += 1
            let upper = password.first(where: \.isUppercase)!
            if Self.vowels.contains(Character(upper.lowercased())) { upperOnVowel += 1 }
            // Undo the group arrangement to recover the letter order of generation.
            let groups = String(password).split(separator: "-").map(String.init)
            let short = groups.first { $0.count == 6 && $0.contains(where: \.isNumber) }!
            let longs = groups.filter { $0 != short }
            let letters = Array((longs[0] + longs[1] + short.filter(\.isLetter)))
            upperSlots[letters.firstIndex(where: \.isUppercase)!] += 1
        }
        // The digit sits next to a dash, in one of five places, uniformly; never first.
        #expect(Set(digitPositions.keys) == [5, 7, 12, 14, 19])
        let placement = [5, 7, 12, 14, 19].map { digitPositions[$0]! }
        // Critical values at p = 0.001: 18.47 for 4 degrees of freedom, 27.88 for 9, 39.25 for 16.
        #expect(Self.chiSquared(placement, expected: Array(repeating: Double(samples) / 5, count: 5)) < 18.47)
        #expect(Self.chiSquared(digits, expected: Array(repeating: Double(samples) / 10, count: 10)) < 27.88)
        // Upper-case position: uniform over the 17 letters, except that an "o" (1 vowel in 6) is
        // never chosen, so a vowel slot is picked 5/6 as often as a consonant slot.
        let weights = (0..<17).map { $0 % 3 == 1 ? 5.0 / 6.0 : 1.0 }
        let total = weights.reduce(0, +)
        let expected = weights.map { Double(samples) * $0 / total }
        #expect(Self.chiSquared(upperSlots, expected: expected) < 39.25)
        let vowelShare = Double(upperOnVowel) / Double(samples)
        #expect(abs(vowelShare - (6 * 5.0 / 6.0) / total) < 0.01)
    }

    @Test func dashesAreDroppedWhenNotAllowed() throws {
        var rng = SeededRandomNumberGenerator(seed: 3)
        let generator = try PasswordGenerator(rules: PasswordRules("allowed: upper, lower, digit"))
        #expect(generator.style == .appleFormat(dashes: false))
        let password = try generator.generate(using: &rng)
        #expect(password.count == 18 && !password.contains("-"))
    }

    @Test(arguments: [
        "minlength: 21",  // longer than the format
        "maxlength: 19",  // shorter than the format
        "allowed: lower, digit",  // no upper-case letters
        "required: digit; required: digit",  // the format has one digit
        "required: upper; required: upper; allowed: lower, digit",
        "required: [!@#]; allowed: ascii-printable",  // nothing the format can produce
        "allowed: upper, lower, digit; minlength: 19",  // 18 characters without dashes
    ])
    func appleFormatIsNotUsedWhenRulesRuleItOut(_ text: String) throws {
        let rules = PasswordRules(text)
        let generator = try PasswordGenerator(rules: rules)
        guard case .random = generator.style else {
            Issue.record("expected the random style for \(text)")
            return
        }
        var rng = SeededRandomNumberGenerator(seed: 11)
        for _ in 0..<200 {
            let password = try generator.generate(using: &rng)
            #expect(rules.validate(password).isValid, "\(text): \(rules.validate(password))")
        }
    }

    // MARK: Random style

    @Test func prefersTheLongestAllowedLengthUpToTheDefault() throws {
        func length(_ text: String) throws -> Int {
            var rng = SeededRandomNumberGenerator(seed: 5)
            return try PasswordGenerator(rules: PasswordRules(text)).generate(using: &rng).count
        }
        #expect(try length("allowed: lower, [!]; maxlength: 12") == 12)
        #expect(try length("allowed: lower, [!]; maxlength: 40") == 20)
        #expect(try length("allowed: lower, [!]; minlength: 30") == 30)
        // Small alphabets get longer passwords to keep about 71 bits: 22 digits.
        #expect(try length("allowed: digit") == 22)
        #expect(try length("allowed: digit; maxlength: 6") == 6)
    }

    @Test func uniformOverTheAllowedSet() throws {
        // Digits are not allowed in full, so this is the random style; each of the 12 characters
        // should appear equally often at every position.
        let rules = PasswordRules("allowed: [abcdefgh2345]; minlength: 16; maxlength: 16")
        let generator = try PasswordGenerator(rules: rules)
        #expect(generator.style == .random(length: 16, alphabet: "2345abcdefgh"))
        var rng = SeededRandomNumberGenerator(seed: 99)
        let alphabet = Array("2345abcdefgh")
        var counts = [[Int]](repeating: [Int](repeating: 0, count: 12), count: 16)
        let samples = 12_000
        for _ in 0..<samples {
            for (position, character) in try generator.generate(using: &rng).enumerated() {
                counts[position][alphabet.firstIndex(of: character)!] += 1
            }
        }
        for position in 0..<16 {
            // 11 degrees of freedom, p = 0.0001 critical value.
            #expect(
                Self.chiSquared(counts[position], expected: Array(repeating: Double(samples) / 12, count: 12)) < 35.56
            )
        }
    }

    @Test func requiredLinesEachGetTheirOwnCharacter() throws {
        let rules = PasswordRules(
            "required: digit; required: digit; required: digit; allowed: lower; minlength: 6; maxlength: 6"
        )
        var rng = SeededRandomNumberGenerator(seed: 8)
        let generator = try PasswordGenerator(rules: rules)
        for _ in 0..<500 {
            let password = try generator.generate(using: &rng)
            #expect(password.filter(\.isNumber).count >= 3)
            #expect(rules.validate(password).isValid)
        }
    }

    @Test func rareRequirementsAreMetConstructively() throws {
        // Six single-character requirements in six characters out of 95: rejection sampling alone
        // would almost never succeed.
        let rules = PasswordRules(
            "required: [!]; required: [#]; required: [%]; required: [&]; required: [*]; required: [+]; allowed: ascii-printable; maxlength: 6"
        )
        var rng = SeededRandomNumberGenerator(seed: 2)
        let generator = try PasswordGenerator(rules: rules)
        for _ in 0..<100 {
            let password = try generator.generate(using: &rng)
            #expect(Set(password) == Set("!#%&*+"))
        }
    }

    @Test func limitsAreRespectedWithSmallAlphabets() throws {
        let rules = PasswordRules("allowed: [ab]; max-consecutive: 1; minlength: 10; maxlength: 10")
        // "max-consecutive: 1" forbids "aa" and also "ab"/"ba" (sequences): impossible.
        #expect(throws: PasswordGenerationError(.limitsUnsatisfiable, "")) {
            var rng = SeededRandomNumberGenerator(seed: 0)
            return try PasswordGenerator(rules: rules).generate(using: &rng)
        }
        let repeating = PasswordRules("allowed: [ac]; max-repeating: 1; minlength: 10; maxlength: 10")
        var rng = SeededRandomNumberGenerator(seed: 4)
        let password = try PasswordGenerator(rules: repeating).generate(using: &rng)
        #expect(password == "acacacacac" || password == "cacacacaca")
    }

    @Test func spaceIsOnlyUsedWhenNeeded() throws {
        var rng = SeededRandomNumberGenerator(seed: 6)
        let generator = try PasswordGenerator(rules: PasswordRules("allowed: special; minlength: 30"))
        for _ in 0..<200 {
            #expect(!(try generator.generate(using: &rng)).contains(" "))
        }
        let needsSpace = PasswordRules("required: [ ]; allowed: lower; maxlength: 8")
        #expect(try PasswordGenerator(rules: needsSpace).generate(using: &rng).contains(" "))
    }

    // MARK: Impossible rules

    @Test(arguments: [
        ("minlength: 20; maxlength: 10", PasswordGenerationError.Code.minLengthExceedsMaxLength),
        ("required: digit; required: upper; required: lower; maxlength: 2", .tooManyRequiredLines),
        ("allowed: [a]; max-consecutive: 3; minlength: 5", .limitsUnsatisfiable),
    ])
    func impossibleRulesFailClearly(_ text: String, _ code: PasswordGenerationError.Code) {
        #expect {
            _ = try PasswordGenerator(rules: PasswordRules(text))
        } throws: { error in
            guard let error = error as? PasswordGenerationError else { return false }
            return error.code == code && !error.message.isEmpty
        }
    }

    @Test func requiredClassOutsideTheAllowedSetIsAnError() {
        // Built by hand: the parser's generator view always allows required classes.
        let rules = PasswordRules(required: [[.custom(" ")]], allowed: [.lower])
        // A required space is allowed because required classes are implicitly allowed...
        #expect(throws: Never.self) { try PasswordGenerator(rules: rules) }
        // ...but a required line whose only character is not printable ASCII cannot be typed.
        let unprintable = PasswordRules(required: [[.custom("\u{7F}")]], allowed: [.lower])
        #expect(throws: PasswordGenerationError(.requiredNotAllowed, "")) {
            try PasswordGenerator(rules: unprintable)
        }
    }

    @Test func seededGeneratorsAreReproducible() throws {
        var a = SeededRandomNumberGenerator(seed: 42)
        var b = SeededRandomNumberGenerator(seed: 42)
        let generator = try PasswordGenerator(rules: PasswordRules("allowed: lower; required: [!]"))
        #expect(try generator.generate(using: &a) == generator.generate(using: &b))
    }
}
