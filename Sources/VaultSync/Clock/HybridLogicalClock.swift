/// One device's hybrid logical clock: the ``HLCTimestamp`` of its next write.
///
/// A plain value: the caller passes the wall-clock reading (`now`, milliseconds since 1970) into
/// every step, so the clock never reads the time itself, tests drive skewed and backward clocks
/// by hand, and a replica's state is one value to persist.
///
/// The two rules of the algorithm (Kulkarni et al. 2014, figure 5):
/// - ``send(now:)``, for a local event (a write): the reading is after both the wall clock and
///   every reading this clock made or received before.
/// - ``receive(_:now:)``, when a remote stamp arrives (a merged record): the clock moves past it,
///   so the next local write is stamped after everything this device has seen.
///
/// The counter is 32 bits; on the (theoretical) overflow the physical part moves one millisecond
/// ahead instead, which keeps readings strictly increasing.
public struct HybridLogicalClock: Hashable, Sendable {
    public let device: DeviceID
    /// The last reading made or received (physical 0 before the first).
    public private(set) var latest: HLCTimestamp

    public init(device: DeviceID, latest: HLCTimestamp? = nil) {
        self.device = device
        self.latest = HLCTimestamp(physical: latest?.physical ?? 0, counter: latest?.counter ?? 0, device: device)
    }

    /// The stamp of a local event at wall-clock time `now`: strictly after every earlier reading.
    public mutating func send(now: UInt64) -> HLCTimestamp {
        let physical = max(latest.physical, now)
        let counter = physical == latest.physical ? UInt64(latest.counter) + 1 : 0
        return advance(to: physical, counter: counter)
    }

    /// Moves the clock past `remote` (a stamp seen in a merged record) at wall-clock time `now`,
    /// and returns the new reading.
    @discardableResult
    public mutating func receive(_ remote: HLCTimestamp, now: UInt64) -> HLCTimestamp {
        let physical = max(latest.physical, remote.physical, now)
        let counter: UInt64
        switch (physical == latest.physical, physical == remote.physical) {
        case (true, true): counter = UInt64(max(latest.counter, remote.counter)) + 1
        case (true, false): counter = UInt64(latest.counter) + 1
        case (false, true): counter = UInt64(remote.counter) + 1
        case (false, false): counter = 0
        }
        return advance(to: physical, counter: counter)
    }

    private mutating func advance(to physical: UInt64, counter: UInt64) -> HLCTimestamp {
        latest =
            counter > UInt64(UInt32.max)
            ? HLCTimestamp(physical: physical + 1, counter: 0, device: device)
            : HLCTimestamp(physical: physical, counter: UInt32(counter), device: device)
        return latest
    }
}
