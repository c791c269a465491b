import _KeyhavenSupport

/// An item's identity across every device and the server: 128 random bits, chosen by the device
/// that creates the item. Random, not a counter, so devices create items offline without asking
/// anyone; it is also bound into each item's ciphertext (``ItemSealer``), so the server cannot
/// answer one item's request with another's.
public struct ItemID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let high: UInt64
    public let low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// A new item's id, from the injected `generator` (the system's in production).
    public init(using generator: inout some RandomNumberGenerator) {
        self.init(high: generator.next(), low: generator.next())
    }

    /// The 16 bytes, big-endian (what the canonical encoding and associated data carry).
    public var bytes: [UInt8] {
        (0..<16).map { index in
            UInt8(truncatingIfNeeded: (index < 8 ? high : low) >> (56 - 8 * UInt64(index % 8)))
        }
    }

    public static func < (lhs: Self, rhs: Self) -> Bool {
        lhs.high != rhs.high ? lhs.high < rhs.high : lhs.low < rhs.low
    }

    /// 32 hex digits.
    public var description: String { Hex.encode(bytes) }
}

extension ItemID {
    /// The item whose ``bytes`` are `bytes` (16 of them), else nil.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        let high = bytes[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let low = bytes[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        self.init(high: high, low: low)
    }

    /// The item whose ``description`` is `hex` (32 hex digits), else nil.
    public init?(hex: some StringProtocol) {
        guard hex.utf8.count == 32, let bytes = Hex.decode(hex) else { return nil }
        self.init(bytes: bytes)
    }
}
