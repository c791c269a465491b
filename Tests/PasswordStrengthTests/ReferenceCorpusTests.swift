import Foundation
import KeyhavenTesting
import PasswordStrength
import Testing

/// Our estimator against python zxcvbn 4.5.0's answers on a corpus of 12,600 diverse passwords
/// (built by scripts/zxcvbn/build_corpus.py; kinds: common passwords, mutations, l33t, dates, keyboard
/// walks, names, repeats, sequences, random strings, passphrases, Apple-format passwords, non-ASCII,
/// user inputs).
@Suite(.offCooperativePool)
struct ReferenceCorpusTests {
    struct Corpus: Decodable {
        var reference_year: Int
        var entries: [Entry]
    }

    struct Entry: Decodable {
        struct MatchRecord: Decodable {
            var pattern: String
            var i: Int
            var j: Int
            var token: String
        }
        var kind: String
        var password: String
        var user_inputs: [String]?
        var score: Int
        var guesses_log10: Double
        var sequence: [MatchRecord]
        var feedback: StrengthFeedback
    }

    static let corpus: Corpus = {
        do {
            return try Fixtures.decode(Corpus.self, "zxcvbn-reference.json")
        } catch {
            preconditionFailure("cannot load the reference corpus: \(error)")
        }
    }()

    @Test func scoresAndGuessesMatchPythonZxcvbn() throws {
        let corpus = Self.corpus
        #expect(corpus.entries.count >= 10_000)
        let estimator = StrengthEstimator(referenceYear: corpus.reference_year)
        var sameScore = 0
        var closeGuesses = 0
        var sameSequence = 0
        var sameFeedback = 0
        var differences: [String] = []
        for entry in corpus.entries {
            let estimate = estimator.estimate(entry.password, userInputs: entry.user_inputs ?? [])
            let scoreMatches = estimate.score == entry.score
            let guessesMatch = abs(estimate.guessesLog10 - entry.guesses_log10) <= 0.01
            if scoreMatches { sameScore += 1 }
            if guessesMatch { closeGuesses += 1 }
            let sequence = estimate.sequence.map { "\($0.pattern.rawValue)[\($0.i)-\($0.j)]" }
            let expected = entry.sequence.map { "\($0.pattern)[\($0.i)-\($0.j)]" }
            if sequence == expected { sameSequence += 1 }
            if estimate.feedback == entry.feedback { sameFeedback += 1 }
            if !scoreMatches || !guessesMatch {
                differences.append(
                    "\(entry.kind) \(entry.password.debugDescription): ours \(estimate.score)/\(estimate.guessesLog10) "
                        + "python \(entry.score)/\(entry.guesses_log10)"
                )
            }
        }
        let total = Double(corpus.entries.count)
        print(
            "zxcvbn parity on \(corpus.entries.count) passwords: scores \(Double(sameScore) / total * 100)%, "
                + "guesses_log10 within 0.01 \(Double(closeGuesses) / total * 100)%, "
                + "sequences \(Double(sameSequence) / total * 100)%, feedback \(Double(sameFeedback) / total * 100)%"
        )
        for difference in differences.prefix(20) {
            print("  difference: \(difference)")
        }
        #expect(Double(sameScore) / total >= 0.995)
        #expect(Double(closeGuesses) / total >= 0.99)
        // Known: ties between equally good sequences can resolve differently (Decimal vs Double).
        #expect(Double(sameSequence) / total >= 0.995)
        #expect(Double(sameFeedback) / total >= 0.995)
    }

    /// The smoke file carries everything python reports, crack times included.
    @Test func crackTimesMatchPythonZxcvbn() throws {
        struct Smoke: Decodable {
            var entries: [SmokeEntry]
        }
        struct SmokeEntry: Decodable {
            var password: String
            var user_inputs: [String]?
            var crack_times_display: [String: String]
        }
        let smoke = try Fixtures.decode(Smoke.self, "zxcvbn-reference-smoke.json")
        var same = 0
        for entry in smoke.entries {
            let times = StrengthEstimator.shared.estimate(entry.password, userInputs: entry.user_inputs ?? [])
                .crackTimes
            let ours = [
                "online_throttling_100_per_hour": times.onlineThrottling100PerHour.display,
                "online_no_throttling_10_per_second": times.onlineNoThrottling10PerSecond.display,
                "offline_slow_hashing_1e4_per_second": times.offlineSlowHashing1e4PerSecond.display,
                "offline_fast_hashing_1e10_per_second": times.offlineFastHashing1e10PerSecond.display,
            ]
            if ours == entry.crack_times_display { same += 1 }
        }
        #expect(Double(same) / Double(smoke.entries.count) >= 0.99, "\(same) of \(smoke.entries.count)")
    }
}
