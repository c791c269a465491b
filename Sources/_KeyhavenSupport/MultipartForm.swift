import Foundation

/// A `multipart/form-data` body (RFC 7578) as a file-upload form sends it (the web app's import):
/// its parts' names, file names and bytes. Strict and bounded: a malformed body is refused as a
/// whole, and at most ``maximumParts`` parts are read.
public struct MultipartForm: Sendable, Equatable {
    public struct Part: Sendable, Equatable {
        public var name: String
        public var fileName: String?
        public var body: [UInt8]

        public init(name: String, fileName: String? = nil, body: [UInt8]) {
            self.name = name
            self.fileName = fileName
            self.body = body
        }
    }

    public static let maximumParts = 32

    public var parts: [Part]

    public init(parts: [Part]) { self.parts = parts }

    /// The first part called `name`.
    public subscript(name: String) -> Part? { parts.first { $0.name == name } }

    /// The text of the first part called `name`.
    public func text(_ name: String) -> String? { self[name].map { String(decoding: $0.body, as: UTF8.self) } }

    /// The body as a browser would send it (names and file names quoted; they must not contain `"`,
    /// CR or LF, and no body may contain the delimiter).
    public func serialized(boundary: String) -> [UInt8] {
        var out: [UInt8] = []
        for part in parts {
            var header = "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(part.name)\""
            if let fileName = part.fileName { header += "; filename=\"\(fileName)\"" }
            out += Array((header + "\r\n\r\n").utf8) + part.body + Array("\r\n".utf8)
        }
        return out + Array("--\(boundary)--\r\n".utf8)
    }

    /// The boundary of a `Content-Type: multipart/form-data; boundary=…` header.
    public static func boundary(contentType: String?) -> String? {
        guard let contentType, contentType.lowercased().hasPrefix("multipart/form-data") else { return nil }
        for parameter in contentType.split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2, pair[0].lowercased() == "boundary" else { continue }
            var value = pair[1]
            if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 {
                value = String(value.dropFirst().dropLast())
            }
            // RFC 2046: 1 to 70 characters.
            return (1...70).contains(value.utf8.count) ? value : nil
        }
        return nil
    }

    /// Parses `body`; nil when it is not a well-formed multipart body with this boundary.
    public static func parse(_ body: [UInt8], boundary: String) -> MultipartForm? {
        let delimiter = Array("--\(boundary)".utf8)
        let separator = Array("\r\n--\(boundary)".utf8)
        guard body.starts(with: delimiter) else { return nil }
        var position = delimiter.count
        var parts: [Part] = []
        while true {
            // After a delimiter: "--" ends the body, CRLF starts a part.
            if body[position...].starts(with: Array("--".utf8)) { return MultipartForm(parts: parts) }
            guard body[position...].starts(with: [13, 10]) else { return nil }
            position += 2
            guard let headerEnd = find([13, 10, 13, 10], in: body, from: position) else { return nil }
            let headerText = String(decoding: body[position..<headerEnd], as: UTF8.self)
            guard let (name, fileName) = disposition(headerText) else { return nil }
            let start = headerEnd + 4
            guard let end = find(separator, in: body, from: start) else { return nil }
            parts.append(Part(name: name, fileName: fileName, body: Array(body[start..<end])))
            position = end + separator.count
            guard parts.count <= maximumParts else { return nil }
        }
    }

    /// The `name` and `filename` of a part's `Content-Disposition: form-data` header.
    static func disposition(_ headers: String) -> (String, String?)? {
        for line in headers.split(separator: "\r\n") {
            let pair = line.split(separator: ":", maxSplits: 1)
            guard pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces).lowercased() == "content-disposition"
            else { continue }
            var name: String?
            var fileName: String?
            for parameter in pair[1].split(separator: ";").dropFirst() {
                let item = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                guard item.count == 2 else { continue }
                var value = item[1]
                if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 {
                    value = String(value.dropFirst().dropLast())
                }
                switch item[0].lowercased() {
                case "name": name = value
                case "filename": fileName = value
                default: break
                }
            }
            return name.map { ($0, fileName) }
        }
        return nil
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard !needle.isEmpty, haystack.count >= needle.count, start <= haystack.count - needle.count else {
            return nil
        }
        let first = needle[0]
        var index = start
        let last = haystack.count - needle.count
        while index <= last {
            if haystack[index] == first && haystack[index..<(index + needle.count)].elementsEqual(needle) {
                return index
            }
            index += 1
        }
        return nil
    }
}
