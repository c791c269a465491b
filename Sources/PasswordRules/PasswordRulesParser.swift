/// The lexer and parser of Apple's password-rules language.
///
/// It follows the control flow of Apple's reference parser (`PasswordRulesParser.js`) step by step,
/// because parity includes its error recovery: which mistakes drop a character, a class, a property,
/// the rest of the string, or the whole string. Input is read as Unicode scalars; every character the
/// grammar cares about is ASCII, so this gives the same answers as the JavaScript's UTF-16 indexing.
struct PasswordRulesParser {
    /// A property as written, before properties are combined.
    struct Property {
        var name: PasswordRules.PropertyName
        var classes: [CharacterClass] = []
        var integer: Int = 0
    }

    private let input: [Unicode.Scalar]
    private(set) var diagnostics: [PasswordRulesDiagnostic] = []

    init(_ text: String) {
        input = Array(text.unicodeScalars)
    }

    // MARK: Character predicates

    private static func isIdentifierCharacter(_ c: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(c) || ("A"..."Z").contains(c) || c == "-"
    }

    private static func isDigit(_ c: Unicode.Scalar) -> Bool { ("0"..."9").contains(c) }

    private static func isPrintable(_ c: Unicode.Scalar) -> Bool { (" "..."~").contains(c) }

    /// ASCII whitespace as the reference defines it: space, `\f`, `\n`, `\r`, `\t` (not `\v`).
    private static func isWhitespace(_ c: Unicode.Scalar) -> Bool {
        c == " " || c == "\u{0C}" || c == "\n" || c == "\r" || c == "\t"
    }

    private func skipWhitespace(from position: Int) -> Int {
        var position = position
        while position < input.count && Self.isWhitespace(input[position]) {
            position += 1
        }
        return position
    }

    private func excerpt(from position: Int) -> String {
        guard position < input.count else { return "end of input" }
        var text = String(String.UnicodeScalarView(input[position...].prefix(24)))
        if input.count - position > 24 { text += "…" }
        return "\"\(text)\""
    }

    private mutating func report(
        _ code: PasswordRulesDiagnostic.Code,
        _ consequence: PasswordRulesDiagnostic.Consequence,
        _ message: String,
        at offset: Int
    ) {
        diagnostics.append(.init(code: code, consequence: consequence, message: message, offset: offset))
    }

    // MARK: Rules

    /// Parses the whole string. `nil` means the reference parser gives up on the whole string.
    mutating func parseProperties() -> [Property]? {
        var properties: [Property] = []
        var position = skipWhitespace(from: 0)
        while position < input.count {
            guard Self.isIdentifierCharacter(input[position]) else {
                report(
                    .expectedPropertyName,
                    .remainderIgnored,
                    "expected a property name, found \(excerpt(from: position)); the rest is ignored",
                    at: position
                )
                return properties
            }
            let firstDiagnostic = diagnostics.count
            let (property, next) = parseProperty(at: position)
            position = skipWhitespace(from: next)
            if let property {
                properties.append(property)
            }
            if position >= input.count {
                break
            }
            if input[position] == ";" {
                position = skipWhitespace(from: position + 1)
                if position >= input.count {
                    return properties
                }
                continue
            }
            // The reference gives up on the whole string here. Problems already reported inside this
            // property were provisional ("property dropped"): promote them.
            var promoted = false
            for index in firstDiagnostic..<diagnostics.count where diagnostics[index].consequence == .propertyDropped {
                diagnostics[index].consequence = .ruleDiscarded
                promoted = true
            }
            if !promoted {
                report(
                    .expectedSeparator,
                    .ruleDiscarded,
                    "expected \";\" between properties, found \(excerpt(from: position))",
                    at: position
                )
            }
            return nil
        }
        return properties
    }

    /// One `name: value` property. A `nil` property means it was dropped (or is empty).
    private mutating func parseProperty(at start: Int) -> (Property?, Int) {
        let (identifier, afterName) = parseIdentifier(at: start)
        guard let name = PasswordRules.PropertyName(rawValue: identifier) else {
            report(
                .unknownProperty,
                .propertyDropped,
                "unknown property name \"\(identifier)\" (names are lower-case: required, allowed, "
                    + "max-consecutive, minlength, maxlength, max-repeating, max-sequential)",
                at: start
            )
            return (nil, start)
        }
        guard afterName < input.count else {
            report(
                .missingColon,
                .propertyDropped,
                "expected \":\" after \"\(identifier)\", found end of input",
                at: afterName
            )
            return (nil, afterName)
        }
        guard input[afterName] == ":" else {
            report(
                .missingColon,
                .propertyDropped,
                "expected \":\" right after \"\(identifier)\", found \(excerpt(from: afterName))",
                at: afterName
            )
            return (nil, afterName)
        }
        let valueStart = skipWhitespace(from: afterName + 1)
        if valueStart >= input.count || input[valueStart] == ";" {
            report(.emptyValue, .propertyDropped, "\"\(identifier)\" has no value", at: valueStart)
            return (nil, valueStart)
        }
        switch name {
        case .required, .allowed:
            let (classes, next) = parseClassList(at: valueStart)
            guard let classes else { return (nil, next) }
            if classes.isEmpty {
                // Apple keeps such a property with an empty value (`required: ;` in the display form);
                // generators ignore it.
                report(
                    .emptyValue,
                    .classDropped,
                    "\"\(identifier)\" is left with no character class; it has no effect",
                    at: valueStart
                )
            }
            return (Property(name: name, classes: classes), next)
        case .maxConsecutive, .maxRepeating, .maxSequential, .minLength, .maxLength:
            let (value, next) = parseInteger(at: valueStart)
            guard let value else { return (nil, next) }
            if value == 0 {
                report(.zeroValue, .propertyDropped, "\"\(identifier): 0\" is ignored", at: valueStart)
                return (nil, next)
            }
            return (Property(name: name, integer: value), next)
        }
    }

    private func parseIdentifier(at start: Int) -> (String, Int) {
        var position = start
        while position < input.count && Self.isIdentifierCharacter(input[position]) {
            position += 1
        }
        return (String(String.UnicodeScalarView(input[start..<position])), position)
    }

    // MARK: Values

    /// `class ( "," class )*`. `nil` when the value list is malformed.
    private mutating func parseClassList(at start: Int) -> ([CharacterClass]?, Int) {
        var classes: [CharacterClass] = []
        var position = start
        while true {
            let c = input[position]
            if Self.isIdentifierCharacter(c) {
                let identifierStart = position
                let (identifier, next) = parseIdentifier(at: position)
                guard let named = CharacterClass(identifier: identifier) else {
                    report(
                        .unknownCharacterClass,
                        .propertyDropped,
                        "unknown character class \"\(identifier)\" (use upper, lower, digit, special, "
                            + "ascii-printable, unicode or [...])",
                        at: identifierStart
                    )
                    return (nil, identifierStart)
                }
                classes.append(named)
                position = next
            } else if c == "[" {
                let (characters, next) = parseCustomClass(at: position)
                if let characters, !characters.isEmpty {
                    classes.append(.custom(characters))
                } else if let characters, characters.isEmpty {
                    report(.emptyCharacterClass, .classDropped, "empty character class", at: position)
                }
                position = next
            } else {
                report(
                    .expectedCharacterClass,
                    .propertyDropped,
                    "expected a character class, found \(excerpt(from: position))",
                    at: position
                )
                return (nil, position)
            }

            position = skipWhitespace(from: position)
            if position >= input.count || input[position] == ";" {
                break
            }
            if input[position] == "," {
                let comma = position
                position = skipWhitespace(from: position + 1)
                if position >= input.count {
                    report(.trailingComma, .propertyDropped, "a \",\" ends the input", at: comma)
                    return (nil, position)
                }
                continue
            }
            report(
                .expectedSeparator,
                .propertyDropped,
                "expected \",\" or \";\" after a character class, found \(excerpt(from: position))",
                at: position
            )
            return (nil, position)
        }
        return (classes, position)
    }

    /// `[...]`. Returns the characters as written (duplicates included), or `nil` when unterminated.
    private mutating func parseCustomClass(at start: Int) -> (String?, Int) {
        var position = start + 1
        guard position < input.count else {
            report(.unterminatedCharacterClass, .classDropped, "unterminated character class \"[\"", at: start)
            return (nil, position)
        }
        let first = position
        var characters = String.UnicodeScalarView()
        repeat {
            let c = input[position]
            if !Self.isPrintable(c) {
                report(
                    .nonPrintableCharacter,
                    .characterDropped,
                    "U+\(String(c.value, radix: 16, uppercase: true)) in a character class is not printable ASCII",
                    at: position
                )
                position += 1
                continue
            }
            if c == "-" && position > first {
                report(
                    .misplacedDash,
                    .characterDropped,
                    "a \"-\" may only appear as the first character of a character class",
                    at: position
                )
                position += 1
                continue
            }
            characters.append(c)
            position += 1
            if c == "]" {
                break
            }
        } while position < input.count

        // The loop consumed a "]". If another "]" follows, the first one is a literal member and the
        // second one closes the class; otherwise the "]" we consumed was the closing one.
        if (position < input.count && input[position] != "]")
            || (position == input.count && input[position - 1] == "]")
        {
            characters.removeLast()
            return (String(characters), position)
        }
        if position < input.count && input[position] == "]" {
            return (String(characters), position + 1)
        }
        report(.unterminatedCharacterClass, .classDropped, "unterminated character class", at: start)
        return (nil, position)
    }

    /// A decimal integer, directly followed by ";" or the end of input.
    private mutating func parseInteger(at start: Int) -> (Int?, Int) {
        guard Self.isDigit(input[start]) else {
            report(.notAnInteger, .propertyDropped, "expected a number, found \(excerpt(from: start))", at: start)
            return (nil, start)
        }
        var position = start
        var value = 0
        var overflowed = false
        repeat {
            let digit = Int(input[position].value - 48)
            let (times10, o1) = value.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(digit)
            if o1 || o2 {
                overflowed = true
                value = .max
            } else if !overflowed {
                value = sum
            }
            position += 1
        } while position < input.count && Self.isDigit(input[position])

        if position >= input.count || input[position] == ";" {
            if overflowed {
                report(.integerOverflow, .valueClamped, "number too large; using \(Int.max)", at: start)
            }
            return (value, position)
        }
        report(
            .notAnInteger,
            .propertyDropped,
            "a number must be followed directly by \";\" or the end, found \(excerpt(from: position))",
            at: position
        )
        return (nil, position)
    }
}
