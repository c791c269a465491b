public import BreachCheck
public import _KeyhavenSupport

/// The server's buckets: every held digest's truncated OPRF output, under the bucket of its prefix,
/// sorted and without repeats. 8 bytes per entry plus 4 per bucket.
public struct BreachPSIBuckets: Sendable {
    /// `offsets[b] ..< offsets[b + 1]` are bucket b's entries.
    let offsets: [UInt32]
    let entries: [UInt64]

    /// The sorted entries of bucket `prefix` (empty for a prefix out of range).
    public func entries(prefix: UInt16) -> ArraySlice<UInt64> {
        let index = Int(prefix)
        guard index < BreachPSI.bucketCount else { return [] }
        return entries[Int(offsets[index])..<Int(offsets[index + 1])]
    }

    /// Entries over all buckets.
    public var count: Int { entries.count }

    /// The largest bucket's size.
    public var largestBucket: Int {
        (0..<BreachPSI.bucketCount).map { Int(offsets[$0 + 1] - offsets[$0]) }.max() ?? 0
    }
}

/// Turns leaked SHA-1 digests, in any order, into ``BreachPSIBuckets``.
///
/// Memory is 8 bytes per entry kept. To bound it for a large corpus, build the buckets in slices
/// (`buckets: 0..<8192`, then `8192..<16384`, …): digests of other buckets cost one SHA-256 and
/// are dropped, so each pass reads the input again and keeps only its slice.
public struct BreachPSIBucketBuilder {
    let key: BreachPSIServerKey
    /// The buckets this builder keeps.
    public let buckets: Range<Int>
    var pending: [[UInt64]]

    public init(key: BreachPSIServerKey, buckets: Range<Int> = 0..<BreachPSI.bucketCount) {
        self.key = key
        self.buckets = buckets.clamped(to: 0..<BreachPSI.bucketCount)
        pending = Array(repeating: [], count: self.buckets.count)
    }

    /// Adds one leaked digest (one OPRF evaluation when its bucket is kept).
    public mutating func add(_ digest: SHA1Digest) throws(BreachPSIError) {
        let bucket = Int(BreachPSI.prefix(of: digest))
        guard buckets.contains(bucket) else { return }
        let output = try key.output(for: BreachPSI.input(digest))
        pending[bucket - buckets.lowerBound].append(BreachPSI.entry(output))
    }

    /// Adds every digest of `digests`.
    public mutating func add(contentsOf digests: some Sequence<SHA1Digest>) throws(BreachPSIError) {
        for digest in digests { try add(digest) }
    }

    /// The buckets: each sorted, repeats removed (two digests may share an 8-byte entry, or a
    /// corpus may list a digest twice). Buckets outside ``buckets`` are empty.
    public consuming func finish() -> BreachPSIBuckets {
        var offsets: [UInt32] = [0]
        offsets.reserveCapacity(BreachPSI.bucketCount + 1)
        var entries: [UInt64] = []
        entries.reserveCapacity(pending.reduce(0) { $0 + $1.count })
        for bucket in 0..<BreachPSI.bucketCount {
            if buckets.contains(bucket) {
                let index = bucket - buckets.lowerBound
                var sorted = pending[index]
                pending[index] = []
                sorted.sort()
                for entry in sorted where entries.count == Int(offsets.last!) || entries.last != entry {
                    entries.append(entry)
                }
            }
            offsets.append(UInt32(entries.count))
        }
        return BreachPSIBuckets(offsets: offsets, entries: entries)
    }
}
