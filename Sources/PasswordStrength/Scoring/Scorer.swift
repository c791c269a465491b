import Foundation

/// zxcvbn's scoring: guesses per match and the search for the match sequence that minimizes
///
///     g = l! · Π(guesses of the l matches) + 10000^(l − 1)
///
/// over the password (gaps filled with brute force), by dynamic programming over prefixes and
/// sequence lengths.
///
/// The reference (python zxcvbn 4.5.0) does this arithmetic in 28-digit `Decimal`; we use `Double`.
/// Guesses agree to about 15 significant digits; only exact ties between different sequences can
/// resolve differently, which changes the reported sequence but not the guesses or the score.
struct Scorer {
    let matcher: Matcher
    var referenceYear: Int { matcher.referenceYear }

    struct Analysis {
        var guesses: Double
        var sequence: [Match]
    }

    /// One entry of the `optimal` tables at a position: the best length-`l` sequence ending there.
    private struct Candidate {
        var length: Int
        var match: Match
        var pi: Double
        var g: Double
    }

    func mostGuessableMatchSequence(_ password: [Unicode.Scalar], _ matches: [Match]) -> Analysis {
        let n = password.count
        guard n > 0 else { return Analysis(guesses: 1, sequence: []) }

        var byEnd = [[Match]](repeating: [], count: n)
        for match in matches where match.j < n {
            byEnd[match.j].append(match)
        }
        for index in byEnd.indices where byEnd[index].count > 1 {
            // Sort by i, stably.
            byEnd[index] = byEnd[index].enumerated().sorted { a, b in
                a.element.i != b.element.i ? a.element.i < b.element.i : a.offset < b.offset
            }.map(\.element)
        }

        for index in byEnd.indices {
            for position in byEnd[index].indices {
                _ = estimateGuesses(&byEnd[index][position], password)
            }
        }

        // optimal[k]: candidates in insertion order (python dicts keep it, and it decides ties).
        var optimal = [[Candidate]](repeating: [], count: n)

        func update(_ match: Match, _ length: Int) {
            var match = match
            let k = match.j
            var pi = estimateGuesses(&match, password)
            if length > 1 {
                guard let previous = optimal[match.i - 1].first(where: { $0.length == length - 1 }) else { return }
                pi *= previous.pi
            }
            var g = Self.factorial(length) * pi
            g += pow(Self.minGuessesBeforeGrowingSequence, Double(length - 1))
            for competing in optimal[k] where competing.length <= length && competing.g <= g {
                return
            }
            let candidate = Candidate(length: length, match: match, pi: pi, g: g)
            if let existing = optimal[k].firstIndex(where: { $0.length == length }) {
                optimal[k][existing] = candidate
            } else {
                optimal[k].append(candidate)
            }
        }

        func bruteforce(_ i: Int, _ j: Int) -> Match {
            Match(i: i, j: j, kind: .bruteforce)
        }

        for k in 0..<n {
            for match in byEnd[k] {
                if match.i > 0 {
                    for length in optimal[match.i - 1].map(\.length) {
                        update(match, length + 1)
                    }
                } else {
                    update(match, 1)
                }
            }
            // Brute force from the start, or after any non-brute-force sequence ending at i − 1.
            update(bruteforce(0, k), 1)
            if k >= 1 {
                for i in 1...k {
                    let match = bruteforce(i, k)
                    for candidate in optimal[i - 1] where candidate.match.kind != .bruteforce {
                        update(match, candidate.length + 1)
                    }
                }
            }
        }

        // Unwind from the end: the first candidate with the smallest g.
        var best = optimal[n - 1][0]
        for candidate in optimal[n - 1].dropFirst() where candidate.g < best.g {
            best = candidate
        }
        var sequence: [Match] = []
        var k = n - 1
        var length = best.length
        while k >= 0 {
            let candidate = optimal[k].first { $0.length == length }!
            sequence.append(candidate.match)
            k = candidate.match.i - 1
            length -= 1
        }
        sequence.reverse()
        return Analysis(guesses: best.g, sequence: sequence)
    }

    static func factorial(_ n: Int) -> Double {
        var result = 1.0
        if n > 1 {
            for i in 2...n { result *= Double(i) }
        }
        return result
    }
}
