extension SyncRecord {
    /// The union of two replicas of one item: every version of every field either holds, each
    /// field's latest by stamp current, and both tombstones joined.
    ///
    /// Commutative, associative and idempotent (`a ∪ b = b ∪ a`, `a ∪ a = a`), so replicas that
    /// merge the same records in any order and grouping hold the same record, byte for byte.
    /// ``merge(local:remote:)`` does the same and also says what happened to each field.
    ///
    /// - Throws: ``VaultSyncError/Code/itemMismatch`` when `other` is another item's record.
    public func merged(with other: SyncRecord) throws(VaultSyncError) -> SyncRecord {
        guard other.id == id else {
            throw VaultSyncError(.itemMismatch, "cannot merge item \(other.id) into item \(id)", details: id)
        }
        // The larger record absorbs the smaller: the result does not depend on which (insert is
        // order-independent), only the time does.
        let (larger, smaller) = historyCount >= other.historyCount ? (self, other) : (other, self)
        var result = larger
        for (field, version) in smaller.fields { result.insert(version, for: field) }
        for (field, versions) in smaller.history {
            for version in versions.values { result.insert(version, for: field) }
        }
        switch (tombstone, other.tombstone) {
        case (let mine?, let theirs?): result.tombstone = mine.joined(with: theirs)
        case (let one?, nil), (nil, let one?): result.tombstone = one
        case (nil, nil): result.tombstone = nil
        }
        return result
    }

    /// Merges the other side's record into this device's, per field and three ways: for each field
    /// the two current versions are compared against their common ancestor, found through the
    /// versions' parents.
    ///
    /// - Only one side changed the field since the ancestor: that side's value, silently.
    /// - Both changed it without seeing each other: the later stamp's value stays current and the
    ///   other goes to history, where ``conflicts`` marks it until a person resolves it.
    /// - One side deleted the item and the other edited it: the edit brings the item back.
    ///
    /// The merged record is ``merged(with:)``'s — a union, so that the result never depends on
    /// which device merged — and the report says what the person should be told.
    public static func merge(local: SyncRecord, remote: SyncRecord) throws(VaultSyncError) -> MergeResult {
        let record = try local.merged(with: remote)
        var report: [FieldKey: FieldMerge] = [:]
        for field in Set(local.fields.keys).union(remote.fields.keys) {
            let outcome = record.classify(field, local: local.fields[field]?.stamp, remote: remote.fields[field]?.stamp)
            if outcome != .unchanged { report[field] = outcome }
        }
        let deletion: MergeResult.Deletion =
            record.isDeleted
            ? .deleted : (local.isDeleted || remote.isDeleted) ? .editKeptOverDeletion : .notDeleted
        return MergeResult(record: record, fields: report, deletion: deletion)
    }

    /// What happened to `field` between the versions stamped `local` and `remote`, both in this
    /// (merged) record.
    func classify(_ field: FieldKey, local: HLCTimestamp?, remote: HLCTimestamp?) -> FieldMerge {
        switch (local, remote) {
        case (nil, nil): return .unchanged
        case (nil, _?): return .tookRemote
        case (_?, nil): return .keptLocal
        case (let local?, let remote?):
            if local == remote { return .unchanged }
            let localAncestry = ancestry(of: local, in: field)
            let remoteAncestry = ancestry(of: remote, in: field)
            if remoteAncestry.contains(local) { return .tookRemote }
            if localAncestry.contains(remote) { return .keptLocal }
            return .conflict(
                kept: max(local, remote),
                other: min(local, remote),
                ancestor: localAncestry.intersection(remoteAncestry).max()
            )
        }
    }

    /// The stamps of every version `stamp` descends from in `field` (itself included).
    func ancestry(of stamp: HLCTimestamp, in field: FieldKey) -> Set<HLCTimestamp> {
        var seen: Set<HLCTimestamp> = [stamp]
        var pending = [stamp]
        while let next = pending.popLast() {
            for parent in version(of: field, stamped: next)?.parents ?? [] where seen.insert(parent).inserted {
                pending.append(parent)
            }
        }
        return seen
    }

    /// The version of `field` stamped `stamp`, current or in history.
    public func version(of field: FieldKey, stamped stamp: HLCTimestamp) -> FieldVersion? {
        if let current = fields[field], current.stamp == stamp { return current }
        return history[field]?[stamp]
    }

    /// How many versions the history holds (all fields).
    public var historyCount: Int { history.values.reduce(0) { $0 + $1.count } }
}

/// What a merge did to one field, judged against the two values' common ancestor.
public enum FieldMerge: Hashable, Sendable {
    /// Both sides hold the same version.
    case unchanged
    /// Only this device changed the field since the common ancestor: its value stays.
    case keptLocal
    /// Only the other side changed it: its value is taken.
    case tookRemote
    /// Both sides changed it without seeing each other: the version stamped `kept` (the later) is
    /// current, `other` is in history and marked as a conflict; `ancestor` is the version both
    /// started from (nil when the field was first written on both sides).
    case conflict(kept: HLCTimestamp, other: HLCTimestamp, ancestor: HLCTimestamp?)
}

/// The result of ``SyncRecord/merge(local:remote:)``: the merged record and what to tell the person.
public struct MergeResult: Hashable, Sendable {
    /// Whether the item ends deleted, and whether an edit undid a deletion.
    public enum Deletion: Hashable, Sendable {
        case notDeleted
        case deleted
        /// One side deleted the item, the other edited it without having seen the deletion: the
        /// item stays, with the edit.
        case editKeptOverDeletion
    }

    public var record: SyncRecord
    /// Every field the merge changed on at least one side (``FieldMerge/unchanged`` ones left out).
    public var fields: [FieldKey: FieldMerge]
    public var deletion: Deletion

    /// The fields where both sides' edits met (``FieldMerge/conflict(kept:other:ancestor:)``).
    public var conflictingFields: [FieldKey] {
        fields.filter { if case .conflict = $0.value { true } else { false } }.keys.sorted()
    }
}
