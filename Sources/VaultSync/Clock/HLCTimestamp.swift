/// A hybrid logical clock reading: physical milliseconds, a counter, and the device that made it.
///
/// Stamps are totally ordered (physical time, then counter, then device), and no two writes share
/// one: a device's clock never repeats a reading, and two devices differ in ``device``. That is
/// what lets every replica pick the same "later" value of a field without talking to the others
/// (Kulkarni et al., "Logical Physical Clocks", 2014): the physical part keeps "later" close to
/// what a person means by later, the counter keeps causality when clocks are skewed — a write made
/// after seeing another is always stamped after it, whatever the device's wall clock says.
public struct HLCTimestamp: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Milliseconds since 1970 (the largest physical time seen, not necessarily this device's).
    public var physical: UInt64
    /// Orders events within one millisecond, and events after a clock that went backwards.
    public var counter: UInt32
    public var device: DeviceID

    public init(physical: UInt64, counter: UInt32, device: DeviceID) {
        self.physical = physical
        self.counter = counter
        self.device = device
    }

    public static func < (lhs: Self, rhs: Self) -> Bool {
        // Spelled out rather than as a tuple comparison: this runs in every sort and merge, and an
        // unoptimised build resolves tuple comparisons generically at run time.
        if lhs.physical != rhs.physical { return lhs.physical < rhs.physical }
        if lhs.counter != rhs.counter { return lhs.counter < rhs.counter }
        return lhs.device.rawValue < rhs.device.rawValue
    }

    /// `physical.counter@device`.
    public var description: String { "\(physical).\(counter)@\(device)" }
}
