import Foundation

extension PasswordGenerator {
    /// The random style, fixed once per rule set: alphabet, length, and one character set per
    /// `required` line.
    struct RandomPlan: Sendable {
        let alphabet: [UInt8]
        let length: Int
        let requiredSets: [[UInt8]]
        let repeatLimit: Int?
        let sequenceLimit: Int?

        static let rejectionAttempts = 256
        static let constructiveAttempts = 4096

        init(_ requirements: PasswordRequirements) throws(PasswordGenerationError) {
            if let minLength = requirements.minLength, let maxLength = requirements.maxLength, minLength > maxLength {
                throw PasswordGenerationError(
                    .minLengthExceedsMaxLength,
                    "minlength \(minLength) is greater than maxlength \(maxLength)"
                )
            }
            let space = UInt8(ascii: " ")
            var characters = requirements.allowed
            if requirements.allowsUnicode {
                characters.formUnion(.asciiPrintable)
            }
            characters = characters.intersection(.asciiPrintable)
            var withoutSpace = characters
            withoutSpace.remove(space)
            let needsSpace =
                withoutSpace.isEmpty
                || requirements.required.contains { line in
                    !line.admitsUnicode && line.characters.intersection(withoutSpace).isEmpty
                        && line.characters.intersection(characters).contains(space)
                }
            if !needsSpace {
                characters = withoutSpace
            }
            var requiredSets: [[UInt8]] = []
            for line in requirements.required {
                let set = line.admitsUnicode ? characters : line.characters.intersection(characters)
                guard !set.isEmpty else {
                    throw PasswordGenerationError(
                        .requiredNotAllowed,
                        "required line \(line.index + 1) (\(line.classes.ruleDescription)) "
                            + "has no character the rules allow"
                    )
                }
                requiredSets.append(set.bytes)
            }
            guard !characters.isEmpty else {
                throw PasswordGenerationError(
                    .requiredNotAllowed,
                    "the rules allow no printable character"
                )
            }

            var length = PasswordGenerator.defaultLength
            if characters.count > 1 {
                let forBits = Int((PasswordGenerator.targetBits / log2(Double(characters.count))).rounded(.up))
                length = min(max(length, forBits), PasswordGenerator.maximumDefaultLength)
            }
            if let maxLength = requirements.maxLength { length = min(length, maxLength) }
            if let minLength = requirements.minLength { length = max(length, minLength) }
            if requiredSets.count > length {
                if let maxLength = requirements.maxLength, requiredSets.count > maxLength {
                    throw PasswordGenerationError(
                        .tooManyRequiredLines,
                        "\(requiredSets.count) required lines need \(requiredSets.count) characters, "
                            + "but maxlength is \(maxLength)"
                    )
                }
                length = requiredSets.count
            }
            if characters.count == 1, let limit = requirements.repeatLimit, limit < length {
                throw PasswordGenerationError(
                    .limitsUnsatisfiable,
                    "only one character is allowed, so \(length) characters repeat it more than "
                        + "\(limit) times in a row"
                )
            }
            self.alphabet = characters.bytes
            self.length = length
            self.requiredSets = requiredSets
            self.repeatLimit = requirements.repeatLimit
            self.sequenceLimit = requirements.sequenceLimit
        }

        func generate<R: RandomNumberGenerator>(
            _ requirements: PasswordRequirements,
            using rng: inout R
        ) throws(PasswordGenerationError) -> String {
            var buffer = [Unicode.Scalar](repeating: " ", count: length)
            for _ in 0..<Self.rejectionAttempts {
                for index in 0..<length {
                    buffer[index] = Unicode.Scalar(alphabet[Int.random(in: 0..<alphabet.count, using: &rng)])
                }
                if meetsLimitsAndRequiredLines(buffer, requirements) {
                    return String(String.UnicodeScalarView(buffer))
                }
            }
            for _ in 0..<Self.constructiveAttempts {
                if constructive(into: &buffer, using: &rng), meetsLimitsAndRequiredLines(buffer, requirements) {
                    return String(String.UnicodeScalarView(buffer))
                }
            }
            throw PasswordGenerationError(
                .limitsUnsatisfiable,
                "no password of \(length) characters met the required lines and the repeat/sequence "
                    + "limits after \(Self.rejectionAttempts + Self.constructiveAttempts) attempts"
            )
        }

        private func meetsLimitsAndRequiredLines(
            _ scalars: [Unicode.Scalar],
            _ requirements: PasswordRequirements
        ) -> Bool {
            if let repeatLimit, let run = PasswordRequirements.longestRepeatedRun(scalars), run.length > repeatLimit {
                return false
            }
            if let sequenceLimit, let run = PasswordRequirements.longestSequentialRun(scalars),
                run.length > sequenceLimit
            {
                return false
            }
            return requirements.unmetRequiredLines(scalars).isEmpty
        }

        /// Places each required line's character at its own random position, fills the rest from the
        /// alphabet, and steers clear of runs longer than the limits. `false` when it painted itself
        /// into a corner (the caller retries).
        private func constructive<R: RandomNumberGenerator>(
            into buffer: inout [Unicode.Scalar],
            using rng: inout R
        )
            -> Bool
        {
            var positions = Array(0..<length)
            positions.shuffle(using: &rng)
            var pool = [[UInt8]?](repeating: nil, count: length)
            for (line, set) in requiredSets.enumerated() {
                pool[positions[line]] = set
            }
            var repeatRun = 0
            var sequenceRun = 0
            var direction = 0
            var candidates: [UInt8] = []
            candidates.reserveCapacity(alphabet.count)
            for index in 0..<length {
                candidates.removeAll(keepingCapacity: true)
                for byte in pool[index] ?? alphabet {
                    let scalar = Unicode.Scalar(byte)
                    if index > 0 {
                        let previous = buffer[index - 1]
                        if let repeatLimit, scalar == previous, repeatRun + 1 > repeatLimit { continue }
                        if let sequenceLimit {
                            let step = PasswordRequirements.sequentialStep(from: previous, to: scalar)
                            let run = step == 0 ? 1 : (step == direction ? sequenceRun + 1 : 2)
                            if run > sequenceLimit { continue }
                        }
                    }
                    candidates.append(byte)
                }
                guard !candidates.isEmpty else { return false }
                let scalar = Unicode.Scalar(candidates[Int.random(in: 0..<candidates.count, using: &rng)])
                if index == 0 {
                    repeatRun = 1
                    sequenceRun = 1
                    direction = 0
                } else {
                    let previous = buffer[index - 1]
                    repeatRun = scalar == previous ? repeatRun + 1 : 1
                    let step = PasswordRequirements.sequentialStep(from: previous, to: scalar)
                    if step == 0 {
                        sequenceRun = 1
                        direction = 0
                    } else if step == direction {
                        sequenceRun += 1
                    } else {
                        sequenceRun = 2
                        direction = step
                    }
                }
                buffer[index] = scalar
            }
            return true
        }
    }
}
