extension SyncRecord {
    /// The record's one byte encoding: what is sealed and sent, and what "byte-identical" means.
    ///
    /// Canonical — equal records have equal bytes, and ``init(canonicalBytes:)`` accepts only bytes
    /// this property could have written (sorted, no duplicates, no trailing bytes) — so replicas
    /// are compared by their bytes, a mutation's id can be derived from them, and no payload can
    /// be read two ways by two devices. Layout (version 1; integers big-endian, counts, lengths
    /// and stamp references LEB128):
    ///
    /// ```
    /// record    = 0x01 id[16] count {stamp}                  every stamp the record holds, ascending
    ///             count {key version}                         fields, by key
    ///             count {key count {version}}                 history, by key then stamp
    ///             (0x00 | 0x01 ref count {ref})               tombstone: stamp, observed by device
    /// key       = length utf8
    /// version   = ref count {ref} value                       stamp, parents (ascending), value
    /// ref       = index of a stamp in the table
    /// stamp     = physical[8] counter[4] device[8]
    /// value     = 0x00 | 0x01 length utf8 | 0x02 count {length utf8} | 0x03 length bytes
    /// ```
    ///
    /// Stamps are written once in a table and referred to by index: the fields of a new item share
    /// one stamp, and a version's parent is another version's stamp, so a fresh credential's record
    /// is about 170 bytes instead of 260. Every stamp in the table is referred to (an unused one
    /// would be a second encoding).
    public var canonicalBytes: [UInt8] {
        var writer = CanonicalEncoding.Writer()
        writer.bytes.reserveCapacity(64 + 64 * (fields.count + historyCount))
        writer.bytes.append(CanonicalEncoding.formatVersion)
        writer.bytes.append(contentsOf: id.bytes)
        writer.table(of: self)
        writer.count(fields.count)
        for field in fields.keys.sorted() {
            writer.text(field.name)
            writer.version(fields[field]!)
        }
        let historyFields = history.filter { !$0.value.isEmpty }
        writer.count(historyFields.count)
        for field in historyFields.keys.sorted() {
            let versions = historyFields[field]!
            writer.text(field.name)
            writer.count(versions.count)
            for stamp in versions.keys.sorted() { writer.version(versions[stamp]!) }
        }
        if let tombstone {
            writer.bytes.append(1)
            writer.reference(tombstone.stamp)
            writer.count(tombstone.observed.count)
            for device in tombstone.observed.keys.sorted() { writer.reference(tombstone.observed[device]!) }
        } else {
            writer.bytes.append(0)
        }
        return writer.bytes
    }

    /// Reads a record from its ``canonicalBytes``.
    ///
    /// - Throws: ``VaultSyncError/Code/unsupportedFormat`` for a newer format;
    ///   ``VaultSyncError/Code/malformedRecord`` for anything ``canonicalBytes`` would not have
    ///   written (truncated, unsorted, duplicated, a history newer than its field's current
    ///   version, invalid UTF-8, bytes after the end).
    public init(canonicalBytes bytes: [UInt8]) throws(VaultSyncError) {
        var reader = CanonicalEncoding.Reader(bytes: bytes)
        let format = try reader.byte()
        guard format == CanonicalEncoding.formatVersion else {
            throw format > CanonicalEncoding.formatVersion
                ? VaultSyncError(
                    .unsupportedFormat,
                    "the record is of format \(format); update Keyhaven on this device"
                )
                : VaultSyncError(.malformedRecord, "unknown record format \(format)")
        }
        let idBytes = Array(try reader.take(16))
        let id = ItemID(high: CanonicalEncoding.uint64(idBytes[0..<8]), low: CanonicalEncoding.uint64(idBytes[8..<16]))
        try reader.readTable(id)
        var fields: [FieldKey: FieldVersion] = [:]
        var previous: FieldKey?
        for _ in 0..<(try reader.count()) {
            let field = FieldKey(try reader.text())
            try reader.require(previous.map { $0 < field } ?? true, "fields out of order", id)
            fields[field] = try reader.version(id)
            previous = field
        }
        var history: [FieldKey: [HLCTimestamp: FieldVersion]] = [:]
        previous = nil
        for _ in 0..<(try reader.count()) {
            let field = FieldKey(try reader.text())
            try reader.require(previous.map { $0 < field } ?? true, "history out of order", id)
            guard let current = fields[field] else {
                throw VaultSyncError(
                    .malformedRecord,
                    "item \(id) has history for a field it does not have",
                    details: id
                )
            }
            let count = try reader.count()
            try reader.require(count > 0, "empty history list", id)
            var versions: [HLCTimestamp: FieldVersion] = [:]
            var previousStamp: HLCTimestamp?
            for _ in 0..<count {
                let version = try reader.version(id)
                try reader.require(previousStamp.map { $0 < version.stamp } ?? true, "history out of order", id)
                try reader.require(version.stamp < current.stamp, "history newer than the current value", id)
                versions[version.stamp] = version
                previousStamp = version.stamp
            }
            history[field] = versions
            previous = field
        }
        var tombstone: Tombstone?
        switch try reader.byte() {
        case 0: tombstone = nil
        case 1:
            let stamp = try reader.reference(id)
            var observed: [DeviceID: HLCTimestamp] = [:]
            var previousDevice: DeviceID?
            for _ in 0..<(try reader.count()) {
                let seen = try reader.reference(id)
                try reader.require(previousDevice.map { $0 < seen.device } ?? true, "tombstone out of order", id)
                observed[seen.device] = seen
                previousDevice = seen.device
            }
            tombstone = Tombstone(stamp: stamp, observed: observed)
        default: throw VaultSyncError(.malformedRecord, "item \(id) has an unknown tombstone tag", details: id)
        }
        try reader.require(reader.isAtEnd, "bytes after the end of the record", id)
        try reader.require(!reader.used.contains(false), "a stamp no version refers to", id)
        self.init(id: id, fields: fields, history: history, tombstone: tombstone)
    }
}

/// The writer and reader of ``SyncRecord/canonicalBytes`` (internal: the format is the record's).
enum CanonicalEncoding {
    static let formatVersion: UInt8 = 1

    /// Whether `a`'s encoding sorts before `b`'s: the tie-break between two versions that claim
    /// one stamp, identical on every replica.
    static func precedes(_ a: FieldVersion, _ b: FieldVersion) -> Bool {
        var left = Writer()
        left.version(a)
        var right = Writer()
        right.version(b)
        return left.bytes.lexicographicallyPrecedes(right.bytes)
    }

    static func uint64(_ bytes: ArraySlice<UInt8>) -> UInt64 {
        bytes.reduce(0) { $0 << 8 | UInt64($1) }
    }

    struct Writer {
        var bytes: [UInt8] = []
        /// The record's table of stamps, ascending; nil: stamps are written in full (``precedes``).
        var table: [HLCTimestamp]?

        /// Writes the table of every stamp `record` holds, and refers to it from then on.
        mutating func table(of record: SyncRecord) {
            var stamps: [HLCTimestamp] = []
            for version in record.allVersions {
                stamps.append(version.stamp)
                stamps += version.parents
            }
            if let tombstone = record.tombstone {
                stamps.append(tombstone.stamp)
                stamps += tombstone.observed.values
            }
            stamps.sort()
            var table: [HLCTimestamp] = []
            table.reserveCapacity(stamps.count)
            for stamp in stamps where table.last != stamp { table.append(stamp) }
            count(table.count)
            for stamp in table { self.stamp(stamp) }
            self.table = table
        }

        /// `stamp` as its index in the table (a binary search), or in full when there is none.
        mutating func reference(_ stamp: HLCTimestamp) {
            guard let table else { return self.stamp(stamp) }
            var (low, high) = (0, table.count)
            while low < high {
                let middle = (low + high) / 2
                if table[middle] < stamp { low = middle + 1 } else { high = middle }
            }
            count(low)
        }

        mutating func count(_ value: Int) {
            var value = UInt64(value)
            while value >= 0x80 {
                bytes.append(UInt8(value & 0x7F) | 0x80)
                value >>= 7
            }
            bytes.append(UInt8(value))
        }

        /// `value`, big-endian (8 bytes for a `UInt64`, 4 for a `UInt32`).
        mutating func fixed(_ value: some FixedWidthInteger) {
            withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
        }

        mutating func text(_ text: String) {
            count(text.utf8.count)
            bytes.append(contentsOf: text.utf8)
        }

        mutating func stamp(_ stamp: HLCTimestamp) {
            fixed(stamp.physical)
            fixed(stamp.counter)
            fixed(stamp.device.rawValue)
        }

        mutating func version(_ version: FieldVersion) {
            reference(version.stamp)
            count(version.parents.count)
            for parent in version.parents { reference(parent) }
            switch version.value {
            case .absent: bytes.append(0)
            case .text(let value):
                bytes.append(1)
                text(value)
            case .list(let values):
                bytes.append(2)
                count(values.count)
                for value in values { text(value) }
            case .bytes(let value):
                bytes.append(3)
                count(value.count)
                bytes.append(contentsOf: value)
            }
        }
    }

    struct Reader {
        let bytes: [UInt8]
        var offset = 0
        /// The record's stamps, and whether each was referred to.
        var table: [HLCTimestamp] = []
        var used: [Bool] = []

        init(bytes: [UInt8]) {
            self.bytes = bytes
        }

        mutating func readTable(_ id: ItemID) throws(VaultSyncError) {
            for _ in 0..<(try count()) {
                let stamp = try stamp()
                try require(table.last.map { $0 < stamp } ?? true, "stamps out of order", id)
                table.append(stamp)
            }
            used = Array(repeating: false, count: table.count)
        }

        mutating func reference(_ id: ItemID) throws(VaultSyncError) -> HLCTimestamp {
            let index = try varint()
            try require(index < UInt64(table.count), "a stamp reference outside the table", id)
            used[Int(index)] = true
            return table[Int(index)]
        }

        var isAtEnd: Bool { offset == bytes.count }

        func require(_ condition: Bool, _ problem: String, _ id: ItemID) throws(VaultSyncError) {
            guard condition else { throw VaultSyncError(.malformedRecord, "item \(id): \(problem)", details: id) }
        }

        mutating func take(_ count: Int) throws(VaultSyncError) -> ArraySlice<UInt8> {
            guard count >= 0, bytes.count - offset >= count else {
                throw VaultSyncError(.malformedRecord, "the record ends early (truncated)")
            }
            defer { offset += count }
            return bytes[offset..<offset + count]
        }

        mutating func byte() throws(VaultSyncError) -> UInt8 { try take(1).first! }

        /// A count: a ``varint()`` no larger than what is left (every counted element takes a byte).
        mutating func count() throws(VaultSyncError) -> Int {
            let value = try varint()
            guard value <= UInt64(bytes.count - offset) else {
                throw VaultSyncError(.malformedRecord, "a count is larger than the record")
            }
            return Int(value)
        }

        /// A LEB128 integer in its shortest form (a longer one would be a second encoding of it).
        mutating func varint() throws(VaultSyncError) -> UInt64 {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                let next = try byte()
                guard shift <= 56, !(next == 0 && shift > 0) else {
                    throw VaultSyncError(.malformedRecord, "a count is not in its shortest form")
                }
                value |= UInt64(next & 0x7F) << shift
                if next & 0x80 == 0 { break }
                shift += 7
            }
            return value
        }

        mutating func text() throws(VaultSyncError) -> String {
            let utf8 = try take(try count())
            guard let text = String(validating: utf8, as: UTF8.self) else {
                throw VaultSyncError(.malformedRecord, "a text is not valid UTF-8")
            }
            return text
        }

        mutating func stamp() throws(VaultSyncError) -> HLCTimestamp {
            let raw = try take(20)
            let start = raw.startIndex
            return HLCTimestamp(
                physical: CanonicalEncoding.uint64(raw[start..<start + 8]),
                counter: UInt32(CanonicalEncoding.uint64(raw[start + 8..<start + 12])),
                device: DeviceID(CanonicalEncoding.uint64(raw[start + 12..<start + 20]))
            )
        }

        mutating func version(_ id: ItemID) throws(VaultSyncError) -> FieldVersion {
            let stamp = try reference(id)
            var parents: [HLCTimestamp] = []
            for _ in 0..<(try count()) {
                let parent = try reference(id)
                try require(parents.last.map { $0 < parent } ?? true, "parents out of order", id)
                parents.append(parent)
            }
            let value: FieldValue
            switch try byte() {
            case 0: value = .absent
            case 1: value = .text(try text())
            case 2:
                var values: [String] = []
                for _ in 0..<(try count()) { values.append(try text()) }
                value = .list(values)
            case 3: value = .bytes(Array(try take(try count())))
            default: throw VaultSyncError(.malformedRecord, "item \(id) has a value of an unknown kind", details: id)
            }
            return FieldVersion(value: value, stamp: stamp, parents: parents)
        }
    }
}
