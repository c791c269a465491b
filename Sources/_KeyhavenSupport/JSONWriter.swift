/// A minimal JSON object writer for the few documents made on every token request (id_token claims,
/// the token response): Foundation's `JSONEncoder` costs more than everything else but the RSA
/// signature. Keys are written in the order given; strings are escaped per RFC 8259 (`/` is not).
public struct JSONWriter {
    public private(set) var bytes: [UInt8] = [UInt8(ascii: "{")]
    private var first = true

    public init() {
        bytes.reserveCapacity(512)
    }

    public mutating func key(_ name: String) {
        if !first { bytes.append(UInt8(ascii: ",")) }
        first = false
        appendString(name)
        bytes.append(UInt8(ascii: ":"))
    }

    public mutating func string(_ name: String, _ value: String?) {
        guard let value else { return }
        key(name)
        appendString(value)
    }

    public mutating func integer(_ name: String, _ value: Int64?) {
        guard let value else { return }
        key(name)
        bytes.append(contentsOf: String(value).utf8)
    }

    public mutating func bool(_ name: String, _ value: Bool?) {
        guard let value else { return }
        key(name)
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
    }

    public func finished() -> [UInt8] { bytes + [UInt8(ascii: "}")] }

    static let hex = Array("0123456789abcdef".utf8)

    public mutating func appendString(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        // Most strings need no escape, and are copied whole (byte by byte, the id_token and its
        // response were the largest part of writing a token response).
        if text.utf8.allSatisfy({ $0 >= 0x20 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }) {
            bytes.append(contentsOf: text.utf8)
            bytes.append(UInt8(ascii: "\""))
            return
        }
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case UInt8(ascii: "\n"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case UInt8(ascii: "\r"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case UInt8(ascii: "\t"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0..<0x20:
                bytes.append(contentsOf: Array("\\u00".utf8))
                bytes.append(Self.hex[Int(byte >> 4)])
                bytes.append(Self.hex[Int(byte & 15)])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}

/// A value that writes its own JSON object (the hot path's documents).
public protocol JSONObjectWritable {
    func writeJSON(into writer: inout JSONWriter)
}

extension JSONObjectWritable {
    public var jsonBytes: [UInt8] {
        var writer = JSONWriter()
        writeJSON(into: &writer)
        return writer.finished()
    }
}
