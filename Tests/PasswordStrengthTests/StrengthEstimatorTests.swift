import PasswordStrength
import Testing

struct StrengthEstimatorTests {
    /// The test-vector table of the anchors reference (§0), measured with python zxcvbn 4.5.0.
    @Test(arguments: [
        ("password", 0, 0.48),
        ("P@ssw0rd", 0, 1.23),
        ("qwertyuiop", 0, 1.36),
        ("1qaz2wsx", 0, 1.46),
        ("abc123", 0, 1.15),
        ("Tr0ub4dour&3", 2, 7.28),
        ("correcthorsebatterystaple", 4, 14.44),
        ("xK9#mP2$vL7q", 4, 12.0),
    ])
    func anchorVectors(_ password: String, _ score: Int, _ log10: Double) {
        let estimate = StrengthEstimator.shared.estimate(password)
        #expect(estimate.score == score)
        #expect((estimate.guessesLog10 * 100).rounded() / 100 == log10)
    }

    @Test func matchSequenceAndFeedback() {
        let estimate = StrengthEstimator.shared.estimate("P@ssw0rd")
        #expect(estimate.sequence.count == 1)
        let match = estimate.sequence[0]
        #expect(match.pattern == .dictionary)
        #expect(match.details["l33t"] == .bool(true))
        #expect(match.details["dictionary_name"] == .string("passwords"))
        #expect(match.details["sub"] == .string("@ -> a, 0 -> o"))
        #expect(estimate.feedback.warning == "This is similar to a commonly used password.")
        #expect(
            estimate.feedback.suggestions == [
                "Add another word or two. Uncommon words are better.", "Capitalization doesn't help very much.",
                "Predictable substitutions like '@' instead of 'a' don't help very much.",
            ]
        )
    }

    @Test func userInputsActAsADictionary() {
        let without = StrengthEstimator.shared.estimate("kessler1987")
        let with = StrengthEstimator.shared.estimate("kessler1987", userInputs: ["Kessler"])
        #expect(with.guessesLog10 < without.guessesLog10)
        #expect(with.sequence.first?.details["dictionary_name"] == .string("user_inputs"))
    }

    @Test func emptyPasswordScoresZero() {
        let estimate = StrengthEstimator.shared.estimate("")
        #expect(estimate.score == 0)
        #expect(estimate.guesses == 1)
        #expect(estimate.sequence.isEmpty)
        #expect(estimate.feedback.suggestions.count == 2)
    }

    /// Long input is capped (see `StrengthEstimator`); these must finish quickly — the benchmark
    /// measures how quickly.
    @Test func longInputIsCappedAndSensible() {
        let repeated = StrengthEstimator.shared.estimate(String(repeating: "x", count: 100_000))
        #expect(repeated.length == 100_000)
        #expect(repeated.score <= 2)  // a repetition stays weak however long
        var rng = SystemRandomNumberGenerator()
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789")
        let random = String((0..<100_000).map { _ in alphabet.randomElement(using: &rng)! })
        let estimate = StrengthEstimator.shared.estimate(random)
        #expect(estimate.scoredLength == StrengthEstimator.exactLength)
        #expect(estimate.score == 4)
        #expect(estimate.guessesLog10 > 10_000)
        #expect(estimate.guesses.isFinite)
    }

    @Test func exactUpToTheCap() {
        // 72 characters are scored exactly (python's maximum), 73 start the extrapolation.
        let base = String(repeating: "correcthorse", count: 6)
        #expect(StrengthEstimator.shared.estimate(base).scoredLength == 72)
        let longer = StrengthEstimator.shared.estimate(base + "!")
        #expect(longer.scoredLength == 72 && longer.length == 73)
    }

    @Test func referenceYearIsInjectable() {
        // "1990" is a recent-year match: 27 years from 2017, 36 from 2026.
        let python = StrengthEstimator(referenceYear: 2017).estimate("1990")
        let now = StrengthEstimator(referenceYear: 2026).estimate("1990")
        #expect(python.sequence.first?.pattern == .regex)
        #expect(python.guesses == 28)  // 1! · 27 + 10000^0
        #expect(now.guesses == 37)
    }
}
