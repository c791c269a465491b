public import BreachCheck
public import Foundation
public import _KeyhavenSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a server's buckets come from: in memory (``BreachPSIBuckets``) or a bucket file on disk
/// (``BreachPSIBucketFile``).
public protocol BreachPSIBucketSource: Sendable {
    /// The sorted entries of bucket `prefix` (empty for a prefix ≥ 2^15).
    func bucket(_ prefix: UInt16) throws(BreachPSIError) -> [UInt64]
    /// Entries over all buckets.
    var count: Int { get }
}

extension BreachPSIBuckets: BreachPSIBucketSource {
    public func bucket(_ prefix: UInt16) throws(BreachPSIError) -> [UInt64] {
        Array(entries(prefix: prefix))
    }
}

/// The server's bucket file (`buckets.khpsi`, written by ``BreachPSIBucketFileBuilder``): a
/// header, an offset table and the entries grouped by bucket, so that a bucket is served by
/// reading only its own bytes. Open, it holds the offset table (256 KiB) and a file descriptor:
/// memory does not grow with the corpus.
///
/// | offset | size | field |
/// |---|---|---|
/// | 0 | 8 | magic `KHPSIBKT` |
/// | 8 | 1 | version (1) |
/// | 9 | 1 | prefix bits (15) |
/// | 10 | 1 | entry length (8) |
/// | 11 | 5 | zero |
/// | 16 | 16 | the key ID the entries were computed under |
/// | 32 | 8 · (2^15 + 1) | entry index where each bucket starts, big-endian; the last is the count |
/// | 262,184 | 8 · *n* | entries, big-endian, ascending within each bucket |
public final class BreachPSIBucketFile: BreachPSIBucketSource {
    static let magic = Array("KHPSIBKT".utf8)
    static let headerLength = 32
    static let tableLength = 8 * (BreachPSI.bucketCount + 1)
    static let entriesOffset = headerLength + tableLength

    /// The ID of the key the entries belong to (a server refuses a file of another key).
    public let keyID: [UInt8]
    /// Entries over all buckets.
    public let count: Int
    /// The largest bucket's size.
    public let largestBucket: Int
    let starts: [UInt64]
    let descriptor: Int32
    let path: String

    /// Opens and checks a bucket file: its header (reserved bytes zero), that the table never
    /// decreases, that no bucket holds more than ``BreachPSI/maximumBucketEntries`` and that the
    /// file is exactly as long as the table says.
    public init(url: URL) throws(BreachPSIError) {
        path = url.path
        let descriptor = open(url.path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw BreachPSIError(
                .io,
                "cannot open the bucket file \(url.path); build it with `keyhaven breach psi build`"
            )
        }
        var ok = false
        defer { if !ok { close(descriptor) } }
        var header = [UInt8](repeating: 0, count: Self.entriesOffset)
        guard Self.readFully(descriptor, into: &header, at: 0) else {
            throw BreachPSIError(.io, "\(url.path) is shorter than a bucket file's header; rebuild it")
        }
        guard Array(header[0..<8]) == Self.magic else {
            throw BreachPSIError(.io, "\(url.path) is not a Keyhaven breach-PSI bucket file")
        }
        guard header[8] == BreachPSI.version, Int(header[9]) == BreachPSI.prefixBits,
            Int(header[10]) == BreachPSI.entryLength
        else {
            throw BreachPSIError(
                .unsupportedVersion,
                "\(url.path) is bucket file version \(header[8]) (\(header[9])-bit prefixes, \(header[10])-byte entries); this build reads version 1 (15, 8)"
            )
        }
        guard header[11..<16].allSatisfy({ $0 == 0 }) else {
            throw BreachPSIError(.io, "\(url.path): the header's reserved bytes are not zero; rebuild the file")
        }
        keyID = Array(header[16..<32])
        var starts: [UInt64] = []
        starts.reserveCapacity(BreachPSI.bucketCount + 1)
        var largest: UInt64 = 0
        for bucket in 0...BreachPSI.bucketCount {
            let base = Self.headerLength + bucket * 8
            let start = header[base..<base + 8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            if let last = starts.last {
                guard start >= last else {
                    throw BreachPSIError(
                        .io,
                        "\(url.path): bucket \(bucket) starts before the one before it; rebuild the file"
                    )
                }
                guard start - last <= UInt64(BreachPSI.maximumBucketEntries) else {
                    throw BreachPSIError(
                        .oversizedBucket,
                        "\(url.path): bucket \(bucket - 1) holds \(start - last) entries, more than a client accepts (\(BreachPSI.maximumBucketEntries)); rebuild the file"
                    )
                }
                largest = max(largest, start - last)
            } else if start != 0 {
                throw BreachPSIError(.io, "\(url.path): the first bucket does not start at 0; rebuild the file")
            }
            starts.append(start)
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw BreachPSIError(.io, "cannot read the size of \(url.path)") }
        let size = UInt64(status.st_size)
        let total = starts.last!
        guard total <= (size / 8), UInt64(Self.entriesOffset) + total * 8 == size else {
            throw BreachPSIError(
                .io,
                "\(url.path) is \(size) bytes but its table says \(total) entries: truncated or damaged; rebuild it"
            )
        }
        self.starts = starts
        self.descriptor = descriptor
        count = Int(total)
        largestBucket = Int(largest)
        ok = true
    }

    deinit { close(descriptor) }

    /// Bucket `prefix`'s entries, read from the file (one `pread` of its bytes).
    public func bucket(_ prefix: UInt16) throws(BreachPSIError) -> [UInt64] {
        let bucket = Int(prefix)
        guard bucket < BreachPSI.bucketCount else { return [] }
        let start = Int(starts[bucket])
        let length = Int(starts[bucket + 1]) - start
        guard length > 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: length * 8)
        guard Self.readFully(descriptor, into: &bytes, at: Self.entriesOffset + start * 8) else {
            throw BreachPSIError(.io, "the bucket file \(path) could not be read (was it replaced or cut short?)")
        }
        var entries = [UInt64](repeating: 0, count: length)
        bytes.withUnsafeBytes { raw in
            for index in 0..<length {
                entries[index] = UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: index * 8, as: UInt64.self))
            }
        }
        return entries
    }

    /// `pread`s until `buffer` is full; false at end of file or on an error.
    static func readFully(_ descriptor: Int32, into buffer: inout [UInt8], at offset: Int) -> Bool {
        var done = 0
        let total = buffer.count
        return buffer.withUnsafeMutableBytes { raw in
            while done < total {
                let read = pread(descriptor, raw.baseAddress! + done, total - done, off_t(offset + done))
                if read < 0 && errno == EINTR { continue }
                guard read > 0 else { return false }
                done += read
            }
            return true
        }
    }
}

/// Writes a bucket file from a corpus in bounded memory.
///
/// The buckets are built in slices (``BreachPSIBucketBuilder``'s `buckets:`): each slice reads
/// the corpus once, evaluates the OPRF only for its own digests (the others cost a SHA-256) and
/// keeps 8 bytes per entry of the slice. The number of slices is the estimated entries times 16
/// bytes over `memoryLimit` (an array of 8-byte entries, and its sorted copy at worst), so memory
/// stays near `memoryLimit` plus the 256 KiB table whatever the corpus's size. The file is written
/// under a temporary name beside the output and renamed into place when complete: an interrupted
/// build leaves the old file (if any) as it was, and starts over when run again.
public struct BreachPSIBucketFileBuilder {
    public let key: BreachPSIServerKey
    /// Bytes of entries kept at once.
    public var memoryLimit: Int

    public init(key: BreachPSIServerKey, memoryLimit: Int = 1 << 30) {
        self.key = key
        self.memoryLimit = max(memoryLimit, 16)
    }

    /// What a build did.
    public struct Report: Sendable {
        /// Entries written (digests, less repeats).
        public var entries: Int
        /// Digests read in the last pass.
        public var digests: Int
        /// Passes over the corpus.
        public var passes: Int
        public var largestBucket: Int
        public var bytes: Int
    }

    /// The slices for `estimatedCount` digests.
    public func passes(estimatedCount: Int) -> Int {
        let needed = (estimatedCount * 16 + memoryLimit - 1) / memoryLimit
        return min(max(needed, 1), BreachPSI.bucketCount)
    }

    /// Builds `output` from a corpus that `read` streams (called once per pass with the function to
    /// give each digest to). `progress` gets (pass, passes, digests read in this pass).
    public func build(
        estimatedCount: Int,
        output: URL,
        read: (_ add: (SHA1Digest) -> Void) throws -> Void,
        progress: @escaping (_ pass: Int, _ passes: Int, _ digests: Int) -> Void = { _, _, _ in }
    ) throws -> Report {
        let passes = passes(estimatedCount: estimatedCount)
        let temporary = output.deletingLastPathComponent().appendingPathComponent(
            ".\(output.lastPathComponent).building-\(UUID().uuidString)"
        )
        guard FileManager.default.createFile(atPath: temporary.path, contents: nil) else {
            throw BreachPSIError(.io, "cannot create \(temporary.path); is the output directory writable?")
        }
        var complete = false
        defer { if !complete { try? FileManager.default.removeItem(at: temporary) } }
        let handle = try FileHandle(forWritingTo: temporary)
        defer { try? handle.close() }
        // The table is written last: zeros hold its place.
        try handle.write(contentsOf: Data(count: BreachPSIBucketFile.entriesOffset))
        var starts: [UInt64] = [0]
        starts.reserveCapacity(BreachPSI.bucketCount + 1)
        var digests = 0
        var largest = 0
        for pass in 0..<passes {
            let lower = BreachPSI.bucketCount * pass / passes
            let upper = BreachPSI.bucketCount * (pass + 1) / passes
            var builder = BreachPSIBucketBuilder(key: key, buckets: lower..<upper)
            var failure: BreachPSIError?
            digests = 0
            try read { digest in
                guard failure == nil else { return }
                do throws(BreachPSIError) {
                    try builder.add(digest)
                } catch {
                    failure = error
                }
                digests += 1
                if digests & 0xFFF == 0 { progress(pass, passes, digests) }
            }
            if let failure { throw failure }
            progress(pass, passes, digests)
            let buckets = builder.finish()
            for bucket in lower..<upper {
                let slice = buckets.entries(prefix: UInt16(bucket))
                largest = max(largest, slice.count)
                starts.append(starts.last! + UInt64(slice.count))
            }
            // Written in chunks so that the encoded copy stays small.
            let all = buckets.entries
            var at = 0
            while at < all.count {
                let end = min(at + 65_536, all.count)
                var chunk = Data(capacity: (end - at) * 8)
                for entry in all[at..<end] {
                    withUnsafeBytes(of: entry.bigEndian) { chunk.append(contentsOf: $0) }
                }
                try handle.write(contentsOf: chunk)
                at = end
            }
        }
        // An empty corpus (a wrong file) must not replace a good bucket file.
        guard digests > 0 else {
            throw BreachPSIError(.emptyInput, "the input holds no SHA-1; nothing was written")
        }
        // Clients refuse a bucket over the limit: such a file would only ever answer errors.
        guard largest <= BreachPSI.maximumBucketEntries else {
            throw BreachPSIError(
                .oversizedBucket,
                "a bucket would hold \(largest) entries, more than a client accepts (\(BreachPSI.maximumBucketEntries)); nothing was written"
            )
        }
        var header = Data(BreachPSIBucketFile.magic)
        header += [BreachPSI.version, UInt8(BreachPSI.prefixBits), UInt8(BreachPSI.entryLength), 0, 0, 0, 0, 0]
        header += key.publicKey.id
        for start in starts {
            withUnsafeBytes(of: start.bigEndian) { header.append(contentsOf: $0) }
        }
        try handle.seek(toOffset: 0)
        try handle.write(contentsOf: header)
        try handle.synchronize()
        try handle.close()
        // rename(2) replaces an older file atomically: a server that has it open keeps reading it.
        guard rename(temporary.path, output.path) == 0 else {
            throw BreachPSIError(.io, "cannot move the new bucket file to \(output.path)")
        }
        complete = true
        let total = Int(starts.last!)
        return Report(
            entries: total,
            digests: digests,
            passes: passes,
            largestBucket: largest,
            bytes: BreachPSIBucketFile.entriesOffset + total * 8
        )
    }
}
