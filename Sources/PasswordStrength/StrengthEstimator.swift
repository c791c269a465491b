import Foundation

/// Estimates password strength exactly as zxcvbn does (Dropbox's algorithm, with the answers of the
/// python `zxcvbn` 4.5.0 package: same matchers, data, search, scores, feedback and crack times).
///
/// ```swift
/// let estimate = StrengthEstimator.shared.estimate("Tr0ub4dour&3", userInputs: ["alice", "example"])
/// estimate.score          // 0…4; Security Recommendations call ≤ 2 "easily guessed"
/// estimate.guessesLog10   // 7.28…
/// estimate.feedback.warning
/// ```
///
/// Long passwords (python zxcvbn refuses more than 72 characters): a password that repeats a base of
/// at most ``exactLength`` characters is scored as zxcvbn scores repeats — its base exactly, times
/// the repeat count. Any other password has its first ``exactLength`` characters scored exactly and
/// every further character adds their average log10-guesses per character, at most brute force's 1
/// (as KeePassXC extends zxcvbn past its threshold). A 100,000-character password takes
/// milliseconds. The empty password scores 0 with one guess (python raises on it).
public struct StrengthEstimator: Sendable {
    /// Characters scored exactly; python zxcvbn refuses longer passwords.
    public static let exactLength = 72

    /// The year dates and recent years are measured from. python zxcvbn 4.5.0 fixes it at 2017 (the
    /// JavaScript original uses the current year); we match python by default.
    public var referenceYear: Int

    /// The shared estimator (data is loaded once, on first use).
    public static let shared = StrengthEstimator()

    public init(referenceYear: Int = 2017) {
        self.referenceYear = referenceYear
    }

    /// Estimates `password`. `userInputs` (user names, e-mail parts, the site's name) count as one more
    /// ranked dictionary, in order of importance; they are lower-cased.
    public func estimate(_ password: String, userInputs: [String] = []) -> StrengthEstimate {
        let scalars = Array(password.unicodeScalars)
        let matcher = Matcher(data: .shared, userInputs: Self.userDictionary(userInputs), referenceYear: referenceYear)
        let scorer = Scorer(matcher: matcher)
        guard scalars.count > Self.exactLength else {
            let analysis = scorer.mostGuessableMatchSequence(scalars, matcher.omnimatch(scalars))
            return StrengthEstimate(analysis, password: scalars, length: scalars.count)
        }

        // Too long to score exactly. A repetition of a short base (`x` × 100,000, `abc` × 5,000) is
        // scored like zxcvbn's repeat pattern: its base exactly, times the repeat count.
        let period = Matcher.shortestPeriod(scalars[...])
        if period <= Self.exactLength && period < scalars.count {
            let base = Array(scalars[..<period])
            let analysis = scorer.mostGuessableMatchSequence(base, matcher.omnimatch(base))
            let guesses = analysis.guesses * Double(scalars.count / period)
            return StrengthEstimate(
                Scorer.Analysis(guesses: guesses, sequence: analysis.sequence),
                password: base,
                length: scalars.count
            )
        }
        // Otherwise score the first 72 exactly and extend by their average per character, at most
        // brute force's one decimal digit per character (as KeePassXC does past its threshold).
        let scored = Array(scalars[..<Self.exactLength])
        let analysis = scorer.mostGuessableMatchSequence(scored, matcher.omnimatch(scored))
        let headLog10 = PythonText.log10(analysis.guesses)
        let perCharacter = min(headLog10 / Double(scored.count), 1)
        let log10 = headLog10 + perCharacter * Double(scalars.count - scored.count)
        var estimate = StrengthEstimate(analysis, password: scored, length: scalars.count)
        estimate.guessesLog10 = log10
        // Beyond 10^308 guesses stay at the largest Double; guessesLog10 keeps the magnitude.
        estimate.guesses = min(pow(10, log10), .greatestFiniteMagnitude)
        estimate.score = Self.score(guesses: estimate.guesses)
        estimate.crackTimes = CrackTimes(guesses: estimate.guesses)
        estimate.feedback = StrengthFeedback.make(score: estimate.score, sequence: analysis.sequence, password: scored)
        return estimate
    }

    /// `guesses_to_score`: thresholds 10^3, 10^6, 10^8, 10^10 (plus 5).
    public static func score(guesses: Double) -> Int {
        let delta = 5.0
        if guesses < 1e3 + delta { return 0 }
        if guesses < 1e6 + delta { return 1 }
        if guesses < 1e8 + delta { return 2 }
        if guesses < 1e10 + delta { return 3 }
        return 4
    }

    static func userDictionary(_ inputs: [String]) -> RankedDictionary? {
        guard !inputs.isEmpty else { return nil }
        let words = inputs.map { PythonText.lower(Array($0.unicodeScalars)) }
        return RankedDictionary(lists: [(RankedDictionary.userInputsIndex, words)])
    }
}

/// The strength of one password.
public struct StrengthEstimate: Sendable {
    /// 0 (too guessable) … 4 (very unguessable).
    public var score: Int
    /// Estimated guesses to crack.
    public var guesses: Double
    public var guessesLog10: Double
    /// The patterns the estimate is built from, covering the scored characters in order.
    public var sequence: [StrengthMatch]
    public var feedback: StrengthFeedback
    public var crackTimes: CrackTimes
    /// Characters scored exactly (at most ``StrengthEstimator/exactLength``).
    public var scoredLength: Int
    /// The password's length in code points.
    public var length: Int

    init(_ analysis: Scorer.Analysis, password scored: [Unicode.Scalar], length: Int) {
        score = StrengthEstimator.score(guesses: analysis.guesses)
        guesses = analysis.guesses
        guessesLog10 = PythonText.log10(analysis.guesses)
        sequence = analysis.sequence.map { StrengthMatch($0, password: scored) }
        feedback = StrengthFeedback.make(score: score, sequence: analysis.sequence, password: scored)
        crackTimes = CrackTimes(guesses: analysis.guesses)
        scoredLength = scored.count
        self.length = length
    }
}

/// One pattern of an estimate.
public struct StrengthMatch: Sendable {
    public enum Pattern: String, Sendable {
        case dictionary, spatial, `repeat`, sequence, regex, date, bruteforce
    }

    public var pattern: Pattern
    /// First and last character, inclusive, in code points.
    public var i: Int
    public var j: Int
    public var token: String
    public var guesses: Double
    public var guessesLog10: Double
    /// Pattern details with zxcvbn's names (`dictionary_name`, `rank`, `l33t`, `sub`, `graph`,
    /// `turns`, `base_token`, `sequence_name`, `year`, …), as strings, numbers and booleans.
    public var details: [String: StrengthDetail]

    init(_ match: Match, password: [Unicode.Scalar]) {
        pattern = Pattern(rawValue: "\(match.kind)")!
        i = match.i
        j = match.j
        token = String(String.UnicodeScalarView(password[match.i...match.j]))
        guesses = match.guesses
        guessesLog10 = PythonText.log10(match.guesses)
        var details: [String: StrengthDetail] = [:]
        switch match.kind {
        case .dictionary:
            details["dictionary_name"] = .string(RankedDictionary.names[Int(match.dictionary)])
            details["rank"] = .number(Double(match.rank))
            details["reversed"] = .bool(match.reversed)
            details["l33t"] = .bool(match.isL33t)
            if match.isL33t {
                details["sub"] = .string(
                    match.substitutions.map { "\(Character($0.0)) -> \(Character($0.1))" }.joined(separator: ", ")
                )
            }
        case .spatial:
            details["graph"] = .string(AdjacencyGraph.order[Int(match.graph)])
            details["turns"] = .number(Double(match.turns))
            details["shifted_count"] = .number(Double(match.shiftedCount))
        case .repeat:
            let repetition = match.repetition!
            details["base_token"] = .string(String(String.UnicodeScalarView(repetition.baseToken)))
            details["base_guesses"] = .number(repetition.baseGuesses)
            details["repeat_count"] = .number(repetition.repeatCount)
        case .sequence:
            details["sequence_name"] = .string(Match.sequenceNames[Int(match.sequenceName)])
            details["sequence_space"] = .number(Double(match.sequenceSpace))
            details["ascending"] = .bool(match.ascending)
        case .regex:
            details["regex_name"] = .string("recent_year")
        case .date:
            details["separator"] = .string(match.separator.map { String(Character($0)) } ?? "")
            details["year"] = .number(Double(match.year))
            details["month"] = .number(Double(match.month))
            details["day"] = .number(Double(match.day))
        case .bruteforce:
            break
        }
        self.details = details
    }
}

/// A value in ``StrengthMatch/details``.
public enum StrengthDetail: Hashable, Sendable, Encodable {
    case string(String)
    case number(Double)
    case bool(Bool)

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .number(let value):
            if value == value.rounded() && abs(value) < 1e15 {
                try container.encode(Int(value))
            } else {
                try container.encode(value)
            }
        case .bool(let value): try container.encode(value)
        }
    }
}
