/// The result of checking a password against rules: every unmet requirement, as values.
///
/// Descriptions name positions and rule lines, never the password's characters, so a report can be
/// logged or shown without revealing the secret.
public struct PasswordValidationReport: Hashable, Sendable, CustomStringConvertible {
    /// One unmet requirement.
    public enum Failure: Hashable, Sendable, CustomStringConvertible {
        case tooShort(length: Int, minimum: Int)
        case tooLong(length: Int, maximum: Int)
        /// Characters outside `allowed`, by 1-based position.
        case disallowedCharacters(positions: [Int])
        /// A `required` line (0-based `line`) with no character of its own.
        case missingRequired(line: Int, classes: [CharacterClass])
        /// A run of one repeated character longer than allowed; `position` is 1-based.
        case repeatedRun(position: Int, length: Int, limit: Int)
        /// A run of ±1 steps (`abc`, `987`) longer than allowed; `position` is 1-based.
        case sequentialRun(position: Int, length: Int, limit: Int)

        public var description: String {
            switch self {
            case .tooShort(let length, let minimum):
                return "too short: \(length) characters, minlength is \(minimum)"
            case .tooLong(let length, let maximum):
                return "too long: \(length) characters, maxlength is \(maximum)"
            case .disallowedCharacters(let positions):
                let list = positions.prefix(10).map(String.init).joined(separator: ", ")
                let more = positions.count > 10 ? ", …" : ""
                let noun = positions.count == 1 ? "character" : "characters"
                return "\(positions.count) \(noun) not allowed (position \(list)\(more))"
            case .missingRequired(let line, let classes):
                return "required line \(line + 1) (required: \(classes.ruleDescription);) has no character of its own"
            case .repeatedRun(let position, let length, let limit):
                return "\(length) identical characters in a row at position \(position); at most \(limit) allowed"
            case .sequentialRun(let position, let length, let limit):
                return
                    "a sequence of \(length) characters (like abc or 321) at position \(position); at most \(limit) allowed"
            }
        }
    }

    public var failures: [Failure]
    public var isValid: Bool { failures.isEmpty }

    public var description: String {
        isValid ? "pass" : failures.map(\.description).joined(separator: "; ")
    }
}

extension PasswordRules {
    /// Checks `password` against these rules. See ``PasswordRequirements/validate(_:)``.
    public func validate(_ password: String) -> PasswordValidationReport {
        PasswordRequirements(self).validate(password)
    }
}

extension PasswordRequirements {
    /// Checks `password` and lists every unmet requirement.
    ///
    /// Length counts Unicode scalars. Each `required` line must be met by a character of its own
    /// (`required: digit; required: digit` needs two digits), which is how Apple's maintainers read
    /// repeated lines (apple/password-manager-resources#685); lines are matched to characters with
    /// a maximum bipartite matching, and the lines left over are reported.
    public func validate(_ password: String) -> PasswordValidationReport {
        validate(scalars: Array(password.unicodeScalars))
    }

    func validate(scalars: [Unicode.Scalar]) -> PasswordValidationReport {
        var failures: [PasswordValidationReport.Failure] = []
        let length = scalars.count
        if let minLength, length < minLength {
            failures.append(.tooShort(length: length, minimum: minLength))
        }
        if let maxLength, length > maxLength {
            failures.append(.tooLong(length: length, maximum: maxLength))
        }
        var disallowed: [Int] = []
        for (index, scalar) in scalars.enumerated() where !isAllowed(scalar) {
            disallowed.append(index + 1)
        }
        if !disallowed.isEmpty {
            failures.append(.disallowedCharacters(positions: disallowed))
        }
        for line in unmetRequiredLines(scalars) {
            failures.append(.missingRequired(line: line.index, classes: line.classes))
        }
        if let repeatLimit, let run = Self.longestRepeatedRun(scalars), run.length > repeatLimit {
            failures.append(.repeatedRun(position: run.start + 1, length: run.length, limit: repeatLimit))
        }
        if let sequenceLimit, let run = Self.longestSequentialRun(scalars), run.length > sequenceLimit {
            failures.append(.sequentialRun(position: run.start + 1, length: run.length, limit: sequenceLimit))
        }
        return PasswordValidationReport(failures: failures)
    }

    /// The required lines left without a character after a maximum matching (Kuhn's algorithm).
    func unmetRequiredLines(_ scalars: [Unicode.Scalar]) -> [RequiredLine] {
        guard !required.isEmpty else { return [] }
        var owner = [Int](repeating: -1, count: scalars.count)  // position -> line
        var unmet: [RequiredLine] = []

        func augment(_ line: Int, _ visited: inout [Bool]) -> Bool {
            for position in scalars.indices where !visited[position] && required[line].isMet(by: scalars[position]) {
                visited[position] = true
                if owner[position] == -1 || augment(owner[position], &visited) {
                    owner[position] = line
                    return true
                }
            }
            return false
        }

        for line in required.indices {
            var visited = [Bool](repeating: false, count: scalars.count)
            if !augment(line, &visited) {
                unmet.append(required[line])
            }
        }
        return unmet
    }

    /// The first longest run of one repeated character.
    static func longestRepeatedRun(_ scalars: [Unicode.Scalar]) -> (start: Int, length: Int)? {
        guard !scalars.isEmpty else { return nil }
        var best = (start: 0, length: 1)
        var start = 0
        for index in 1..<scalars.count {
            if scalars[index] != scalars[index - 1] {
                start = index
            } else if index - start + 1 > best.length {
                best = (start, index - start + 1)
            }
        }
        return best
    }

    /// The first longest run of characters stepping by +1 (or by −1) within `a-z`, `A-Z` or `0-9`.
    /// A change of direction starts a new run at the turning character (`abcba` has runs `abc`, `cba`).
    static func longestSequentialRun(_ scalars: [Unicode.Scalar]) -> (start: Int, length: Int)? {
        guard !scalars.isEmpty else { return nil }
        var best = (start: 0, length: 1)
        var start = 0
        var direction = 0
        for index in 1..<scalars.count {
            let step = sequentialStep(from: scalars[index - 1], to: scalars[index])
            if step != 0 && step == direction {
                // The run continues.
            } else if step != 0 {
                start = index - 1
                direction = step
            } else {
                start = index
                direction = 0
            }
            if index - start + 1 > best.length {
                best = (start, index - start + 1)
            }
        }
        return best
    }

    /// +1 or −1 when `b` follows `a` in the same range (`a-z`, `A-Z`, `0-9`), else 0.
    @inline(__always)
    static func sequentialStep(from a: Unicode.Scalar, to b: Unicode.Scalar) -> Int {
        let x = Int(a.value)
        let y = Int(b.value)
        guard abs(x - y) == 1, let range = sequenceRange(x), sequenceRange(y) == range else { return 0 }
        return y - x
    }

    @inline(__always)
    private static func sequenceRange(_ value: Int) -> Int? {
        switch value {
        case 0x30...0x39: return 0
        case 0x41...0x5A: return 1
        case 0x61...0x7A: return 2
        default: return nil
        }
    }
}
