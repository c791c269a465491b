import _KeyhavenSupport

/// The body of a range response: `SUFFIX:COUNT` lines, 35 upper-case hex digits each.
public enum RangeBody {
    /// Parses a body (CRLF or LF, either case), dropping padding rows (count 0) and lines that do not
    /// parse. Keys are upper-case suffixes.
    public static func parse(_ body: [UInt8]) -> [String: Int] {
        var result: [String: Int] = [:]
        for line in body.split(separator: UInt8(ascii: "\n")) {
            var text = line[...]
            if text.last == UInt8(ascii: "\r") { text = text.dropLast() }
            guard let colon = text.firstIndex(of: UInt8(ascii: ":")), colon - text.startIndex == 35 else { continue }
            let suffix = String(decoding: text[text.startIndex..<colon], as: UTF8.self).uppercased()
            guard suffix.utf8.allSatisfy({ Hex.value($0) != nil }) else { continue }
            var count = 0
            var valid = colon + 1 < text.endIndex
            for digit in text[(colon + 1)...] {
                guard digit >= UInt8(ascii: "0") && digit <= UInt8(ascii: "9") else {
                    valid = false
                    break
                }
                count = min(count * 10 + Int(digit - UInt8(ascii: "0")), Int(Int32.max))
            }
            if valid && count > 0 {
                result[suffix] = count
            }
        }
        return result
    }

    /// Formats rows as the public API does: upper-case suffixes in order, `SUFFIX:COUNT`, CRLF
    /// between lines (none after the last).
    public static func format(_ rows: [(suffix: String, count: Int)]) -> [UInt8] {
        var body: [UInt8] = []
        body.reserveCapacity(rows.count * 42)
        for (index, row) in rows.enumerated() {
            if index > 0 { body.append(contentsOf: [13, 10]) }
            body.append(contentsOf: row.suffix.utf8)
            body.append(UInt8(ascii: ":"))
            body.append(contentsOf: String(row.count).utf8)
        }
        return body
    }

    /// Parses a 5-hex-digit prefix (either case) to its 20-bit value.
    public static func prefixValue(_ text: some StringProtocol) -> UInt32? {
        let bytes = Array(text.utf8)
        guard bytes.count == 5 else { return nil }
        var value: UInt32 = 0
        for byte in bytes {
            guard let digit = Hex.value(byte) else { return nil }
            value = value << 4 | UInt32(digit)
        }
        return value
    }
}
