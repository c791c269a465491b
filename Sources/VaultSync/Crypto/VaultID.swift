import _KeyhavenSupport

/// A vault's identity, bound into every sealed item: 128 random bits.
public struct VaultID: Hashable, Sendable, CustomStringConvertible {
    public let bytes: [UInt8]

    public init(using generator: inout some RandomNumberGenerator) {
        bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    /// 32 hex digits.
    public var description: String { Hex.encode(bytes) }
}
