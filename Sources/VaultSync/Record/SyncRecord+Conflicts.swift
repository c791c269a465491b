/// A value that lost a conflict: written on one device while another device wrote the same field
/// without seeing it. The later one is current, this one waits in history for the person.
public struct FieldConflict: Hashable, Sendable {
    public var field: FieldKey
    /// The field's current version (the conflict's later write, or what came after it).
    public var current: FieldVersion
    /// The version that lost.
    public var other: FieldVersion
}

extension SyncRecord {
    /// The conflict marks: every version in history that no later write of its field was made on
    /// top of — a value someone overwrote without having seen it.
    ///
    /// Derived from the versions' parents rather than stored as a flag, so the mark cannot differ
    /// between replicas (it is a function of the merged record) and needs no merge of its own; a
    /// plain edit makes its predecessor a parent, so password history and earlier titles are never
    /// marked. ``resolveConflicts(in:keeping:stamp:)`` clears a field's marks.
    public var conflicts: [FieldConflict] {
        var found: [FieldConflict] = []
        for field in history.keys.sorted() {
            guard let current = fields[field], let earlier = history[field] else { continue }
            var descended: Set<HLCTimestamp> = Set(current.parents)
            for version in earlier.values { descended.formUnion(version.parents) }
            for version in earlier.values.sorted(by: { $0.stamp < $1.stamp }) where !descended.contains(version.stamp) {
                found.append(FieldConflict(field: field, current: current, other: version))
            }
        }
        return found
    }

    /// The person's answer to the conflicts of `field`: `value` (the current one, the other one, or
    /// a new one) becomes current, written on top of the current version and of every version that
    /// lost, which clears their marks on every replica once merged.
    ///
    /// `stamp` is a fresh ``HybridLogicalClock/send(now:)`` reading.
    public mutating func resolveConflicts(in field: FieldKey, keeping value: FieldValue, stamp: HLCTimestamp) {
        let losers = conflicts.filter { $0.field == field }.map(\.other.stamp)
        guard let current = fields[field], !losers.isEmpty else { return }
        insert(FieldVersion(value: value, stamp: stamp, parents: [current.stamp] + losers), for: field)
    }
}
