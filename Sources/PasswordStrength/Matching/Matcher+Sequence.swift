extension Matcher {
    static let maxDelta = 5

    /// `sequence_match`: runs with a constant code-point step of at most 5 (`abcd`, `9753`, `αβγ`).
    func sequenceMatches(_ password: [Unicode.Scalar], into matches: inout [Match]) {
        guard password.count > 1 else { return }

        func update(_ i: Int, _ j: Int, _ delta: Int) {
            guard j - i > 1 || abs(delta) == 1 else { return }
            guard abs(delta) > 0 && abs(delta) <= Self.maxDelta else { return }
            let token = password[i...j]
            var match = Match(i: i, j: j, kind: .sequence)
            if token.allSatisfy(PythonText.isASCIILower) {
                match.sequenceName = 0
                match.sequenceSpace = 26
            } else if token.allSatisfy(PythonText.isASCIIUpper) {
                match.sequenceName = 1
                match.sequenceSpace = 26
            } else if token.allSatisfy(PythonText.isDecimalDigit) {
                match.sequenceName = 2
                match.sequenceSpace = 10
            } else {
                match.sequenceName = 3
                match.sequenceSpace = 26
            }
            match.ascending = delta > 0
            matches.append(match)
        }

        var i = 0
        var lastDelta: Int?
        for k in 1..<password.count {
            let delta = Int(password[k].value) - Int(password[k - 1].value)
            if lastDelta == nil {
                lastDelta = delta
            }
            if delta == lastDelta {
                continue
            }
            let j = k - 1
            update(i, j, lastDelta!)
            i = j
            lastDelta = delta
        }
        update(i, password.count - 1, lastDelta!)
    }

    /// `regex_match` with zxcvbn's only regex, `recent_year`: `19\d\d|200\d|201\d`.
    func recentYearMatches(_ password: [Unicode.Scalar], into matches: inout [Match]) {
        var position = 0
        let count = password.count
        while position + 4 <= count {
            let a = password[position]
            let b = password[position + 1]
            let c = password[position + 2]
            let d = password[position + 3]
            let matched =
                (a == "1" && b == "9" && PythonText.isDecimalDigit(c) && PythonText.isDecimalDigit(d))
                || (a == "2" && b == "0" && c == "0" && PythonText.isDecimalDigit(d))
                || (a == "2" && b == "0" && c == "1" && PythonText.isDecimalDigit(d))
            if matched {
                var match = Match(i: position, j: position + 3, kind: .regex)
                match.year = Int32(PythonText.integer(password[position...position + 3]))
                matches.append(match)
                position += 4  // finditer: non-overlapping
            } else {
                position += 1
            }
        }
    }
}
