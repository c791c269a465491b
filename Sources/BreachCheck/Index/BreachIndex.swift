public import Foundation

/// A breach index opened for lookups: a memory-mapped file, safe to query from many threads.
///
/// Lookup cost, compact index: one block-offset read, at most 127 bucket sizes (nibbles) summed, then a
/// scan of the bucket (4–8 records on average): O(1) expected, a few hundred nanoseconds when the
/// pages are cached. Full index: a bucket of n / 65,536 records searched by binary search:
/// O(log n).
public final class BreachIndex: Sendable {
    public enum Kind: String, Sendable {
        /// 64-bit prefixes and approximate counts; cannot serve ranges.
        case compact
        /// Whole hashes and exact counts.
        case full
    }

    public let kind: Kind
    /// Number of distinct hashes.
    public let count: Int
    /// File size divided by the number of hashes.
    public var bytesPerHash: Double { Double(file.bytes.count) / Double(max(count, 1)) }
    /// Whether counts are exact (full index) or powers of two (compact).
    public var exactCounts: Bool { kind == .full }

    let file: MappedFile
    let bucketBits: Int
    let recordBits: Int
    let suffixBits: Int
    let bucketsOffset: Int
    let blocksOffset: Int
    let overflowOffset: Int
    let overflowCount: Int
    let recordsOffset: Int

    /// Opens and validates an index. A foreign, truncated, newer, damaged or crafted file is an error
    /// with a code (``BreachError/Code/notAnIndex``, ``BreachError/Code/truncated``,
    /// ``BreachError/Code/unsupportedVersion``, ``BreachError/Code/corrupt``), never a crash.
    ///
    /// Every offset and length in the header is checked against the file before anything is read at
    /// it, and every table a lookup follows is checked here (full: the 65,537 bucket starts; compact:
    /// the block starts and the overflow table), so that lookups read only inside the file. What
    /// cannot be checked without reading the whole index (the compact bucket sizes) is checked by each
    /// lookup, which then throws ``BreachError/Code/corrupt``.
    public convenience init(url: URL) throws(BreachError) {
        let file: MappedFile
        do {
            file = try MappedFile(path: url.path)
        } catch let error as BreachError {
            throw error
        } catch {
            throw BreachError(.io, "cannot open \(url.path)")
        }
        try self.init(file: file, name: url.path)
    }

    /// An index over `file`; `name` is how messages call it.
    init(file: MappedFile, name: String) throws(BreachError) {
        let bytes = file.bytes
        guard bytes.count >= BreachIndexFormat.headerSize, Array(bytes[0..<8]) == BreachIndexFormat.magic else {
            throw BreachError(
                .notAnIndex,
                "\(name) is not a Keyhaven breach index (build one with `keyhaven breach index build`)"
            )
        }
        guard BreachIndexFormat.fnv1a(bytes[0..<112]) == file.load(UInt64.self, at: 112) else {
            throw BreachError(.notAnIndex, "\(name): the index header is damaged")
        }
        let version = file.load(UInt32.self, at: 8)
        guard version == BreachIndexFormat.version else {
            throw BreachError(.unsupportedVersion, "\(name) is index format \(version); this Keyhaven reads 1")
        }
        let expectedSize = file.load(UInt64.self, at: 104)
        guard UInt64(bytes.count) == expectedSize else {
            throw BreachError(
                .truncated,
                "\(name) is \(bytes.count) bytes but its header says \(expectedSize): truncated or damaged; rebuild it"
            )
        }
        guard let kind = BreachIndexFormat.Kind(rawValue: file.load(UInt32.self, at: 12)) else {
            throw BreachError(.unsupportedVersion, "\(name) has an unknown index kind")
        }
        func corrupt(_ what: String) -> BreachError {
            BreachError(.corrupt, "\(name): \(what); the index is damaged or was not written by Keyhaven, rebuild it")
        }
        // Every size below is compared with the file size while still a UInt64, so nothing converts
        // (or adds) out of range: afterwards all of them fit in an Int with room to spare.
        let size = UInt64(bytes.count)
        func section(_ at: Int, _ what: String) throws(BreachError) -> (offset: Int, length: Int) {
            let offset = file.load(UInt64.self, at: at)
            let length = file.load(UInt64.self, at: at + 8)
            guard offset >= UInt64(BreachIndexFormat.headerSize), offset <= size, length <= size - offset else {
                throw corrupt("the \(what) section lies outside the file")
            }
            return (Int(offset), Int(length))
        }
        let buckets = try section(40, "bucket")
        let blocks = try section(56, "block")
        let overflow = try section(72, "overflow")
        let records = try section(88, "record")
        let rawCount = file.load(UInt64.self, at: 16)
        guard rawCount <= size else { throw corrupt("the header claims more hashes than the file can hold") }
        let count = Int(rawCount)
        let bucketBits = Int(file.load(UInt32.self, at: 24))
        let recordBits = Int(file.load(UInt32.self, at: 28))
        let suffixBits = Int(file.load(UInt32.self, at: 32))
        let overflowCount = overflow.length / 16

        /// A table of record starts (`what` per entry): 0, never decreasing, ending at the hash
        /// count; lookups then stay in the record section.
        func checkStarts(of what: String, at offset: Int, entries: Int) throws(BreachError) {
            var previous: UInt64 = 0
            for entry in 0..<entries {
                let start = file.load(UInt64.self, at: offset + entry * 8)
                guard start >= previous, start <= rawCount, entry > 0 || start == 0 else {
                    throw corrupt("\(what) \(entry) starts at an impossible record")
                }
                previous = start
            }
            guard previous == rawCount else { throw corrupt("the \(what) table does not end at the hash count") }
        }

        switch kind {
        case .full:
            guard bucketBits == BreachIndexFormat.fullBucketBits,
                recordBits == BreachIndexFormat.fullRecordSize * 8,
                suffixBits == 160 - BreachIndexFormat.fullBucketBits
            else { throw corrupt("the header's bit widths are not those of a full index") }
            let entries = (1 << BreachIndexFormat.fullBucketBits) + 1
            guard buckets.length == entries * 8 else { throw corrupt("the bucket table has the wrong size") }
            guard count <= records.length / BreachIndexFormat.fullRecordSize else {
                throw corrupt("the record section is shorter than the header's hash count")
            }
            try checkStarts(of: "bucket", at: buckets.offset, entries: entries)
        case .compact:
            guard (8...40).contains(bucketBits), suffixBits == 64 - bucketBits,
                recordBits == suffixBits + BreachIndexFormat.countCodeBits
            else { throw corrupt("the header's bit widths are not those of a compact index") }
            // Checked in this order, each bounded by the file size, so no product overflows.
            let bucketCount = 1 << bucketBits
            guard buckets.length == (bucketCount + 1) / 2 else {
                throw corrupt("the bucket-size section has the wrong size")
            }
            let blockCount = bucketCount / BreachIndexFormat.blockSize + 1
            guard blocks.length == blockCount * 8 else { throw corrupt("the block table has the wrong size") }
            guard overflow.length % 16 == 0 else { throw corrupt("the overflow table has a partial entry") }
            // A record is read as 9 bytes from the byte it starts in.
            guard count <= records.length * 8 / recordBits,
                count == 0 || (count - 1) * recordBits / 8 + 9 <= records.length
            else { throw corrupt("the record section is shorter than the header's hash count") }
            try checkStarts(of: "block", at: blocks.offset, entries: blockCount)
            var previousBucket: UInt64?
            for entry in 0..<overflowCount {
                let bucket = file.load(UInt64.self, at: overflow.offset + entry * 16)
                let bucketSize = file.load(UInt64.self, at: overflow.offset + entry * 16 + 8)
                guard bucket < UInt64(bucketCount), previousBucket.map({ bucket > $0 }) ?? true,
                    bucketSize >= UInt64(BreachIndexFormat.escape), bucketSize <= rawCount
                else { throw corrupt("overflow entry \(entry) is out of order or out of range") }
                previousBucket = bucket
            }
        }
        self.kind = kind == .compact ? .compact : .full
        self.file = file
        self.count = count
        self.bucketBits = bucketBits
        self.recordBits = recordBits
        self.suffixBits = suffixBits
        self.bucketsOffset = buckets.offset
        self.blocksOffset = blocks.offset
        self.overflowOffset = overflow.offset
        self.overflowCount = overflowCount
        self.recordsOffset = records.offset
    }

    // MARK: Lookup

    /// How often `digest` appears in the corpus; 0 when absent. Approximate (a power of two, rounded
    /// down) for a compact index. Throws ``BreachError/Code/corrupt`` when the compact bucket sizes
    /// on the way contradict the rest of the index (a damaged or crafted file), never reading
    /// outside it.
    public func count(of digest: SHA1Digest) throws(BreachError) -> Int {
        kind == .compact ? try compactCount(digest.high64) : fullCount(digest.bytes)
    }

    var damaged: BreachError {
        BreachError(.corrupt, "the breach index's bucket sizes are inconsistent; it is damaged, rebuild it")
    }

    /// Number of hashes in bucket `bucket` (compact; `bucket` < 2^bucketBits, so its nibble is
    /// inside the validated bucket-size section).
    @inline(__always)
    func bucketSize(_ bucket: Int) throws(BreachError) -> Int {
        let byte = file.bytes[bucketsOffset + bucket >> 1]
        let size = Int(bucket & 1 == 0 ? byte >> 4 : byte & 0xF)
        guard size == BreachIndexFormat.escape else { return size }
        // Escaped: binary search the overflow table of (bucket, size) pairs (validated at open:
        // sorted, sizes at most the hash count).
        var low = 0
        var high = overflowCount
        while low < high {
            let middle = (low + high) / 2
            let key = file.load(UInt64.self, at: overflowOffset + middle * 16)
            if key < UInt64(bucket) { low = middle + 1 } else { high = middle }
        }
        guard low < overflowCount, file.load(UInt64.self, at: overflowOffset + low * 16) == UInt64(bucket) else {
            throw damaged
        }
        return Int(file.load(UInt64.self, at: overflowOffset + low * 16 + 8))
    }

    /// Bits `[position, position + width)` of the record stream, big-endian within the stream.
    /// `position` is a record's start (record < count), so the 9 bytes read are inside the record
    /// section (validated at open).
    @inline(__always)
    func bits(at position: Int, width: Int) -> UInt64 {
        let byte = recordsOffset + position >> 3
        let shift = position & 7
        // Load up to 9 bytes big-endian.
        var value: UInt64 = 0
        for index in 0..<8 {
            value = value << 8 | UInt64(file.bytes[byte + index])
        }
        var extra: UInt64 = 0
        if shift + width > 64 {
            extra = UInt64(file.bytes[byte + 8])
        }
        let combined = (value << UInt64(shift)) | (shift > 0 ? extra >> UInt64(8 - shift) : 0)
        return combined >> UInt64(64 - width)
    }

    func compactCount(_ key: UInt64) throws(BreachError) -> Int {
        let bucket = Int(key >> UInt64(64 - bucketBits))
        let block = bucket / BreachIndexFormat.blockSize
        // Validated at open: at most `count`; each bucket size is too, so the sum cannot overflow.
        var start = Int(file.load(UInt64.self, at: blocksOffset + block * 8))
        for index in (block * BreachIndexFormat.blockSize)..<bucket {
            start += try bucketSize(index)
        }
        let size = try bucketSize(bucket)
        guard start + size <= count else { throw damaged }
        let suffix = key & ((1 << UInt64(suffixBits)) - 1)
        for record in start..<(start + size) {
            let value = bits(at: record * recordBits, width: recordBits)
            let recordSuffix = value >> UInt64(BreachIndexFormat.countCodeBits)
            if recordSuffix == suffix {
                return BreachIndexFormat.count(forCode: value & 0xF)
            }
            if recordSuffix > suffix { break }
        }
        return 0
    }

    @inline(__always)
    func fullBucketStart(_ bucket: Int) -> Int {
        Int(file.load(UInt64.self, at: bucketsOffset + bucket * 8))
    }

    /// Compares bytes 2 ..< 20 of `digest` with record `index`.
    @inline(__always)
    func compareFull(_ digest: [UInt8], _ index: Int) -> Int {
        let base = recordsOffset + index * BreachIndexFormat.fullRecordSize
        for offset in 0..<18 {
            let a = digest[offset + 2]
            let b = file.bytes[base + offset]
            if a != b { return a < b ? -1 : 1 }
        }
        return 0
    }

    func fullCount(_ digest: [UInt8]) -> Int {
        let bucket = Int(digest[0]) << 8 | Int(digest[1])
        var low = fullBucketStart(bucket)
        var high = fullBucketStart(bucket + 1)
        while low < high {
            let middle = (low + high) / 2
            let order = compareFull(digest, middle)
            if order == 0 {
                return Int(file.load(UInt32.self, at: recordsOffset + middle * BreachIndexFormat.fullRecordSize + 18))
            }
            if order < 0 { high = middle } else { low = middle + 1 }
        }
        return 0
    }

    // MARK: Ranges

    /// Every (suffix, count) whose SHA-1 starts with the 5-hex-digit `prefix`, in order, as the
    /// range API lists them. Needs a full index; `prefix` must be below 2^20.
    public func range(prefix: UInt32) throws(BreachError) -> [(suffix: [UInt8], count: Int)] {
        guard prefix <= 0xF_FFFF else {
            throw BreachError(.invalidInput, "a range prefix has 5 hex digits")
        }
        guard kind == .full else {
            throw BreachError(
                .needsFullIndex,
                "this index is compact (64-bit prefixes, approximate counts) and cannot serve ranges; "
                    + "build it without --compact"
            )
        }
        let bucket = Int(prefix >> 4)
        let nibble = UInt8(prefix & 0xF)
        var result: [(suffix: [UInt8], count: Int)] = []
        let start = fullBucketStart(bucket)
        let end = fullBucketStart(bucket + 1)
        // Records are sorted, so the nibble's records are contiguous: find the first by binary search.
        var low = start
        var high = end
        while low < high {
            let middle = (low + high) / 2
            if file.bytes[recordsOffset + middle * BreachIndexFormat.fullRecordSize] >> 4 < nibble {
                low = middle + 1
            } else {
                high = middle
            }
        }
        var index = low
        while index < end {
            let base = recordsOffset + index * BreachIndexFormat.fullRecordSize
            guard file.bytes[base] >> 4 == nibble else { break }
            result.append((Array(file.bytes[base..<base + 18]), Int(file.load(UInt32.self, at: base + 18))))
            index += 1
        }
        return result
    }
}
