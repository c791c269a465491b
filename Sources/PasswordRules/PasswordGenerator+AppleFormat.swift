import Foundation

extension PasswordGenerator {
    static let consonants = Array("bcdfghjkmnpqrstvwxz".utf8)
    static let vowels = Array("aeiouy".utf8)

    /// log2(19^11 · 6^6 · 10 · 5 · 17): syllables, digit, digit position, upper-case position
    /// (slightly less in truth, since an `o` is never upper-cased).
    static let appleFormatBits: Double = 11 * log2(19) + 6 * log2(6) + log2(10) + log2(5) + log2(17)

    /// The dash setting for Apple's format, or `nil` when the requirements rule it out.
    ///
    /// Apple's conditions (its password-rules validation tool): the whole unambiguous alphanumeric set
    /// is allowed; at most one `required` line is exactly the digits and at most one exactly the
    /// upper-case letters (the format has one of each); every `required` line shares a character with
    /// what the format can produce. We additionally check the length against the length actually
    /// produced (18 without dashes), where Apple checks 20 in both cases.
    static func appleFormatDashes(_ requirements: PasswordRequirements) -> Bool? {
        guard requirements.allowsUnicode || requirements.allowed.isSuperset(of: .unambiguous) else { return nil }
        let dashes = requirements.allowsUnicode || requirements.allowed.contains(UInt8(ascii: "-"))
        let length = dashes ? 20 : 18
        if let minLength = requirements.minLength, minLength > length { return nil }
        if let maxLength = requirements.maxLength, maxLength < length { return nil }
        var producible = ASCIISet.unambiguous
        if dashes { producible.insert(UInt8(ascii: "-")) }
        var digitLines = 0
        var upperLines = 0
        for line in requirements.required {
            if line.admitsUnicode { continue }
            if line.characters == .digits { digitLines += 1 }
            if line.characters == .upper { upperLines += 1 }
            if line.characters.isDisjoint(with: producible) { return nil }
        }
        guard digitLines <= 1, upperLines <= 1, requirements.required.count <= 18 else { return nil }
        return dashes
    }

    /// One password in Apple's format, as scalars.
    ///
    /// 17 lower-case letters in the syllable pattern CVC·CVC·CVC·CVC·CVC·CV (consonants without `l`,
    /// vowels including `y`); one letter, never an `o`, is upper-cased; the letters are cut into groups
    /// of 6, 6 and 5, and one digit joins the short group at its start or end so that it always sits
    /// next to a dash — five placements in all (never the very first character). Groups are joined with
    /// `-`, or directly when dashes are not allowed.
    static func appleFormatScalars<R: RandomNumberGenerator>(dashes: Bool, using rng: inout R) -> [Unicode.Scalar] {
        var letters = [UInt8](repeating: 0, count: 17)
        for index in 0..<17 {
            // Positions 1, 4, 7, 10, 13 and 16 are vowels; the others consonants.
            let pool = index % 3 == 1 ? vowels : consonants
            letters[index] = pool[Int.random(in: 0..<pool.count, using: &rng)]
        }
        while true {
            let index = Int.random(in: 0..<17, using: &rng)
            if letters[index] != UInt8(ascii: "o") {
                letters[index] -= 32
                break
            }
        }
        let digit = UInt8(ascii: "0") + UInt8(Int.random(in: 0..<10, using: &rng))
        let first = Array(letters[0..<6])
        let second = Array(letters[6..<12])
        let short = Array(letters[12..<17])
        let groups: [[UInt8]]
        switch Int.random(in: 0..<5, using: &rng) {
        case 0: groups = [short + [digit], first, second]
        case 1: groups = [first, [digit] + short, second]
        case 2: groups = [first, short + [digit], second]
        case 3: groups = [first, second, [digit] + short]
        default: groups = [first, second, short + [digit]]
        }
        var result: [Unicode.Scalar] = []
        result.reserveCapacity(20)
        for (index, group) in groups.enumerated() {
            if dashes && index > 0 { result.append("-") }
            for byte in group { result.append(Unicode.Scalar(byte)) }
        }
        return result
    }
}
