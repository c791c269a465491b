import ArgumentParser
import Foundation
import PasswordStrength

extension Keyhaven {
    struct Strength: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Estimate how easily passwords are guessed (zxcvbn).",
            discussion: """
                Scores are zxcvbn's, identical to python zxcvbn 4.5.0: 0 too guessable, 1 very \
                guessable, 2 somewhat guessable, 3 safely unguessable, 4 very unguessable. Apple and \
                Bitwarden call a password weak at 2 or below.

                With "-", reads passwords from standard input, one per line, and prints \
                "score<TAB>log10(guesses)" (4 decimals) per line, in order. --json prints one JSON \
                object per password instead, with the match sequence and feedback.

                The first 72 characters are scored exactly; longer passwords add the average per \
                character of that part (at most one decimal digit per character) for the rest.
                """
        )

        @Argument(
            help: ArgumentHelp("The password, or - to read passwords from standard input.", valueName: "password")
        )
        var password: String

        @Option(
            name: .customLong("user-input"),
            help: ArgumentHelp(
                "A word the password should not be built from (user name, site name); repeatable.",
                valueName: "word"
            )
        )
        var userInputs: [String] = []

        @Flag(name: .long, help: "Print one JSON object per password.")
        var json = false

        func run() throws {
            let estimator = StrengthEstimator.shared
            if password == "-" {
                var output = ""
                output.reserveCapacity(1 << 16)
                for line in Output.standardInputLines() {
                    let estimate = estimator.estimate(line, userInputs: userInputs)
                    if json {
                        output += try Output.jsonLine(StrengthReport(estimate))
                    } else {
                        output += "\(estimate.score)\t\(String(format: "%.4f", estimate.guessesLog10))"
                    }
                    output += "\n"
                    if output.utf8.count > 60_000 {
                        CommandIO.current.writeOutput(Data(output.utf8))
                        output.removeAll(keepingCapacity: true)
                    }
                }
                CommandIO.current.writeOutput(Data(output.utf8))
                return
            }
            let estimate = estimator.estimate(password, userInputs: userInputs)
            if json {
                print(try Output.jsonLine(StrengthReport(estimate)))
                return
            }
            let labels = [
                "too guessable", "very guessable", "somewhat guessable", "safely unguessable", "very unguessable",
            ]
            print("score: \(estimate.score)/4 (\(labels[estimate.score]))")
            print(
                "guesses: \(String(format: "%.3g", estimate.guesses)) (10^\(String(format: "%.2f", estimate.guessesLog10)))"
            )
            print(
                "crack time: \(estimate.crackTimes.offlineSlowHashing1e4PerSecond.display) offline with a slow hash, "
                    + "\(estimate.crackTimes.onlineThrottling100PerHour.display) online (throttled)"
            )
            if !estimate.feedback.warning.isEmpty {
                print("warning: \(estimate.feedback.warning)")
            }
            if !estimate.feedback.suggestions.isEmpty {
                print("suggestions:")
                for suggestion in estimate.feedback.suggestions {
                    print("  - \(suggestion)")
                }
            }
            if estimate.length > estimate.scoredLength {
                print("note: the first \(estimate.scoredLength) of \(estimate.length) characters were scored exactly")
            }
        }
    }
}

/// The JSON form of an estimate, with zxcvbn's field names.
struct StrengthReport: Encodable {
    struct MatchReport: Encodable {
        var pattern: String
        var i: Int
        var j: Int
        var token: String
        var guesses: Double
        var guesses_log10: Double
        var details: [String: StrengthDetail]

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: AnyKey.self)
            try container.encode(pattern, forKey: AnyKey("pattern"))
            try container.encode(i, forKey: AnyKey("i"))
            try container.encode(j, forKey: AnyKey("j"))
            try container.encode(token, forKey: AnyKey("token"))
            try container.encode(guesses, forKey: AnyKey("guesses"))
            try container.encode(guesses_log10, forKey: AnyKey("guesses_log10"))
            for (key, value) in details {
                try container.encode(value, forKey: AnyKey(key))
            }
        }
    }

    var score: Int
    var guesses: Double
    var guesses_log10: Double
    var sequence: [MatchReport]
    var feedback: StrengthFeedback
    var crack_times_seconds: [String: Double]
    var crack_times_display: [String: String]
    var length: Int
    var scored_length: Int

    init(_ estimate: StrengthEstimate) {
        score = estimate.score
        guesses = estimate.guesses
        guesses_log10 = estimate.guessesLog10
        sequence = estimate.sequence.map {
            MatchReport(
                pattern: $0.pattern.rawValue,
                i: $0.i,
                j: $0.j,
                token: $0.token,
                guesses: $0.guesses,
                guesses_log10: $0.guessesLog10,
                details: $0.details
            )
        }
        feedback = estimate.feedback
        let times = estimate.crackTimes
        let scenarios = [
            ("online_throttling_100_per_hour", times.onlineThrottling100PerHour),
            ("online_no_throttling_10_per_second", times.onlineNoThrottling10PerSecond),
            ("offline_slow_hashing_1e4_per_second", times.offlineSlowHashing1e4PerSecond),
            ("offline_fast_hashing_1e10_per_second", times.offlineFastHashing1e10PerSecond),
        ]
        crack_times_seconds = Dictionary(uniqueKeysWithValues: scenarios.map { ($0.0, $0.1.seconds) })
        crack_times_display = Dictionary(uniqueKeysWithValues: scenarios.map { ($0.0, $0.1.display) })
        length = estimate.length
        scored_length = estimate.scoredLength
    }
}

struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ string: String) { stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
