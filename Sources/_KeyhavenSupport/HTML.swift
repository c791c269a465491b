/// A piece of HTML that escapes by default: interpolating a `String` (or anything printable)
/// escapes it; only another `HTML` value is inserted as markup. Every page Keyhaven serves (the
/// provider's, shiny's) is built from these, so a forgotten escape cannot happen.
///
/// ```swift
/// let page: HTML = "<p>Hello, \(name)</p>"          // name is escaped
/// let list: HTML = "<ul>\(items.map { HTML("<li>\($0)</li>") }.joined())</ul>"
/// ```
public struct HTML: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringInterpolation {
    /// The markup.
    public private(set) var rendered: String

    /// Markup taken as it is (a trusted constant, or the output of other `HTML` values).
    public init(unsafeRaw markup: String) { rendered = markup }

    public init(stringLiteral value: String) { rendered = value }

    public init(stringInterpolation: Interpolation) { rendered = stringInterpolation.rendered }

    public var description: String { rendered }

    public struct Interpolation: StringInterpolationProtocol {
        var rendered = ""

        public init(literalCapacity: Int, interpolationCount: Int) {
            rendered.reserveCapacity(literalCapacity + interpolationCount * 16)
        }

        public mutating func appendLiteral(_ literal: String) { rendered += literal }

        /// Markup: inserted as it is.
        public mutating func appendInterpolation(_ html: HTML) { rendered += html.rendered }

        /// Text: escaped.
        public mutating func appendInterpolation(_ text: some StringProtocol) { rendered += HTML.escape(text) }

        /// Anything else printable: its description, escaped.
        public mutating func appendInterpolation(_ value: some CustomStringConvertible) {
            rendered += HTML.escape(value.description)
        }

        /// Optional text: escaped, nothing for nil.
        public mutating func appendInterpolation(_ text: String?) { rendered += text.map(HTML.escape) ?? "" }
    }

    /// `&`, `<`, `>`, `"` and `'` as character references (safe in text and in quoted attributes).
    /// Works on UTF-8 bytes (the five are ASCII, and no UTF-8 sequence contains an ASCII byte), and
    /// returns text without them unchanged: pages of thousands of rows stay fast.
    public static func escape(_ text: some StringProtocol) -> String {
        let utf8 = text.utf8
        guard utf8.contains(where: { $0 == 0x26 || $0 == 0x3C || $0 == 0x3E || $0 == 0x22 || $0 == 0x27 }) else {
            return String(text)
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count + 16)
        for byte in utf8 {
            switch byte {
            case 0x26: bytes += Array("&amp;".utf8)
            case 0x3C: bytes += Array("&lt;".utf8)
            case 0x3E: bytes += Array("&gt;".utf8)
            case 0x22: bytes += Array("&quot;".utf8)
            case 0x27: bytes += Array("&#39;".utf8)
            default: bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension Sequence<HTML> {
    /// The pieces one after another.
    public func joined(separator: HTML = "") -> HTML {
        HTML(unsafeRaw: map(\.rendered).joined(separator: separator.rendered))
    }
}
