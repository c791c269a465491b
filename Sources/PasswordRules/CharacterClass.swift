/// One value of a `required` or `allowed` property.
///
/// Named classes are written lower-case (the parser accepts any case). A custom class keeps its
/// characters in canonical order: partial upper-case letters, partial lower-case letters, partial
/// digits, then specials (see ``PasswordRules/canonicalize(_:formatCompliant:)``).
public enum CharacterClass: Hashable, Sendable {
    case upper
    case lower
    case digit
    case special
    case asciiPrintable
    case unicode
    /// `[...]`: printable ASCII characters in canonical order.
    case custom(String)

    /// The identifier as written in rules, or `[...]` for a custom class.
    public var description: String {
        switch self {
        case .upper: return "upper"
        case .lower: return "lower"
        case .digit: return "digit"
        case .special: return "special"
        case .asciiPrintable: return "ascii-printable"
        case .unicode: return "unicode"
        case .custom(let characters): return "[\(characters)]"
        }
    }

    /// The named class for an identifier, compared case-insensitively, as Apple's parser does.
    init?(identifier: String) {
        switch identifier.lowercased() {
        case "upper": self = .upper
        case "lower": self = .lower
        case "digit": self = .digit
        case "special": self = .special
        case "ascii-printable": self = .asciiPrintable
        case "unicode": self = .unicode
        default: return nil
        }
    }

    /// The ASCII characters this class stands for. `unicode` maps to ascii-printable: that is what any
    /// generator can type, and it is how Apple's own generator expands it.
    public var asciiCharacters: ASCIISet {
        switch self {
        case .upper: return .upper
        case .lower: return .lower
        case .digit: return .digits
        case .special: return .special
        case .asciiPrintable, .unicode: return .asciiPrintable
        case .custom(let characters): return ASCIISet(characters)
        }
    }
}

extension [CharacterClass] {
    /// The union of the classes' ASCII characters.
    var asciiCharacters: ASCIISet {
        var set = ASCIISet()
        for value in self {
            set.formUnion(value.asciiCharacters)
        }
        return set
    }

    /// Whether any class admits every Unicode character.
    var admitsUnicode: Bool { contains(.unicode) }

    /// The classes joined with "," and no space, as Apple's display form writes them.
    var ruleDescription: String { map(\.description).joined(separator: ",") }
}
