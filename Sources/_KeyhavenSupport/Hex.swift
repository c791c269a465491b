/// Lower-case hexadecimal, table-driven (digests and random tokens are encoded on hot paths).
public enum Hex {
    /// The sixteen digits, lower case.
    public static let digits = Array("0123456789abcdef".utf8)
    /// The sixteen digits, upper case (Pwned Passwords' form).
    public static let upperDigits = Array("0123456789ABCDEF".utf8)

    /// Two hex digits per byte, lower case unless `uppercase`.
    public static func encode(_ bytes: some Sequence<UInt8>, uppercase: Bool = false) -> String {
        let table = uppercase ? upperDigits : digits
        var result: [UInt8] = []
        result.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            result.append(table[Int(byte >> 4)])
            result.append(table[Int(byte & 15)])
        }
        return String(decoding: result, as: UTF8.self)
    }

    /// The bytes of an even-length hex string (either case); nil for anything else.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        decode(utf8: Array(text.utf8)[...])
    }

    /// ``decode(_:)`` on UTF-8 bytes (no string made: index builds parse millions of these).
    @inlinable
    public static func decode(utf8: ArraySlice<UInt8>) -> [UInt8]? {
        guard utf8.count % 2 == 0 else { return nil }
        var result = [UInt8](repeating: 0, count: utf8.count / 2)
        var index = utf8.startIndex
        var position = 0
        while index < utf8.endIndex {
            guard let high = value(utf8[index]), let low = value(utf8[index + 1]) else { return nil }
            result[position] = high << 4 | low
            position += 1
            index += 2
        }
        return result
    }

    /// The value of one hex digit, either case.
    @inlinable @inline(__always)
    public static func value(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
