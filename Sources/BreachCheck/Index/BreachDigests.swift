public import Foundation

/// Every leaked SHA-1 of a corpus, streamed: what `keyhaven breach psi build` reads, from either
/// input the other `breach` commands take (a full index or HIBP's text file). Nothing is kept in
/// memory but the reader's buffer, so a caller can read the corpus several times (one pass per
/// slice of buckets).
public enum BreachDigests {
    /// A corpus to stream.
    public enum Source: Sendable {
        /// A full breach index (a compact one keeps only 64 bits of each hash and cannot give them back).
        case index(BreachIndex)
        /// A Pwned Passwords text file (`SHA1:COUNT` lines).
        case hibpFile(URL)
    }

    /// Opens `path`: a breach index when its file starts with the index's magic, else a text file.
    public static func source(path: String) throws(BreachError) -> Source {
        let url = URL(fileURLWithPath: path)
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw BreachError(.io, "cannot read \(path); give a breach index or a Pwned Passwords text file")
        }
        let head = (try? handle.read(upToCount: BreachIndexFormat.magic.count)) ?? nil
        try? handle.close()
        guard let head, Array(head) == BreachIndexFormat.magic else { return .hibpFile(url) }
        let index = try BreachIndex(url: url)
        guard index.kind == .full else {
            throw BreachError(
                .needsFullIndex,
                "\(path) is a compact index (64-bit prefixes): it cannot give back whole SHA-1s; "
                    + "use a full index or the Pwned Passwords text file"
            )
        }
        return .index(index)
    }

    /// An upper bound of the digests `source` holds, for sizing passes before reading it: an
    /// index's count, or a text file's size over the shortest line (`40 hex digits:1\n`, 43 bytes).
    public static func estimatedCount(_ source: Source) -> Int {
        switch source {
        case .index(let index): return index.count
        case .hibpFile(let url):
            let size = (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.intValue ?? 0
            return size / 43 + 1
        }
    }

    /// Calls `body` for every digest of `source`, in the source's order. Malformed lines of a text
    /// file go to `bad` (line number, reason) and are skipped; `progress` gets bytes (text) or
    /// hashes (index) done and the total.
    public static func forEach(
        in source: Source,
        bad: (Int, String) -> Void = { _, _ in },
        progress: (Int, Int) -> Void = { _, _ in },
        _ body: (SHA1Digest) -> Void
    ) throws(BreachError) {
        switch source {
        case .index(let index):
            try index.forEachDigest(progress: progress, body)
        case .hibpFile(let url):
            guard let handle = FileHandle(forReadingAtPath: url.path) else {
                throw BreachError(.io, "cannot read \(url.path)")
            }
            defer { try? handle.close() }
            let total = estimatedCount(source) * 43
            var reader = HIBPLineReader(handle: handle)
            do {
                try reader.read(
                    entry: { digest, _ in body(digest) },
                    bad: { bad($0.line, $0.reason) },
                    progress: { progress($0, total) }
                )
            } catch {
                throw BreachError(.io, "reading \(url.path) failed: \(error.localizedDescription)")
            }
        }
    }
}

extension BreachIndex {
    /// Calls `body` for every hash of a full index, in order (the 16-bit bucket, then the record's
    /// 18 bytes).
    public func forEachDigest(
        progress: (Int, Int) -> Void = { _, _ in },
        _ body: (SHA1Digest) -> Void
    ) throws(BreachError) {
        guard kind == .full else {
            throw BreachError(.needsFullIndex, "a compact index keeps 64 bits of each hash; use a full index")
        }
        var done = 0
        for bucket in 0..<(1 << BreachIndexFormat.fullBucketBits) {
            let start = fullBucketStart(bucket)
            let end = fullBucketStart(bucket + 1)
            var bytes = [UInt8(bucket >> 8), UInt8(bucket & 0xFF)]
            for record in start..<end {
                let base = recordsOffset + record * BreachIndexFormat.fullRecordSize
                bytes.removeSubrange(2...)
                bytes.append(contentsOf: file.bytes[base..<base + 18])
                body(SHA1Digest(bytes: bytes)!)
                done += 1
            }
            if bucket & 0xFFF == 0xFFF { progress(done, count) }
        }
    }
}
