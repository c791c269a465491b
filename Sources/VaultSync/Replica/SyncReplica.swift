/// One device's side of sync, as a state machine: its records, its clock, its outbox, and what
/// it knows of the server. Every change lands here first (the device works offline); talking to
/// the server is three steps the caller runs whenever it has a connection:
///
/// ```swift
/// try replica.apply(server.changes(since: replica.cursor), now: now())    // pull
/// while let mutation = replica.nextMutation() {                            // push
///     try replica.handle(server.push(mutation), to: mutation, now: now())
/// }
/// ```
///
/// A plain value with no I/O: the caller persists it, sends the mutations and injects the wall
/// clock (`now`, milliseconds since 1970), so the property tests drive five of them through
/// lost requests, lost answers and skewed clocks. Payloads are the records' canonical bytes, or
/// sealed items with ``SealedPayloads`` (``PayloadCodec``): the steps are the same.
public struct SyncReplica: Hashable, Sendable {
    public var device: DeviceID { clock.device }
    public internal(set) var clock: HybridLogicalClock
    public internal(set) var records: [ItemID: SyncRecord] = [:]
    /// Per item, the server revision its local record was last reconciled with: the base of the
    /// next mutation (an item never sent has none).
    public internal(set) var revisions: [ItemID: UInt64] = [:]
    public internal(set) var outbox = Outbox()
    /// The server sequence up to which changes were pulled.
    public internal(set) var cursor: UInt64 = 0

    public init(device: DeviceID) {
        clock = HybridLogicalClock(device: device)
    }

    // MARK: Local changes (offline)

    /// Creates an item with `values`; it is sent on the next push.
    public mutating func create(_ id: ItemID, values: [FieldKey: FieldValue], now: UInt64) -> SyncRecord {
        let record = SyncRecord.created(id: id, values: values, stamp: clock.send(now: now))
        records[id] = record
        outbox.enqueue(id)
        return record
    }

    /// Takes in a record this device made outside the replica (an item the vault held before it
    /// synced, with its history): merged with the local record of the item if there is one, the
    /// clock moved past its stamps, and sent on the next push.
    ///
    /// - Throws: the merge's errors (none for two records of one item).
    public mutating func adopt(_ record: SyncRecord, now: UInt64) throws(VaultSyncError) {
        let merged = try records[record.id].map { (local) throws(VaultSyncError) in try local.merged(with: record) }
        if let latest = record.latestStamp { clock.receive(latest, now: now) }
        records[record.id] = merged ?? record
        outbox.enqueue(record.id)
    }

    /// Writes `value` to `field` of `item`. Returns false when the field already held `value`.
    ///
    /// - Throws: ``VaultSyncError/Code/unknownItem`` when the item is not on this device.
    @discardableResult
    public mutating func set(
        _ field: FieldKey,
        to value: FieldValue,
        in item: ItemID,
        now: UInt64
    ) throws(VaultSyncError) -> Bool {
        var record = try record(item)
        guard record[field] != value else { return false }
        record.set(field, to: value, stamp: clock.send(now: now))
        records[item] = record
        outbox.enqueue(item)
        return true
    }

    /// Deletes `item` (a tombstone: an edit this device has not seen yet will bring it back).
    public mutating func delete(_ item: ItemID, now: UInt64) throws(VaultSyncError) {
        var record = try record(item)
        record.delete(stamp: clock.send(now: now))
        records[item] = record
        outbox.enqueue(item)
    }

    /// Brings a deleted `item` back (restored from recently deleted): a write its tombstone has
    /// not seen (``SyncRecord/restore(stamp:)``), sent on the next push, so every device takes the
    /// item back. Returns false, writing nothing, when the item is not deleted.
    ///
    /// - Throws: ``VaultSyncError/Code/unknownItem`` when the item is not on this device.
    @discardableResult
    public mutating func restore(_ item: ItemID, now: UInt64) throws(VaultSyncError) -> Bool {
        var record = try record(item)
        guard record.isDeleted else { return false }
        record.restore(stamp: clock.send(now: now))
        records[item] = record
        outbox.enqueue(item)
        return true
    }

    /// The person's answer to the conflicts of `field` (``SyncRecord/resolveConflicts(in:keeping:stamp:)``).
    public mutating func resolveConflicts(
        in item: ItemID,
        field: FieldKey,
        keeping value: FieldValue,
        now: UInt64
    ) throws(VaultSyncError) {
        var record = try record(item)
        record.resolveConflicts(in: field, keeping: value, stamp: clock.send(now: now))
        records[item] = record
        outbox.enqueue(item)
    }

    /// Every item with a conflict mark, with its marks (`keyhaven list --conflicts`, later).
    public var conflicts: [ItemID: [FieldConflict]] {
        records.compactMapValues { $0.conflicts.isEmpty ? nil : $0.conflicts }
    }

    private func record(_ item: ItemID) throws(VaultSyncError) -> SyncRecord {
        guard let record = records[item] else {
            throw VaultSyncError(.unknownItem, "item \(item) is not on this device", details: item)
        }
        return record
    }

    // MARK: Talking to the server

    /// The next mutation to send: the one in flight if it was never answered (a retry: same id,
    /// same bytes), else a new one carrying the item's record, encoded by `codec` as the revision
    /// after its last known one. Nil when nothing is pending.
    public mutating func nextMutation(encoding codec: inout some PayloadCodec) throws(VaultSyncError) -> Mutation? {
        guard let entry = outbox.entries.first, let record = records[entry.item] else { return nil }
        var sent = entry.sentRecord
        let mutation: Mutation
        if let inFlight = entry.inFlight {
            mutation = inFlight
        } else {
            let base = revisions[entry.item] ?? 0
            mutation = Mutation(
                item: entry.item,
                baseRevision: base,
                payload: try codec.encode(record, version: base + 1)
            )
            sent = record
        }
        outbox.update(entry.item) {
            $0.inFlight = mutation
            $0.sentRecord = sent
            $0.unansweredAttempts += 1
        }
        return mutation
    }

    /// ``nextMutation(encoding:)`` with records sent as their canonical bytes (``PlainPayloads``).
    public mutating func nextMutation() -> Mutation? {
        var codec = PlainPayloads()
        return try? nextMutation(encoding: &codec)
    }

    /// What the device did with the server's answer.
    public enum PushOutcome: Hashable, Sendable {
        /// The server has the item as this device has it: nothing pending for it.
        case confirmed
        /// Accepted, but the item changed here meanwhile: a newer mutation is pending.
        case acceptedWithMoreToSend
        /// Stale: the server's record was merged in; the merged record is pending, on top of the
        /// server's revision (unless the server's record already held all of it).
        case merged(MergeResult)
        /// Refused: the entry stays, behind the others, and the reason is for the person
        /// (`keyhaven sync status`).
        case rejected(String)
    }

    /// Applies the server's answer to `mutation`.
    ///
    /// - Throws: ``VaultSyncError/Code/malformedRecord`` (and the other decoding errors) when a
    ///   stale answer's payload is not a record; nothing is changed then.
    @discardableResult
    public mutating func handle(
        _ response: PushResponse,
        to mutation: Mutation,
        now: UInt64,
        decoding codec: some PayloadCodec = PlainPayloads()
    ) throws(VaultSyncError) -> PushOutcome {
        switch response {
        case .accepted(let revision):
            revisions[mutation.item] = max(revisions[mutation.item] ?? 0, revision)
            let entry = outbox.entries.first { $0.item == mutation.item }
            if let entry, entry.inFlight?.id == mutation.id, let sent = entry.sentRecord,
                records[mutation.item] == sent
            {
                outbox.remove(mutation.item)
                return .confirmed
            }
            // Changed here since (or sent before a pull replaced what was in flight): send again.
            outbox.update(mutation.item) { $0 = Outbox.Entry(item: $0.item) }
            return .acceptedWithMoreToSend
        case .stale(let current):
            // The server's compare-and-swap is the authority: the next mutation is built on exactly
            // the revision it holds, lower than the one known here when it was restored from a
            // backup (keeping the higher one would be answered stale forever).
            return .merged(try absorb(current, now: now, decoding: codec, exactRevision: true))
        case .rejected(let reason):
            // To the back of the queue, so that one refused item does not hold up the others.
            outbox.remove(mutation.item)
            outbox.enqueue(mutation.item)
            return .rejected(reason)
        }
    }

    /// Merges what changed on the server (a pull) and moves the cursor past it. An item with
    /// nothing pending here simply takes the server's record; one with local changes is merged
    /// and stays pending, unless the server's record already holds all of them.
    ///
    /// A batch that fails halfway (a payload that does not decode) leaves the cursor where it was:
    /// applying it again is harmless, since merging what a record already holds changes nothing.
    ///
    /// - Returns: the merge of each item.
    @discardableResult
    public mutating func apply(
        _ batch: ChangeBatch,
        now: UInt64,
        decoding codec: some PayloadCodec = PlainPayloads()
    ) throws(VaultSyncError) -> [ItemID: MergeResult] {
        var merges: [ItemID: MergeResult] = [:]
        for item in batch.items {
            merges[item.item] = try absorb(item, now: now, decoding: codec, exactRevision: false)
        }
        cursor = max(cursor, batch.sequence)
        return merges
    }

    /// Starts over with a server that lost changes this device saw (restored from a backup: it
    /// answers the cursor with `cursorAhead`): the cursor goes back to 0 and the known revisions
    /// are dropped, and every item is pending again, so that the next pull takes in what the
    /// server holds (an item it holds as this device does is no longer pending then) and the next
    /// push sends the rest — an item the server lost goes out with base 0. Nothing is lost.
    public mutating func resync() {
        cursor = 0
        revisions = [:]
        for entry in outbox.entries { outbox.update(entry.item) { $0 = Outbox.Entry(item: $0.item) } }
        for item in records.keys.sorted() {
            outbox.enqueue(item)
        }
    }

    /// Merges the server's `current` record of an item into this device's, adopting its revision
    /// as the base of the next mutation (exactly, for a stale answer; the higher of the two
    /// otherwise); the clock moves past every stamp in it.
    private mutating func absorb(
        _ current: ServerItem,
        now: UInt64,
        decoding codec: some PayloadCodec,
        exactRevision: Bool
    ) throws(VaultSyncError) -> MergeResult {
        let remote = try codec.decode(current.payload, item: current.item, version: current.revision)
        guard remote.id == current.item else {
            throw VaultSyncError(
                .itemMismatch,
                "the server sent item \(remote.id) as item \(current.item)",
                details: current.item
            )
        }
        let merge = try SyncRecord.merge(local: records[current.item] ?? SyncRecord(id: current.item), remote: remote)
        if let latest = remote.latestStamp { clock.receive(latest, now: now) }
        records[current.item] = merge.record
        revisions[current.item] =
            exactRevision ? current.revision : max(revisions[current.item] ?? 0, current.revision)
        // A mutation in flight was made on an older base: the next one is built on this merge.
        outbox.update(current.item) { $0 = Outbox.Entry(item: $0.item) }
        if merge.record == remote { outbox.remove(current.item) }
        return merge
    }
}
