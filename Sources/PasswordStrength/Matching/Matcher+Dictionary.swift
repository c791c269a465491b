extension Matcher {
    /// `dictionary_match`: every substring of the lower-cased password found in a ranked list.
    func dictionaryMatches(_ password: [Unicode.Scalar], into matches: inout [Match]) {
        let start = matches.count
        appendDictionaryMatches(password, lowered: PythonText.lower(password), into: &matches)
        Self.stableSortByPosition(&matches, from: start)
    }

    /// Appends matches of `lowered` (the lower-cased `password`) sorted by (i, j, dictionary).
    /// If lower-casing changed the length (a handful of characters such as U+0130 lower-case to two
    /// code points), python slices the original at the lowered indices; matches that would fall
    /// outside the password are dropped (python raises on them later).
    func appendDictionaryMatches(_ password: [Unicode.Scalar], lowered: [Unicode.Scalar], into matches: inout [Match]) {
        let count = password.count
        let first = matches.count
        data.dictionary.forEachMatch(in: lowered) { i, j, dictionary, rank in
            guard j < count else { return }
            var match = Match(i: i, j: j, kind: .dictionary)
            match.dictionary = dictionary
            match.rank = rank
            matches.append(match)
        }
        guard let userInputs else { return }
        let frequencyEnd = matches.count
        userInputs.forEachMatch(in: lowered) { i, j, _, rank in
            guard j < count else { return }
            var match = Match(i: i, j: j, kind: .dictionary)
            match.dictionary = RankedDictionary.userInputsIndex
            match.rank = rank
            matches.append(match)
        }
        if matches.count > frequencyEnd && frequencyEnd > first {
            // Merge: user-input matches go after frequency-list matches with the same (i, j).
            Self.stableSortByPosition(&matches, from: first)
        }
    }

    /// `reverse_dictionary_match`: dictionary words spelled backwards.
    func reverseDictionaryMatches(_ password: [Unicode.Scalar], into matches: inout [Match]) {
        let start = matches.count
        let reversedPassword = Array(password.reversed())
        appendDictionaryMatches(reversedPassword, lowered: PythonText.lower(reversedPassword), into: &matches)
        let last = password.count - 1
        for index in start..<matches.count {
            let i = matches[index].i
            matches[index].i = last - matches[index].j
            matches[index].j = last - i
            matches[index].reversed = true
        }
        Self.stableSortByPosition(&matches, from: start)
    }
}
