extension Matcher {
    /// zxcvbn's l33t table, letters in python's dict order.
    static let l33tTable: [(letter: Unicode.Scalar, substitutes: [Unicode.Scalar])] = [
        ("a", ["4", "@"]),
        ("b", ["8"]),
        ("c", ["(", "{", "[", "<"]),
        ("e", ["3"]),
        ("g", ["6", "9"]),
        ("i", ["1", "!", "|"]),
        ("l", ["1", "|", "7"]),
        ("o", ["0"]),
        ("s", ["$", "5"]),
        ("t", ["+", "7"]),
        ("x", ["%"]),
        ("z", ["2"]),
    ]

    /// `l33t_match`: dictionary words with common substitutions undone (`p4ssw0rd`).
    func l33tMatches(_ password: [Unicode.Scalar], into matches: inout [Match]) {
        let table = Self.relevantSubtable(password)
        guard !table.isEmpty else { return }
        let start = matches.count
        var found: [Match] = []
        for substitution in Self.enumerateSubstitutions(table) {
            // Translate every l33t character of this substitution back to its letter.
            var subbed = password
            for index in subbed.indices {
                if let pair = substitution.first(where: { $0.0 == subbed[index] }) {
                    subbed[index] = pair.1
                }
            }
            let lowered = PythonText.lower(subbed)
            found.removeAll(keepingCapacity: true)
            appendDictionaryMatches(subbed, lowered: lowered, into: &found)
            for var match in found {
                let token = password[match.i...match.j]
                // Only matches that contain an actual substitution.
                if PythonText.lower(Array(token)) == Array(lowered[match.i...match.j]) { continue }
                guard match.length > 1 else { continue }
                match.substitutions = substitution.filter { token.contains($0.0) }
                // Identical candidates from other substitutions cannot win a tie (the first does);
                // drop them to keep the search small.
                if matches[start...].contains(where: { $0.isSameL33tMatch(as: match) }) { continue }
                matches.append(match)
            }
        }
        Self.stableSortByPosition(&matches, from: start)
    }

    /// `relevant_l33t_subtable`: the table restricted to substitutes present in the password.
    static func relevantSubtable(_ password: [Unicode.Scalar]) -> [(Unicode.Scalar, [Unicode.Scalar])] {
        var table: [(Unicode.Scalar, [Unicode.Scalar])] = []
        for (letter, substitutes) in l33tTable {
            let relevant = substitutes.filter { password.contains($0) }
            if !relevant.isEmpty {
                table.append((letter, relevant))
            }
        }
        return table
    }

    /// `enumerate_l33t_subs`: every consistent way to read the l33t characters (one letter per
    /// character), in python's order, as (l33t character, letter) lists.
    static func enumerateSubstitutions(
        _ table: [(Unicode.Scalar, [Unicode.Scalar])]
    ) -> [[(Unicode.Scalar, Unicode.Scalar)]] {
        var subs: [[(Unicode.Scalar, Unicode.Scalar)]] = [[]]
        for (letter, substitutes) in table {
            var next: [[(Unicode.Scalar, Unicode.Scalar)]] = []
            for l33t in substitutes {
                for sub in subs {
                    if let duplicate = sub.firstIndex(where: { $0.0 == l33t }) {
                        var alternative = sub
                        alternative.remove(at: duplicate)
                        alternative.append((l33t, letter))
                        next.append(sub)
                        next.append(alternative)
                    } else {
                        next.append(sub + [(l33t, letter)])
                    }
                }
            }
            // dedup: keep the first of subs with the same set of (letter, l33t) pairs.
            var seen: Set<[UInt64]> = []
            subs = next.filter { sub in
                let label = sub.map { UInt64($0.1.value) << 32 | UInt64($0.0.value) }.sorted()
                return seen.insert(label).inserted
            }
        }
        return subs
    }
}

extension Match {
    func isSameL33tMatch(as other: Match) -> Bool {
        i == other.i && j == other.j && dictionary == other.dictionary && rank == other.rank
            && substitutions.count == other.substitutions.count
            && zip(substitutions, other.substitutions).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
    }
}
