extension SyncReplica {
    /// The replica's one byte encoding: what a device keeps between syncs (sealed in the vault,
    /// ``init(canonicalBytes:)`` reads it back). Canonical like ``SyncRecord/canonicalBytes`` —
    /// equal replicas have equal bytes, and the reader accepts only what this property could have
    /// written (records and revisions sorted by item, no duplicates, no trailing bytes) — so a
    /// damaged or altered state is refused, never half read. Layout (version 1; integers
    /// big-endian, counts and lengths LEB128):
    ///
    /// ```
    /// replica   = "KHRP" 0x01 device[8] clock cursor[8]
    ///             count {length record}                       records (canonical bytes), by item
    ///             count {item[16] revision[8]}                known revisions, by item
    ///             count {entry}                               the outbox, in its order
    /// clock     = physical[8] counter[4]                      the latest reading (the device's)
    /// entry     = item[16] attempts (0x00 | 0x01 base[8] length payload) (0x00 | 0x01 length record)
    ///                                                         in flight, and the record it carries
    /// ```
    ///
    /// A mutation in flight keeps its exact payload, so the retry after a restart is the same
    /// mutation (same id) and the server applies it once.
    public var canonicalBytes: [UInt8] {
        var writer = CanonicalEncoding.Writer()
        writer.bytes.append(contentsOf: Self.magic)
        writer.bytes.append(Self.encodingVersion)
        writer.fixed(device.rawValue)
        writer.fixed(clock.latest.physical)
        writer.fixed(clock.latest.counter)
        writer.fixed(cursor)
        writer.count(records.count)
        for item in records.keys.sorted() {
            let bytes = records[item]!.canonicalBytes
            writer.count(bytes.count)
            writer.bytes.append(contentsOf: bytes)
        }
        writer.count(revisions.count)
        for item in revisions.keys.sorted() {
            writer.bytes.append(contentsOf: item.bytes)
            writer.fixed(revisions[item]!)
        }
        writer.count(outbox.entries.count)
        for entry in outbox.entries {
            writer.bytes.append(contentsOf: entry.item.bytes)
            writer.count(entry.unansweredAttempts)
            if let mutation = entry.inFlight {
                writer.bytes.append(1)
                writer.fixed(mutation.baseRevision)
                writer.count(mutation.payload.count)
                writer.bytes.append(contentsOf: mutation.payload)
            } else {
                writer.bytes.append(0)
            }
            if let sent = entry.sentRecord {
                let bytes = sent.canonicalBytes
                writer.bytes.append(1)
                writer.count(bytes.count)
                writer.bytes.append(contentsOf: bytes)
            } else {
                writer.bytes.append(0)
            }
        }
        return writer.bytes
    }

    static let magic: [UInt8] = Array("KHRP".utf8)
    static let encodingVersion: UInt8 = 1

    /// Reads a replica written by ``canonicalBytes``.
    ///
    /// - Throws: ``VaultSyncError/Code/unsupportedFormat`` for a newer layout,
    ///   ``VaultSyncError/Code/malformedReplica`` for anything else it could not have written
    ///   (truncated, unsorted, a duplicate, a record of another item, a clock of another device,
    ///   a flag other than 0 or 1, bytes after the end).
    public init(canonicalBytes bytes: [UInt8]) throws(VaultSyncError) {
        do {
            self = try Self.read(bytes)
        } catch let error where error.code == .unsupportedFormat {
            throw error
        } catch {
            throw VaultSyncError(
                .malformedReplica,
                "the saved sync state cannot be read (\(error.message)); it was damaged or altered"
            )
        }
    }

    private static func read(_ bytes: [UInt8]) throws(VaultSyncError) -> SyncReplica {
        var reader = CanonicalEncoding.Reader(bytes: bytes)
        func require(_ condition: Bool, _ problem: String) throws(VaultSyncError) {
            guard condition else { throw VaultSyncError(.malformedReplica, problem) }
        }
        func fixed64() throws(VaultSyncError) -> UInt64 { CanonicalEncoding.uint64(try reader.take(8)) }
        func item() throws(VaultSyncError) -> ItemID { ItemID(bytes: Array(try reader.take(16)))! }
        func flag() throws(VaultSyncError) -> Bool {
            let byte = try reader.byte()
            try require(byte <= 1, "a flag is neither 0 nor 1")
            return byte == 1
        }
        func record() throws(VaultSyncError) -> SyncRecord {
            try SyncRecord(canonicalBytes: Array(try reader.take(try reader.count())))
        }
        try require(Array(try reader.take(4)) == magic, "not a saved replica")
        let version = try reader.byte()
        guard version == encodingVersion else {
            throw VaultSyncError(
                .unsupportedFormat,
                "the saved sync state is of a newer format (\(version)); update Keyhaven on this device"
            )
        }
        let device = DeviceID(try fixed64())
        let physical = try fixed64()
        let counter = UInt32(CanonicalEncoding.uint64(try reader.take(4)))
        var replica = SyncReplica(device: device)
        replica.clock = HybridLogicalClock(
            device: device,
            latest: HLCTimestamp(physical: physical, counter: counter, device: device)
        )
        replica.cursor = try fixed64()
        var previous: ItemID?
        for _ in 0..<(try reader.count()) {
            let record = try record()
            try require(previous.map { $0 < record.id } ?? true, "records out of order")
            previous = record.id
            replica.records[record.id] = record
        }
        previous = nil
        for _ in 0..<(try reader.count()) {
            let id = try item()
            try require(previous.map { $0 < id } ?? true, "revisions out of order")
            previous = id
            replica.revisions[id] = try fixed64()
        }
        for _ in 0..<(try reader.count()) {
            var entry = Outbox.Entry(item: try item())
            try require(!replica.outbox.contains(entry.item), "an item twice in the outbox")
            try require(replica.records[entry.item] != nil, "an outbox entry for an item without a record")
            let attempts = try reader.varint()
            try require(attempts <= UInt64(Int32.max), "an attempt count out of range")
            entry.unansweredAttempts = Int(attempts)
            if try flag() {
                let base = try fixed64()
                let payload = Array(try reader.take(try reader.count()))
                entry.inFlight = Mutation(item: entry.item, baseRevision: base, payload: payload)
            }
            if try flag() {
                let sent = try record()
                try require(sent.id == entry.item, "an outbox entry carries another item's record")
                entry.sentRecord = sent
            }
            replica.outbox.restore(entry)
        }
        try require(reader.isAtEnd, "bytes after the end")
        return replica
    }
}
