/// One candidate pattern over `password[i...j]` (inclusive, in code points), as zxcvbn's matchers
/// produce them. A plain struct with the fields of every pattern so that matching allocates only for
/// the rare l33t and repeat matches.
struct Match: Sendable {
    enum Kind: UInt8, Sendable {
        case dictionary, spatial, `repeat`, sequence, regex, date, bruteforce
    }

    var i: Int
    var j: Int
    var kind: Kind
    /// Cached `estimate_guesses` (0 until computed).
    var guesses: Double = 0

    // dictionary
    var dictionary: UInt8 = 0
    var rank: Int32 = 0
    var reversed = false
    /// l33t substitutions in use: (l33t character, letter), in python's dict order. Empty: not l33t.
    var substitutions: [(Unicode.Scalar, Unicode.Scalar)] = []
    var isL33t: Bool { !substitutions.isEmpty }

    // spatial
    var graph: UInt8 = 0
    var turns: Int32 = 0
    var shiftedCount: Int32 = 0

    // repeat
    var repetition: Repetition?

    // sequence
    var sequenceName: UInt8 = 0  // lower, upper, digits, unicode
    var sequenceSpace: Int32 = 0
    var ascending = false

    // regex (recent_year) and date
    var year: Int32 = 0
    var month: Int32 = 0
    var day: Int32 = 0
    var separator: Unicode.Scalar?

    init(i: Int, j: Int, kind: Kind) {
        self.i = i
        self.j = j
        self.kind = kind
    }

    var length: Int { j - i + 1 }

    static let sequenceNames = ["lower", "upper", "digits", "unicode"]
}

/// A repeat match's base token and its own analysis (`base_token`, `base_guesses`, `base_matches`).
final class Repetition: Sendable {
    let baseToken: [Unicode.Scalar]
    let baseGuesses: Double
    let baseSequence: [Match]
    let repeatCount: Double

    init(baseToken: [Unicode.Scalar], baseGuesses: Double, baseSequence: [Match], repeatCount: Double) {
        self.baseToken = baseToken
        self.baseGuesses = baseGuesses
        self.baseSequence = baseSequence
        self.repeatCount = repeatCount
    }
}
