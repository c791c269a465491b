import Crypto
import _KeyhavenSupport

/// A SHA-1 digest, the key of the Pwned Passwords corpus.
public struct SHA1Digest: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The 20 bytes, big-endian as in the hex form.
    public let bytes: [UInt8]

    public init?(bytes: [UInt8]) {
        guard bytes.count == 20 else { return nil }
        self.bytes = bytes
    }

    /// SHA-1 of the password's UTF-8 bytes, as HIBP computes it.
    public init(password: String) {
        bytes = Array(Insecure.SHA1.hash(data: Array(password.utf8)))
    }

    /// Parses 40 hexadecimal digits, either case.
    public init?(hex: some StringProtocol) {
        guard let bytes = Self.parseHex(Array(hex.utf8)[...]) else { return nil }
        self.bytes = bytes
    }

    static func parseHex(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        guard text.count == 40 else { return nil }
        return Hex.decode(utf8: text)
    }

    /// 40 upper-case hex digits.
    public var hex: String { Hex.encode(bytes, uppercase: true) }

    public var description: String { hex }

    /// The first five hex digits: all that the range API ever sends.
    public var prefix: String { String(hex.prefix(5)) }

    /// The 35 hex digits after the prefix, as range responses list them.
    public var suffix: String { String(hex.dropFirst(5)) }

    /// The first 64 bits, big-endian.
    public var high64: UInt64 {
        bytes[0..<8].reduce(0) { $0 << 8 | UInt64($1) }
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.bytes.lexicographicallyPrecedes(rhs.bytes) }
}
