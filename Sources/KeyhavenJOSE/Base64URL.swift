import Foundation

/// Base64url without padding (RFC 7515 §2), strict on input: only the URL-safe alphabet, no `=`,
/// no whitespace, and no length that cannot come from whole bytes.
public enum Base64URL {
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
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
