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

    /// Opens and validates an index. A foreign, truncated or newer file is a clear error.
    public init(url: URL) throws(BreachError) {
        let file: MappedFile
        do {
            file = try MappedFile(path: url.path)
        } catch let error as BreachError {
            throw error
        } catch {
            throw BreachError(.io, "cannot open \(url.path)")
        }
        let bytes = file.bytes
        guard bytes.count >= BreachIndexFormat.headerSize, Array(bytes[0..<8]) == BreachIndexFormat.magic else {
            throw BreachError(
                .notAnIndex,
                "\(url.path) is not a Keyhaven breach index (build one with `keyhaven breach index build`)"
            )
        }
        guard BreachIndexFormat.fnv1a(bytes[0..<112]) == file.load(UInt64.self, at: 112) else {
            throw BreachError(.notAnIndex, "\(url.path): the index header is damaged")
        }
        let version = file.load(UInt32.self, at: 8)
        guard version == BreachIndexFormat.version else {
            throw BreachError(.unsupportedVersion, "\(url.path) is index format \(version); this Keyhaven reads 1")
        }
        let expectedSize = Int(file.load(UInt64.self, at: 104))
        guard bytes.count == expectedSize else {
            throw BreachError(
                .truncated,
                "\(url.path) is \(bytes.count) bytes but its header says \(expectedSize): truncated or damaged; rebuild it"
            )
        }
        guard let kind = BreachIndexFormat.Kind(rawValue: file.load(UInt32.self, at: 12)) else {
            throw BreachError(.unsupportedVersion, "\(url.path) has an unknown index kind")
        }
        self.kind = kind == .compact ? .compact : .full
        self.file = file
        count = Int(file.load(UInt64.self, at: 16))
        bucketBits = Int(file.load(UInt32.self, at: 24))
        recordBits = Int(file.load(UInt32.self, at: 28))
        suffixBits = Int(file.load(UInt32.self, at: 32))
        bucketsOffset = Int(file.load(UInt64.self, at: 40))
        blocksOffset = Int(file.load(UInt64.self, at: 56))
        overflowOffset = Int(file.load(UInt64.self, at: 72))
        overflowCount = Int(file.load(UInt64.self, at: 80)) / 16
        recordsOffset = Int(file.load(UInt64.self, at: 88))
        let recordsLength = Int(file.load(UInt64.self, at: 96))
        let sectionsFit =
            [bucketsOffset, blocksOffset, overflowOffset, recordsOffset].allSatisfy { $0 <= bytes.count }
            && recordsOffset + recordsLength <= bytes.count
        guard sectionsFit, (8...40).contains(bucketBits) || kind == .full else {
            throw BreachError(.notAnIndex, "\(url.path): the index sections are inconsistent")
        }
    }

    // MARK: Lookup

    /// How often `digest` appears in the corpus; 0 when absent. Approximate (a power of two, rounded
    /// down) for a compact index.
    public func count(of digest: SHA1Digest) -> Int {
        kind == .compact ? compactCount(digest.high64) : fullCount(digest.bytes)
    }

    /// Number of hashes in bucket `bucket` (compact).
    @inline(__always)
    func bucketSize(_ bucket: Int) -> Int {
        let byte = file.bytes[bucketsOffset + bucket >> 1]
        let size = Int(bucket & 1 == 0 ? byte >> 4 : byte & 0xF)
        guard size == BreachIndexFormat.escape else { return size }
        // Escaped: binary search the overflow table of (bucket, size) pairs.
        var low = 0
        var high = overflowCount
        while low < high {
            let middle = (low + high) / 2
            let key = Int(file.load(UInt64.self, at: overflowOffset + middle * 16))
            if key < bucket { low = middle + 1 } else { high = middle }
        }
        return Int(file.load(UInt64.self, at: overflowOffset + low * 16 + 8))
    }

    /// Bits `[position, position + width)` of the record stream, big-endian within the stream.
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

    func compactCount(_ key: UInt64) -> Int {
        let bucket = Int(key >> UInt64(64 - bucketBits))
        let block = bucket / BreachIndexFormat.blockSize
        var start = Int(file.load(UInt64.self, at: blocksOffset + block * 8))
        for index in (block * BreachIndexFormat.blockSize)..<bucket {
            start += bucketSize(index)
        }
        let size = bucketSize(bucket)
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
    /// range API lists them. Needs a full index.
    public func range(prefix: UInt32) throws(BreachError) -> [(suffix: [UInt8], count: Int)] {
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
