/// zxcvbn's feedback for weak passwords: one warning and some suggestions, worded as in python
/// zxcvbn 4.5.0.
public struct StrengthFeedback: Hashable, Sendable, Codable {
    /// Empty when there is nothing specific to warn about.
    public var warning: String
    public var suggestions: [String]

    public init(warning: String, suggestions: [String]) {
        self.warning = warning
        self.suggestions = suggestions
    }
}

extension StrengthFeedback {
    static func make(score: Int, sequence: [Match], password: [Unicode.Scalar]) -> StrengthFeedback {
        if sequence.isEmpty {
            return StrengthFeedback(
                warning: "",
                suggestions: [
                    "Use a few words, avoid common phrases.", "No need for symbols, digits, or uppercase letters.",
                ]
            )
        }
        if score > 2 {
            return StrengthFeedback(warning: "", suggestions: [])
        }
        var longest = sequence[0]
        for match in sequence.dropFirst() where match.length > longest.length {
            longest = match
        }
        let extra = "Add another word or two. Uncommon words are better."
        guard var feedback = matchFeedback(longest, isSoleMatch: sequence.count == 1, password: password) else {
            return StrengthFeedback(warning: "", suggestions: [extra])
        }
        feedback.suggestions.insert(extra, at: 0)
        return feedback
    }

    private static func matchFeedback(
        _ match: Match,
        isSoleMatch: Bool,
        password: [Unicode.Scalar]
    ) -> StrengthFeedback? {
        switch match.kind {
        case .dictionary:
            return dictionaryFeedback(match, isSoleMatch: isSoleMatch, password: password)
        case .spatial:
            return StrengthFeedback(
                warning: match.turns == 1
                    ? "Straight rows of keys are easy to guess." : "Short keyboard patterns are easy to guess.",
                suggestions: ["Use a longer keyboard pattern with more turns."]
            )
        case .repeat:
            return StrengthFeedback(
                warning: match.repetition!.baseToken.count == 1
                    ? #"Repeats like "aaa" are easy to guess."#
                    : #"Repeats like "abcabcabc" are only slightly harder to guess than "abc"."#,
                suggestions: ["Avoid repeated words and characters."]
            )
        case .sequence:
            return StrengthFeedback(
                warning: #"Sequences like "abc" or "6543" are easy to guess."#,
                suggestions: ["Avoid sequences."]
            )
        case .regex:
            return StrengthFeedback(
                warning: "Recent years are easy to guess.",
                suggestions: ["Avoid recent years.", "Avoid years that are associated with you."]
            )
        case .date:
            return StrengthFeedback(
                warning: "Dates are often easy to guess.",
                suggestions: ["Avoid dates and years that are associated with you."]
            )
        case .bruteforce:
            return nil
        }
    }

    private static func dictionaryFeedback(
        _ match: Match,
        isSoleMatch: Bool,
        password: [Unicode.Scalar]
    ) -> StrengthFeedback {
        var warning = ""
        switch RankedDictionary.names[Int(match.dictionary)] {
        case "passwords":
            if isSoleMatch && !match.isL33t && !match.reversed {
                if match.rank <= 10 {
                    warning = "This is a top-10 common password."
                } else if match.rank <= 100 {
                    warning = "This is a top-100 common password."
                } else {
                    warning = "This is a very common password."
                }
            } else if PythonText.log10(match.guesses) <= 4 {
                warning = "This is similar to a commonly used password."
            }
        case "english_wikipedia":
            if isSoleMatch {
                warning = "A word by itself is easy to guess."
            }
        case "surnames", "male_names", "female_names":
            warning =
                isSoleMatch
                ? "Names and surnames by themselves are easy to guess." : "Common names and surnames are easy to guess."
        default:
            break
        }
        var suggestions: [String] = []
        let word = password[match.i...match.j]
        if Scorer.isStartUpper(word) {
            suggestions.append("Capitalization doesn't help very much.")
        } else if Scorer.isAllUpper(word) && !PythonText.isLowercase(word) {
            suggestions.append("All-uppercase is almost as easy to guess as all-lowercase.")
        }
        if match.reversed && match.length >= 4 {
            suggestions.append("Reversed words aren't much harder to guess.")
        }
        if match.isL33t {
            suggestions.append("Predictable substitutions like '@' instead of 'a' don't help very much.")
        }
        return StrengthFeedback(warning: warning, suggestions: suggestions)
    }
}
