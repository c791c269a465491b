import _KeyhavenSupport

/// A vault's identity, bound into every sealed item: 128 random bits.
public struct VaultID: Hashable, Sendable, CustomStringConvertible {
    public let bytes: [UInt8]

    public init(using generator: inout some RandomNumberGenerator) {
        bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    /// The vault whose ``bytes`` are `bytes` (16 of them), else nil: a vault id read back from
    /// where a device keeps it.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// 32 hex digits.
    public var description: String { Hex.encode(bytes) }
}
