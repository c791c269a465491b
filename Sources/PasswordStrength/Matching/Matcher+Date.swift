extension Matcher {
    static let dateMinYear = 1000
    static let dateMaxYear = 2050
    /// For digit runs of length 4–8, the ways to cut them into three numbers (second and third start).
    static let dateSplits: [Int: [(Int, Int)]] = [
        4: [(1, 2), (2, 3)],
        5: [(1, 3), (2, 3)],
        6: [(1, 2), (2, 4), (4, 5)],
        7: [(1, 3), (2, 3), (4, 5), (4, 6)],
        8: [(2, 4), (4, 6)],
    ]

    /// `date_match`: day, month and year in any order with 2- or 4-digit years, written without
    /// separators (`13021991`) or with one repeated separator (`13.2.91`), minus dates inside
    /// longer dates.
    func dateMatches(_ password: [Unicode.Scalar], into matches: inout [Match]) {
        let count = password.count
        var found: [Match] = []

        // Without separators: 4 to 8 digits (`^\d{4,8}$`, where `$` also allows a final newline).
        if count >= 4 {
            for i in 0..<(count - 3) {
                for j in (i + 3)..<(i + 8) {
                    if j >= count { break }
                    let token = password[i...j]
                    guard Self.isDigitRun(token, minimum: 4, maximum: 8) else { continue }
                    var best: (year: Int, month: Int, day: Int)?
                    var bestDistance = Int.max
                    for (k, l) in Self.dateSplits[token.count]! {
                        let first = PythonText.integer(token[token.startIndex..<token.startIndex + k])
                        let second = PythonText.integer(token[token.startIndex + k..<token.startIndex + l])
                        let third = PythonText.integer(token[(token.startIndex + l)...])
                        if let date = Self.dayMonthYear(first, second, third) {
                            // Prefer the reading whose year is closest to the reference year.
                            let distance = abs(date.year - referenceYear)
                            if best == nil || distance < bestDistance {
                                best = date
                                bestDistance = distance
                            }
                        }
                    }
                    guard let best else { continue }
                    var match = Match(i: i, j: j, kind: .date)
                    match.year = Int32(best.year)
                    match.month = Int32(best.month)
                    match.day = Int32(best.day)
                    found.append(match)
                }
            }
        }

        // With separators: `^(\d{1,4})([\s/\\_.-])(\d{1,2})\2(\d{1,4})$`, 6 to 10 characters.
        if count >= 6 {
            for i in 0..<(count - 5) {
                for j in (i + 5)..<(i + 10) {
                    if j >= count { break }
                    guard let parts = Self.separatedDate(password[i...j]) else { continue }
                    guard let date = Self.dayMonthYear(parts.0, parts.1, parts.2) else { continue }
                    var match = Match(i: i, j: j, kind: .date)
                    match.separator = parts.separator
                    match.year = Int32(date.year)
                    match.month = Int32(date.month)
                    match.day = Int32(date.day)
                    found.append(match)
                }
            }
        }

        // Drop dates that lie inside another date.
        let start = matches.count
        for (index, match) in found.enumerated() {
            let isInner = found.indices.contains { other in
                other != index && found[other].i <= match.i && found[other].j >= match.j
            }
            if !isInner {
                matches.append(match)
            }
        }
        Self.stableSortByPosition(&matches, from: start)
    }

    /// Whether `token` is `minimum`…`maximum` decimal digits, optionally followed by one newline.
    static func isDigitRun(_ token: ArraySlice<Unicode.Scalar>, minimum: Int, maximum: Int) -> Bool {
        var digits = token.count
        if token.last == "\n" { digits -= 1 }
        guard digits >= minimum && digits <= maximum else { return false }
        return token.prefix(digits).allSatisfy(PythonText.isDecimalDigit)
    }

    /// Parses `d{1,4} SEP d{1,2} SEP d{1,4}` with the same separator twice.
    static func separatedDate(
        _ token: ArraySlice<Unicode.Scalar>
    ) -> (Int, Int, Int, separator: Unicode.Scalar)? {
        var index = token.startIndex
        let end = token.endIndex
        func digits(_ maximum: Int) -> ArraySlice<Unicode.Scalar>? {
            let start = index
            while index < end && index - start < maximum && PythonText.isDecimalDigit(token[index]) {
                index += 1
            }
            return index > start ? token[start..<index] : nil
        }
        func isSeparator(_ scalar: Unicode.Scalar) -> Bool {
            PythonText.isSpace(scalar) || scalar == "/" || scalar == "\\" || scalar == "_" || scalar == "."
                || scalar == "-"
        }
        // The first group is greedy `\d{1,4}`; backtracking cannot help because a separator is not a
        // digit, so the greedy reading is the only one.
        guard let first = digits(4), index < end, isSeparator(token[index]) else { return nil }
        let separator = token[index]
        index += 1
        guard let second = digits(2), index < end, token[index] == separator else { return nil }
        index += 1
        guard let third = digits(4) else { return nil }
        // `$`: the end, or a final newline.
        guard index == end || (index == end - 1 && token[index] == "\n") else { return nil }
        return (PythonText.integer(first), PythonText.integer(second), PythonText.integer(third), separator)
    }

    /// `map_ints_to_dmy`.
    static func dayMonthYear(_ a: Int, _ b: Int, _ c: Int) -> (year: Int, month: Int, day: Int)? {
        if b > 31 || b <= 0 { return nil }
        var over12 = 0
        var over31 = 0
        var under1 = 0
        for value in [a, b, c] {
            if (99 < value && value < dateMinYear) || value > dateMaxYear { return nil }
            if value > 31 { over31 += 1 }
            if value > 12 { over12 += 1 }
            if value <= 0 { under1 += 1 }
        }
        if over31 >= 2 || over12 == 3 || under1 >= 2 { return nil }

        let splits = [(c, (a, b)), (a, (b, c))]
        // A four-digit year: year + day-month, or day-month + year.
        for (year, rest) in splits where dateMinYear <= year && year <= dateMaxYear {
            guard let dayMonth = dayMonth(rest.0, rest.1) else { return nil }
            return (year, dayMonth.month, dayMonth.day)
        }
        // Otherwise a two-digit year.
        for (year, rest) in splits {
            if let dayMonth = dayMonth(rest.0, rest.1) {
                return (twoToFourDigitYear(year), dayMonth.month, dayMonth.day)
            }
        }
        return nil
    }

    static func dayMonth(_ a: Int, _ b: Int) -> (day: Int, month: Int)? {
        for (day, month) in [(a, b), (b, a)] where 1 <= day && day <= 31 && 1 <= month && month <= 12 {
            return (day, month)
        }
        return nil
    }

    static func twoToFourDigitYear(_ year: Int) -> Int {
        if year > 99 { return year }
        return year > 50 ? year + 1900 : year + 2000
    }
}
