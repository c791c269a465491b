extension PasswordRules {
    /// Canonicalizes a list of classes the way Apple's `_canonicalizedPropertyValues` does.
    ///
    /// 1. The first `unicode` or `ascii-printable` in the list wins outright (so order matters).
    /// 2. Otherwise the characters are collected; a complete set of all 95 printable characters is
    ///    `ascii-printable`.
    /// 3. Otherwise complete named classes are listed in the order `upper, lower, digit, special`,
    ///    followed by one custom class of the remaining characters: partial upper-case, partial
    ///    lower-case, partial digits, then partial specials in ASCII order.
    ///
    /// With `formatCompliant` (the display view), `-` is moved to the front and `]` to the end of the
    /// *special* part of the custom class, exactly as Apple does. When the class also holds letters or
    /// digits, the `-` is then not the first character and does not survive a re-parse (`[-a]`
    /// displays as `[a-]`, which parses as `[a]`): an upstream bug we reproduce for parity and report
    /// with a ``PasswordRulesDiagnostic/Code/displayDropsDash`` diagnostic.
    public static func canonicalize(_ values: [CharacterClass], formatCompliant: Bool) -> [CharacterClass] {
        var set = ASCIISet()
        for value in values {
            switch value {
            case .unicode: return [.unicode]
            case .asciiPrintable: return [.asciiPrintable]
            default: set.formUnion(value.asciiCharacters)
            }
        }
        let hasAllUpper = set.isSuperset(of: .upper)
        let hasAllLower = set.isSuperset(of: .lower)
        let hasAllDigits = set.isSuperset(of: .digits)
        let hasAllSpecial = set.isSuperset(of: .special)
        if hasAllUpper && hasAllLower && hasAllDigits && hasAllSpecial {
            return [.asciiPrintable]
        }
        var result: [CharacterClass] = []
        var custom: [UInt8] = []
        if hasAllUpper { result.append(.upper) } else { custom += set.intersection(.upper).bytes }
        if hasAllLower { result.append(.lower) } else { custom += set.intersection(.lower).bytes }
        if hasAllDigits { result.append(.digit) } else { custom += set.intersection(.digits).bytes }
        if hasAllSpecial {
            result.append(.special)
        } else {
            var specials = set.intersection(.special)
            if formatCompliant {
                let dash = UInt8(ascii: "-")
                let bracket = UInt8(ascii: "]")
                let hasDash = specials.contains(dash)
                let hasBracket = specials.contains(bracket)
                specials.remove(dash)
                specials.remove(bracket)
                if hasDash { custom.append(dash) }
                custom += specials.bytes
                if hasBracket { custom.append(bracket) }
            } else {
                custom += specials.bytes
            }
        }
        if !custom.isEmpty {
            result.append(.custom(String(decoding: custom, as: UTF8.self)))
        }
        return result
    }
}
