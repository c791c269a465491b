import Foundation

/// `application/x-www-form-urlencoded`, the body of every Sign in with Apple POST.
public enum FormURLEncoding {
    /// The fields in order (`+` is a space; percent-escapes decoded). Malformed escapes keep their text.
    /// Splits the UTF-8 bytes at `&` and the first `=`, as browsers do (splitting the `String`
    /// went character by character, the largest part of reading a token request's form).
    public static func parse(_ body: String) -> [(name: String, value: String)] {
        var fields: [(name: String, value: String)] = []
        var body = body
        body.withUTF8 { bytes in
            for pair in bytes.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
                if let equals = pair.firstIndex(of: UInt8(ascii: "=")) {
                    fields.append((decode(pair[..<equals]), decode(pair[(equals + 1)...])))
                } else {
                    fields.append((decode(pair), ""))
                }
            }
        }
        return fields
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
    static func decode(_ text: Slice<UnsafeBufferPointer<UInt8>>) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.count)
        var index = text.startIndex
        while index < text.endIndex {
            let byte = text[index]
            index += 1
            switch byte {
            case UInt8(ascii: "+"):
                bytes.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                if text.endIndex - index >= 2, let high = Hex.value(text[index]), let low = Hex.value(text[index + 1]) {
                    bytes.append(high << 4 | low)
                    index += 2
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
