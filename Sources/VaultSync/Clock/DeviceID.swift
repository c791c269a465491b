import _KeyhavenSupport

/// A device's identity in sync: 64 random bits, chosen once when the device joins a vault.
///
/// Why 64 bits and not a UUID: it is part of every field's stamp (``HLCTimestamp``), so it is
/// paid once per field of every item; among the handful of devices of one vault a collision of
/// 64 random bits is out of reach. It only breaks ties between equal clock readings.
public struct DeviceID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64

    public init(_ rawValue: UInt64) {
        self.rawValue = rawValue
    }

    /// A new device's identity, from the injected `generator` (the system's in production).
    public init(using generator: inout some RandomNumberGenerator) {
        self.init(generator.next())
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    /// 16 hex digits.
    public var description: String {
        Hex.encode((0..<8).map { UInt8(truncatingIfNeeded: rawValue >> (56 - 8 * $0)) })
    }
}
