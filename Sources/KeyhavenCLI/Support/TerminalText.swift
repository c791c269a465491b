import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Text from elsewhere — a service's failure reason or page URL, an imported title — made safe to
/// print on a terminal (security review Low #20): C0 and C1 control characters other than newline
/// and tab, DEL, and the bidirectional overrides that reorder what is shown are replaced by a
/// visible `\u{…}` form, so no escape sequence can move the cursor, rewrite earlier lines, retitle
/// the window or hide text.
enum TerminalText {
    static func neutralised(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isUnsafe) else { return text }
        var result = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if isUnsafe(scalar) {
                result.append(contentsOf: "\\u{\(String(scalar.value, radix: 16, uppercase: true))}".unicodeScalars)
            } else {
                result.append(scalar)
            }
        }
        return String(result)
    }

    static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09, 0x0A: false
        case 0x00...0x1F, 0x7F...0x9F: true
        case 0x202A...0x202E, 0x2066...0x2069: true  // bidi embeddings, overrides, isolates
        default: false
        }
    }

    /// Whether standard output is a terminal (then what is printed there is neutralised too).
    static let standardOutputIsTerminal = isatty(1) == 1
}

/// Every `print` of the commands comes here (this shadows `Swift.print` inside KeyhavenCLI) and goes
/// to the current ``CommandIO``: on a terminal, text is neutralised (``TerminalText``); piped
/// output (JSON, `show --password`) and in-process runs are left byte-exact. Standard error is
/// always neutralised (``Output/error(_:)``).
func print(_ items: Any..., separator: String = " ", terminator: String = "\n") {
    let text = items.map { "\($0)" }.joined(separator: separator)
    let io = CommandIO.current
    let shown = io.isProcess && TerminalText.standardOutputIsTerminal ? TerminalText.neutralised(text) : text
    io.writeOutput(Data((shown + terminator).utf8))
}
