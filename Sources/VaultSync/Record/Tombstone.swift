/// A deletion, and what the deleting device had seen of the item when it deleted it.
///
/// The item stays deleted only while every write in it was seen by a deletion: a write the
/// deleting device had not seen — an edit made offline on another device, even one stamped
/// earlier by a slow clock — brings the item back with that edit ("delete versus edit keeps the
/// edit"). What was seen is a version vector (per device, its latest write the deleter had), which
/// is exact because a device's writes to an item travel together: a record carrying a device's
/// write carries all of that device's earlier writes to the item too.
///
/// Two tombstones merge by taking, per device, the later of the two, and the later stamp: the
/// union of what both deletions saw. That merge is commutative, associative and idempotent, so
/// replicas agree whether an item is deleted whatever order they merged in.
public struct Tombstone: Hashable, Sendable {
    /// When the (latest) deletion was made.
    public var stamp: HLCTimestamp
    /// Per device, the latest of its writes to the item that a deletion had seen.
    public var observed: [DeviceID: HLCTimestamp]

    public init(stamp: HLCTimestamp, observed: [DeviceID: HLCTimestamp]) {
        self.stamp = stamp
        self.observed = observed
    }

    /// Whether a deletion had seen the write stamped `stamp`.
    public func covers(_ stamp: HLCTimestamp) -> Bool {
        guard let seen = observed[stamp.device] else { return false }
        return stamp <= seen
    }

    /// What both deletions saw.
    public func joined(with other: Tombstone) -> Tombstone {
        Tombstone(stamp: max(stamp, other.stamp), observed: observed.merging(other.observed) { max($0, $1) })
    }
}
