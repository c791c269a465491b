import Foundation

extension Scorer {
    static let bruteforceCardinality = 10.0
    static let minGuessesBeforeGrowingSequence = 10_000.0
    static let minSubmatchGuessesSingleCharacter = 10.0
    static let minSubmatchGuessesMultiCharacter = 50.0
    static let minYearSpace = 20

    /// `estimate_guesses`: guesses for one match, at least 10 (one character) or 50 when the match
    /// covers only part of the password.
    func estimateGuesses(_ match: inout Match, _ password: [Unicode.Scalar]) -> Double {
        if match.guesses > 0 { return match.guesses }
        var minimum = 1.0
        if match.length < password.count {
            minimum = match.length == 1 ? Self.minSubmatchGuessesSingleCharacter : Self.minSubmatchGuessesMultiCharacter
        }
        let guesses: Double
        switch match.kind {
        case .bruteforce: guesses = Self.bruteforceGuesses(length: match.length)
        case .dictionary: guesses = dictionaryGuesses(match, password)
        case .spatial: guesses = spatialGuesses(match)
        case .repeat: guesses = match.repetition!.baseGuesses * match.repetition!.repeatCount
        case .sequence: guesses = Self.sequenceGuesses(match, password)
        case .regex: guesses = Double(max(abs(Int(match.year) - referenceYear), Self.minYearSpace))
        case .date: guesses = dateGuesses(match)
        }
        match.guesses = max(guesses, minimum)
        return match.guesses
    }

    static func bruteforceGuesses(length: Int) -> Double {
        let guesses = pow(bruteforceCardinality, Double(length))
        // One more than the smallest submatch, so that a real pattern over the same span wins.
        let minimum = length == 1 ? minSubmatchGuessesSingleCharacter + 1 : minSubmatchGuessesMultiCharacter + 1
        return max(guesses, minimum)
    }

    func dictionaryGuesses(_ match: Match, _ password: [Unicode.Scalar]) -> Double {
        let token = password[match.i...match.j]
        let base = Double(match.rank)
        return base * Self.uppercaseVariations(token) * Self.l33tVariations(match, token) * (match.reversed ? 2 : 1)
    }

    /// `uppercase_variations`: how many ways to capitalize a word like this one.
    static func uppercaseVariations(_ word: ArraySlice<Unicode.Scalar>) -> Double {
        // ALL_LOWER `^[^A-Z]+$`, or lower-casing changes nothing.
        if !word.contains(where: PythonText.isASCIIUpper) || PythonText.isLowercase(word) {
            return 1
        }
        if isStartUpper(word) || isEndUpper(word) || isAllUpper(word) {
            return 2
        }
        let upper = word.filter(PythonText.isUpper).count
        let lower = word.filter(PythonText.isLower).count
        return mixtures(upper, lower)
    }

    /// The ways to mix `a` letters of one kind with `b` of another when at least one and at most
    /// `min(a, b)` are of the rarer kind: `Σ nCk(a + b, i)` for `i` in `1...min(a, b)`, summed in
    /// zxcvbn's order (0 when either is 0). Upper/lower case, l33t/plain and shifted/unshifted keys
    /// all count their variations this way.
    static func mixtures(_ a: Int, _ b: Int) -> Double {
        var sum = 0.0
        for i in stride(from: 1, through: min(a, b), by: 1) {
            sum += PythonText.nCk(a + b, i)
        }
        return sum
    }

    /// `^[A-Z][^A-Z]+$`
    static func isStartUpper(_ word: ArraySlice<Unicode.Scalar>) -> Bool {
        guard word.count >= 2, let first = word.first, PythonText.isASCIIUpper(first) else { return false }
        return !word.dropFirst().contains(where: PythonText.isASCIIUpper)
    }

    /// `^[^A-Z]+[A-Z]$`, where `$` may also match before a final newline.
    static func isEndUpper(_ word: ArraySlice<Unicode.Scalar>) -> Bool {
        func matches(_ text: ArraySlice<Unicode.Scalar>) -> Bool {
            guard text.count >= 2, let last = text.last, PythonText.isASCIIUpper(last) else { return false }
            return !text.dropLast().contains(where: PythonText.isASCIIUpper)
        }
        return matches(word) || (word.last == "\n" && matches(word.dropLast()))
    }

    /// `^[^a-z]+$`
    static func isAllUpper(_ word: ArraySlice<Unicode.Scalar>) -> Bool {
        !word.isEmpty && !word.contains(where: PythonText.isASCIILower)
    }

    /// `l33t_variations`: for each substitution, the ways to mix substituted and plain letters.
    static func l33tVariations(_ match: Match, _ token: ArraySlice<Unicode.Scalar>) -> Double {
        guard match.isL33t else { return 1 }
        var variations = 1.0
        let lowered = PythonText.lower(Array(token))
        for (subbed, unsubbed) in match.substitutions {
            let s = lowered.filter { $0 == subbed }.count
            let u = lowered.filter { $0 == unsubbed }.count
            variations *= s == 0 || u == 0 ? 2 : mixtures(u, s)
        }
        return variations
    }

    /// `spatial_guesses`.
    func spatialGuesses(_ match: Match) -> Double {
        let graph = matcher.data.graphs[Int(match.graph)]
        let s = graph.startingPositions
        let d = graph.averageDegree
        var guesses = 0.0
        let length = match.length
        let turns = Int(match.turns)
        if length >= 2 {
            for i in 2...length {
                let possibleTurns = min(turns, i - 1)
                if possibleTurns >= 1 {
                    for j in 1...possibleTurns {
                        guesses += PythonText.nCk(i - 1, j - 1) * s * pow(d, Double(j))
                    }
                }
            }
        }
        if match.shiftedCount > 0 {
            let shifted = Int(match.shiftedCount)
            let unshifted = length - shifted
            guesses *= unshifted == 0 ? 2 : Self.mixtures(shifted, unshifted)
        }
        return guesses
    }

    /// `sequence_guesses`: obvious starting points are cheap, descending runs twice as costly.
    static func sequenceGuesses(_ match: Match, _ password: [Unicode.Scalar]) -> Double {
        let first = password[match.i]
        var base: Double
        switch first {
        case "a", "A", "z", "Z", "0", "1", "9": base = 4
        default: base = PythonText.isDecimalDigit(first) ? 10 : 26
        }
        if !match.ascending { base *= 2 }
        return base * Double(match.length)
    }

    /// `date_guesses`: the year space (at least 20 years from the reference year) times 365 days,
    /// times 4 with a separator.
    func dateGuesses(_ match: Match) -> Double {
        let yearSpace = max(abs(Int(match.year) - referenceYear), Self.minYearSpace)
        var guesses = Double(yearSpace * 365)
        if match.separator != nil { guesses *= 4 }
        return guesses
    }
}
