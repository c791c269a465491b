/// The on-disk format of a Keyhaven breach index, version 1 (documented in docs/breach-index.md).
///
/// All integers little-endian. A 128-byte header, then sections at the offsets it gives:
///
/// | offset | size | field |
/// |---|---|---|
/// | 0 | 8 | magic `KHBRIDX\0` |
/// | 8 | 4 | version (1) |
/// | 12 | 4 | kind: 1 compact, 2 full |
/// | 16 | 8 | number of hashes |
/// | 24 | 4 | bucket bits *k* |
/// | 28 | 4 | record bits |
/// | 32 | 4 | suffix bits |
/// | 40 … 103 | 8 × 8 | offset and length of: bucket counts, block offsets, overflow, records |
/// | 104 | 8 | file size |
/// | 112 | 8 | FNV-1a 64 of bytes 0 ..< 112 |
///
/// Hashes are sorted and split into 2^k buckets by their top k bits, which are not stored.
///
/// - **compact** (≤ 6 bytes per hash at scale): only the first 64 bits of each SHA-1 are kept.
///   Records are bit-packed, `64 − k` suffix bits then a 4-bit count code `min(15, ⌊log2 count⌋)`
///   (so counts read back as powers of two: approximate). Bucket sizes are one nibble per bucket
///   (high nibble first; 15 escapes to the overflow table of `(bucket, size)` pairs) plus the entry
///   index at every 128th bucket. *k* is ⌊log2 n⌋ − 2, so a bucket holds 4–8 hashes.
/// - **full** (what range serving needs): the whole SHA-1 and its exact count. k = 16; records are 22
///   bytes — SHA-1 bytes 2 ..< 20 then the count as UInt32; the bucket section holds 2^16 + 1 entry
///   indices (UInt64) instead of sizes.
enum BreachIndexFormat {
    static let magic: [UInt8] = Array("KHBRIDX\0".utf8)
    static let version: UInt32 = 1
    static let headerSize = 128

    enum Kind: UInt32, Sendable {
        case compact = 1
        case full = 2
    }

    static let fullBucketBits = 16
    static let fullRecordSize = 22
    static let blockSize = 128
    static let countCodeBits = 4

    /// Bucket bits for a compact index of about `n` hashes: 4–8 per bucket.
    static func compactBucketBits(for n: Int) -> Int {
        guard n > 1 else { return 8 }
        let log2n = 63 - UInt64(n).leadingZeroBitCount
        return min(max(log2n - 2, 8), 40)
    }

    /// A bucket size of 15 or more is stored as this nibble and looked up in the overflow table.
    static let escape = 15

    /// `min(15, ⌊log2 count⌋)`.
    static func countCode(_ count: UInt32) -> UInt64 {
        guard count > 1 else { return 0 }
        return UInt64(min(15, 31 - count.leadingZeroBitCount))
    }

    /// The count a code stands for: the lower end of its range (1, 2, 4, … 32768).
    static func count(forCode code: UInt64) -> Int { 1 << Int(code) }

    static func fnv1a(_ bytes: some Sequence<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in bytes {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
        }
        return hash
    }
}
