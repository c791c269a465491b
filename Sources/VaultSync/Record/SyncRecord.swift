/// One item as sync sees it: a set of fields, each with the stamp of its last write, every
/// earlier value of every field, and a tombstone if it was deleted.
///
/// A record only ever grows: a write adds a version (the one it replaces moves to ``history``), a
/// deletion adds or widens the tombstone, and a merge (``merged(with:)``) is the union of two
/// records. Nothing a device committed is ever dropped, which is what "sync never loses an offline
/// edit" rests on; the current value of a field is simply its latest version by stamp. Because the
/// union of sets and the maximum of stamps do not care about order, merging is commutative,
/// associative and idempotent, and replicas that have seen the same writes hold byte-identical
/// records (``canonicalBytes``), whoever merged with whom and in what order. Two records are `==`
/// exactly when their canonical bytes are (field names and values compare by their UTF-8 bytes).
///
/// ```swift
/// var clock = HybridLogicalClock(device: device)
/// var record = SyncRecord(id: id)
/// record.set(.title, to: .text("Mail"), stamp: clock.send(now: nowMilliseconds))
/// record.set(.password, to: .text(newPassword), stamp: clock.send(now: nowMilliseconds))
/// let converged = try record.merged(with: fromServer)
/// ```
public struct SyncRecord: Hashable, Sendable {
    public let id: ItemID
    /// The current version of each field written so far: its latest by stamp.
    public internal(set) var fields: [FieldKey: FieldVersion]
    /// Every other version of each field, by stamp: the password history, earlier titles and
    /// folders, and values that lost a conflict (``conflicts``). Never dropped.
    public internal(set) var history: [FieldKey: [HLCTimestamp: FieldVersion]]
    /// The deletions (merged), if the item was ever deleted; ``isDeleted`` says whether it still is.
    public internal(set) var tombstone: Tombstone?

    /// An item with no field yet.
    public init(id: ItemID) {
        self.init(id: id, fields: [:], history: [:], tombstone: nil)
    }

    init(
        id: ItemID,
        fields: [FieldKey: FieldVersion],
        history: [FieldKey: [HLCTimestamp: FieldVersion]],
        tombstone: Tombstone?
    ) {
        self.id = id
        self.fields = fields
        self.history = history
        self.tombstone = tombstone
    }

    /// A new item whose fields are `values`, all written at `stamp`.
    public static func created(id: ItemID, values: [FieldKey: FieldValue], stamp: HLCTimestamp) -> SyncRecord {
        var record = SyncRecord(id: id)
        for (field, value) in values { record.insert(FieldVersion(value: value, stamp: stamp), for: field) }
        return record
    }

    /// The current value of `field` (``FieldValue/absent`` if never written).
    public subscript(field: FieldKey) -> FieldValue { fields[field]?.value ?? .absent }

    /// Whether the item is deleted: it has a tombstone and every write in it was seen by a
    /// deletion (see ``Tombstone``).
    public var isDeleted: Bool {
        guard let tombstone else { return false }
        return allVersions.allSatisfy { tombstone.covers($0.stamp) }
    }

    /// Every version of `field`, the current one last, in stamp order.
    public func versions(of field: FieldKey) -> [FieldVersion] {
        let earlier = (history[field] ?? [:]).values.sorted { $0.stamp < $1.stamp }
        return earlier + (fields[field].map { [$0] } ?? [])
    }

    /// The latest stamp anywhere in the record (fields, history, tombstone): what a device's clock
    /// must move past after merging it, so its next write is stamped after everything it has seen.
    public var latestStamp: HLCTimestamp? {
        let latestWrite = fields.values.lazy.map(\.stamp).max()
        return [latestWrite, tombstone?.stamp].compactMap { $0 }.max()
    }

    /// Writes `value` to `field` at `stamp`, on top of the field's current version; the current one
    /// moves to ``history``. Returns false, writing nothing, when the field already holds `value`.
    ///
    /// `stamp` comes from the writing device's ``HybridLogicalClock/send(now:)`` after it has
    /// received every stamp of this record, so it is later than the version it replaces.
    @discardableResult
    public mutating func set(_ field: FieldKey, to value: FieldValue, stamp: HLCTimestamp) -> Bool {
        let current = fields[field]
        guard current?.value != value else { return false }
        insert(FieldVersion(value: value, stamp: stamp, parents: current.map { [$0.stamp] } ?? []), for: field)
        return true
    }

    /// Deletes the item at `stamp`: a tombstone that records what this device had seen, so that
    /// any write it had not seen brings the item back (``Tombstone``).
    public mutating func delete(stamp: HLCTimestamp) {
        var observed: [DeviceID: HLCTimestamp] = [:]
        for version in allVersions {
            observed[version.stamp.device] = max(observed[version.stamp.device] ?? version.stamp, version.stamp)
        }
        let deletion = Tombstone(stamp: stamp, observed: observed)
        tombstone = tombstone.map { $0.joined(with: deletion) } ?? deletion
    }

    /// Brings the item back from a deletion (the person restored it) at `stamp`: its latest-written
    /// field is written again, with the value it holds, on top of itself. No deletion has seen that
    /// write, so the item is not deleted on any replica that merges it, and no value changes.
    /// Nothing happens when the item is not deleted.
    ///
    /// `stamp` is a fresh ``HybridLogicalClock/send(now:)`` reading of the restoring device.
    public mutating func restore(stamp: HLCTimestamp) {
        guard isDeleted else { return }
        let latest = fields.max { ($0.value.stamp, $0.key.name) < ($1.value.stamp, $1.key.name) }
        let (field, current) = latest.map { ($0.key, $0.value) } ?? (FieldKey.title, nil)
        insert(
            FieldVersion(value: current?.value ?? .absent, stamp: stamp, parents: current.map { [$0.stamp] } ?? []),
            for: field
        )
    }

    /// Adds one version of `field`: the current one stays the latest by stamp, the other goes to
    /// history. Two versions with one stamp can only come from a forged or corrupted record (a
    /// device never repeats a reading); the one with the larger encoding is kept, so that every
    /// replica still keeps the same one.
    mutating func insert(_ version: FieldVersion, for field: FieldKey) {
        guard let current = fields[field] else {
            fields[field] = version
            return
        }
        if version.stamp == current.stamp {
            if version != current && CanonicalEncoding.precedes(current, version) { fields[field] = version }
        } else if version.stamp > current.stamp {
            history[field, default: [:]][current.stamp] = current
            fields[field] = version
        } else if let existing = history[field]?[version.stamp] {
            if version != existing && CanonicalEncoding.precedes(existing, version) {
                history[field]?[version.stamp] = version
            }
        } else {
            history[field, default: [:]][version.stamp] = version
        }
    }

    /// Every version of every field, current and history.
    var allVersions: [FieldVersion] {
        Array(fields.values) + history.values.flatMap(\.values)
    }
}
