import Foundation

/// Base64url without padding (RFC 7515 §2), strict on input: only the URL-safe alphabet, no `=`,
/// no whitespace, and no length that cannot come from whole bytes.
public enum Base64URL {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Table-driven (token signing encodes on every request; Foundation's base64 plus three
    /// replacements costs several times more).
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        let input = Array(bytes)
        let count = (input.count * 4 + 2) / 3
        return String(unsafeUninitializedCapacity: count) { output in
            var out = 0
            var index = 0
            while index + 3 <= input.count {
                let value = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
                output[out] = alphabet[Int(value >> 18 & 63)]
                output[out + 1] = alphabet[Int(value >> 12 & 63)]
                output[out + 2] = alphabet[Int(value >> 6 & 63)]
                output[out + 3] = alphabet[Int(value & 63)]
                out += 4
                index += 3
            }
            let rest = input.count - index
            if rest > 0 {
                let value = UInt32(input[index]) << 16 | (rest == 2 ? UInt32(input[index + 1]) << 8 : 0)
                output[out] = alphabet[Int(value >> 18 & 63)]
                output[out + 1] = alphabet[Int(value >> 12 & 63)]
                out += 2
                if rest == 2 {
                    output[out] = alphabet[Int(value >> 6 & 63)]
                    out += 1
                }
            }
            return out
        }
    }

    public static func encode(_ string: String) -> String { encode(Array(string.utf8)) }

    /// The bytes, or nil for anything that is not canonical unpadded base64url.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        guard text.utf8.count % 4 != 1 else { return nil }
        var standard = ""
        standard.reserveCapacity(text.utf8.count + 3)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "A"..."Z", "a"..."z", "0"..."9": standard.unicodeScalars.append(scalar)
            case "-": standard.append("+")
            case "_": standard.append("/")
            default: return nil
            }
        }
        while standard.utf8.count % 4 != 0 { standard.append("=") }
        guard let data = Data(base64Encoded: standard) else { return nil }
        let bytes = [UInt8](data)
        // Reject non-canonical trailing bits ("AB" and "AC" must not both decode to the same byte).
        guard encode(bytes) == text else { return nil }
        return bytes
    }
}
