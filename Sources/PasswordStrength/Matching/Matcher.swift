/// zxcvbn's `omnimatch`: every matcher over a password, in python zxcvbn 4.5.0's order.
struct Matcher {
    let data: StrengthData
    /// The `user_inputs` dictionary (lower-cased inputs, rank = position, last duplicate wins).
    let userInputs: RankedDictionary?
    let referenceYear: Int

    /// All matches, stably sorted by (i, j): ties keep matcher order (dictionary, reverse dictionary,
    /// l33t, spatial, repeat, sequence, regex, date) and each matcher's own order, which decides
    /// ties in the search exactly as in the reference.
    func omnimatch(_ password: [Unicode.Scalar]) -> [Match] {
        var matches: [Match] = []
        matches.reserveCapacity(32)
        dictionaryMatches(password, into: &matches)
        reverseDictionaryMatches(password, into: &matches)
        l33tMatches(password, into: &matches)
        spatialMatches(password, into: &matches)
        repeatMatches(password, into: &matches)
        sequenceMatches(password, into: &matches)
        recentYearMatches(password, into: &matches)
        dateMatches(password, into: &matches)
        Self.stableSortByPosition(&matches)
        return matches
    }

    /// Sorts by (i, j) keeping the existing order of equal keys (Python's `sorted` is stable).
    static func stableSortByPosition(_ matches: inout [Match], from start: Int = 0) {
        guard matches.count - start > 1 else { return }
        var keyed = matches[start...].enumerated().map { (offset: $0.offset, match: $0.element) }
        keyed.sort { a, b in
            if a.match.i != b.match.i { return a.match.i < b.match.i }
            if a.match.j != b.match.j { return a.match.j < b.match.j }
            return a.offset < b.offset
        }
        for (index, entry) in keyed.enumerated() {
            matches[start + index] = entry.match
        }
    }
}
