extension Matcher {
    /// `repeat_match`: a token repeated back to back (`aaaa`, `abcabc`), scored through its base
    /// token's own analysis.
    ///
    /// Python finds them with the regular expressions `(.+)\1+` (greedy) and `(.+?)\1+` (lazy)
    /// searched from the last match's end; this reproduces their leftmost-first, backtracking
    /// semantics directly: at the leftmost position where any period works, the greedy form takes the
    /// longest period and the lazy form the shortest, each followed by as many copies as fit. `.`
    /// does not match a newline.
    func repeatMatches(_ password: [Unicode.Scalar], into matches: inout [Match]) {
        let count = password.count
        var lastIndex = 0
        while lastIndex < count {
            guard let (start, shortest, longest) = Self.firstRepeat(password, from: lastIndex) else { break }
            let greedyLength = longest * Self.copies(password, start: start, period: longest)
            let lazyLength = shortest * Self.copies(password, start: start, period: shortest)
            let length: Int
            let baseLength: Int
            if greedyLength > lazyLength {
                length = greedyLength
                // The greedy match may itself be repeated (aabaab in aabaabaabaab): its base is the
                // shortest period of the whole match (`^(.+?)\1+$`).
                baseLength = Self.shortestPeriod(password[start..<start + length])
            } else {
                length = lazyLength
                baseLength = shortest
            }
            let baseToken = Array(password[start..<start + baseLength])
            let analysis = Scorer(matcher: self).mostGuessableMatchSequence(baseToken, omnimatch(baseToken))
            var match = Match(i: start, j: start + length - 1, kind: .repeat)
            match.repetition = Repetition(
                baseToken: baseToken,
                baseGuesses: analysis.guesses,
                baseSequence: analysis.sequence,
                repeatCount: Double(length) / Double(baseLength)
            )
            matches.append(match)
            lastIndex = start + length
        }
    }

    /// The leftmost start at or after `from` where a repeat begins, with its shortest and longest
    /// periods.
    static func firstRepeat(_ s: [Unicode.Scalar], from: Int) -> (start: Int, shortest: Int, longest: Int)? {
        let count = s.count
        var start = from
        while start + 1 < count {
            // `.+` cannot cross a newline: the period ends before the first newline.
            var limit = 0
            while start + limit < count && s[start + limit] != "\n" {
                limit += 1
            }
            limit = min(limit, (count - start) / 2)
            var shortest = 0
            var longest = 0
            if limit >= 1 {
                for period in 1...limit where isRepeated(s, start: start, period: period) {
                    if shortest == 0 { shortest = period }
                    longest = period
                }
            }
            if shortest > 0 {
                return (start, shortest, longest)
            }
            start += 1
        }
        return nil
    }

    @inline(__always)
    static func isRepeated(_ s: [Unicode.Scalar], start: Int, period: Int) -> Bool {
        for offset in 0..<period where s[start + offset] != s[start + period + offset] {
            return false
        }
        return true
    }

    /// How many back-to-back copies of `s[start..<start + period]` begin at `start` (at least 2 when
    /// called on a found repeat).
    static func copies(_ s: [Unicode.Scalar], start: Int, period: Int) -> Int {
        var copies = 1
        while start + (copies + 1) * period <= s.count
            && isRepeated(s, start: start + (copies - 1) * period, period: period)
        {
            copies += 1
        }
        return copies
    }

    /// The shortest period `p` such that `s` is `s[..<p]` repeated (at least twice).
    static func shortestPeriod(_ s: ArraySlice<Unicode.Scalar>) -> Int {
        let text = Array(s)
        guard text.count >= 2 else { return text.count }
        for period in 1...(text.count / 2) where text.count % period == 0 {
            if copies(text, start: 0, period: period) * period == text.count {
                return period
            }
        }
        return text.count
    }
}
