import Foundation

/// `application/x-www-form-urlencoded`, the body of every Sign in with Apple POST.
public enum FormURLEncoding {
    /// The fields in order (`+` is a space; percent-escapes decoded). Malformed escapes keep their text.
    public static func parse(_ body: String) -> [(name: String, value: String)] {
        guard !body.isEmpty else { return [] }
        return body.split(separator: "&", omittingEmptySubsequences: true).map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = decode(parts[0])
            let value = parts.count > 1 ? decode(parts[1]) : ""
            return (name, value)
        }
    }

    /// The fields as a dictionary; nil when a field appears twice (`invalid_request` at Apple).
    public static func uniqueFields(_ body: String) -> [String: String]? {
        var result: [String: String] = [:]
        for (name, value) in parse(body) {
            guard result[name] == nil else { return nil }
            result[name] = value
        }
        return result
    }

    public static func encode(_ fields: [(String, String)]) -> String {
        fields.map { escape($0.0) + "=" + escape($0.1) }.joined(separator: "&")
    }

    static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
    )

    public static func escape(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }

    /// `+` → space, `%XX` → the byte; a `%` not followed by two hex digits stays as it is. Works on
    /// UTF-8 bytes (Foundation's string replacing and percent-decoding cost more than the rest of
    /// a token request together); invalid UTF-8 becomes U+FFFD.
    static func decode(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = Array(text.utf8)[...]
        while let byte = iterator.popFirst() {
            switch byte {
            case UInt8(ascii: "+"):
                bytes.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                if iterator.count >= 2, let high = Hex.value(iterator[iterator.startIndex]),
                    let low = Hex.value(iterator[iterator.startIndex + 1])
                {
                    bytes.append(high << 4 | low)
                    iterator.removeFirst(2)
                } else {
                    bytes.append(byte)
                }
            default:
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

}
