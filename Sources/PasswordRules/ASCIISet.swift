/// A set of ASCII characters (U+0000–U+007F) stored as a 128-bit mask.
///
/// Character classes in the password-rules language only ever hold printable ASCII, so a bit set is
/// both the fastest representation and the one that makes canonical ordering trivial (iterate the bits).
public struct ASCIISet: Hashable, Sendable {
    @usableFromInline var low: UInt64
    @usableFromInline var high: UInt64

    @inlinable
    public init() {
        low = 0
        high = 0
    }

    /// A set holding every ASCII character of `characters`; non-ASCII characters are ignored.
    public init(_ characters: some StringProtocol) {
        self.init()
        for scalar in characters.unicodeScalars where scalar.isASCII {
            insert(UInt8(scalar.value))
        }
    }

    /// A set holding every byte in `range` (all must be below 128).
    public init(_ range: ClosedRange<UInt8>) {
        self.init()
        for byte in range {
            insert(byte)
        }
    }

    @inlinable
    public func contains(_ byte: UInt8) -> Bool {
        guard byte < 128 else { return false }
        return byte < 64 ? (low >> UInt64(byte)) & 1 == 1 : (high >> UInt64(byte - 64)) & 1 == 1
    }

    /// Whether `scalar` is an ASCII character in this set.
    @inlinable
    public func contains(_ scalar: Unicode.Scalar) -> Bool {
        scalar.isASCII && contains(UInt8(scalar.value))
    }

    @inlinable
    public mutating func insert(_ byte: UInt8) {
        precondition(byte < 128, "ASCIISet holds ASCII only")
        if byte < 64 {
            low |= 1 << UInt64(byte)
        } else {
            high |= 1 << UInt64(byte - 64)
        }
    }

    @inlinable
    public mutating func remove(_ byte: UInt8) {
        guard byte < 128 else { return }
        if byte < 64 {
            low &= ~(1 << UInt64(byte))
        } else {
            high &= ~(1 << UInt64(byte - 64))
        }
    }

    @inlinable
    public var count: Int { low.nonzeroBitCount + high.nonzeroBitCount }

    @inlinable
    public var isEmpty: Bool { low == 0 && high == 0 }

    @inlinable
    public func union(_ other: ASCIISet) -> ASCIISet {
        var result = self
        result.formUnion(other)
        return result
    }

    @inlinable
    public mutating func formUnion(_ other: ASCIISet) {
        low |= other.low
        high |= other.high
    }

    @inlinable
    public func intersection(_ other: ASCIISet) -> ASCIISet {
        var result = ASCIISet()
        result.low = low & other.low
        result.high = high & other.high
        return result
    }

    @inlinable
    public func subtracting(_ other: ASCIISet) -> ASCIISet {
        var result = ASCIISet()
        result.low = low & ~other.low
        result.high = high & ~other.high
        return result
    }

    @inlinable
    public func isSuperset(of other: ASCIISet) -> Bool {
        other.low & ~low == 0 && other.high & ~high == 0
    }

    @inlinable
    public func isDisjoint(with other: ASCIISet) -> Bool {
        low & other.low == 0 && high & other.high == 0
    }

    /// The members in ascending ASCII order.
    public var bytes: [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(count)
        for byte in UInt8(0)..<128 where contains(byte) {
            result.append(byte)
        }
        return result
    }

    /// The members as a string, in ascending ASCII order.
    public var string: String { String(decoding: bytes, as: UTF8.self) }
}

extension ASCIISet {
    /// `A`–`Z`.
    public static let upper = ASCIISet(UInt8(ascii: "A")...UInt8(ascii: "Z"))
    /// `a`–`z`.
    public static let lower = ASCIISet(UInt8(ascii: "a")...UInt8(ascii: "z"))
    /// `0`–`9`.
    public static let digits = ASCIISet(UInt8(ascii: "0")...UInt8(ascii: "9"))
    /// The 33 printable ASCII characters that are neither letters nor digits, space included.
    public static let special = ASCIISet(0x20...0x7E).subtracting(upper).subtracting(lower).subtracting(digits)
    /// U+0020–U+007E: every printable ASCII character, space included (95 characters).
    public static let asciiPrintable = ASCIISet(0x20...0x7E)
    /// Apple's "unambiguous" alphabet: letters and digits without `l` and `O`.
    public static let unambiguous = ASCIISet("abcdefghijkmnopqrstuvwxyzABCDEFGHIJKLMNPQRSTUVWXYZ0123456789")
}
