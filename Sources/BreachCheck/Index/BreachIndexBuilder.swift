public import Foundation

/// Builds a breach index from a Pwned Passwords download, in bounded memory.
///
/// The input is read once, in order; entries are collected into runs of at most
/// `memoryLimit` bytes, each run sorted and (when there is more than one) spilled to a temporary
/// file beside the output; the runs are then merged (a k-way merge with a heap) straight into the
/// index. Duplicate hashes are merged by adding their counts. A multi-billion-line unsorted file
/// therefore needs `memoryLimit` of RAM plus one bucket-size byte per ~8 hashes, and temporary disk
/// about 12 (compact) or 24 (full) bytes per hash.
public struct BreachIndexBuilder: Sendable {
    public enum Kind: Sendable {
        case compact
        case full
    }

    /// What a build did.
    public struct Report: Sendable {
        public var hashes: Int
        public var lines: Int
        public var badLines: Int
        /// The first malformed lines (at most 20), by number, with the reason.
        public var badLineSamples: [(line: Int, reason: String)]
        public var bytes: Int
        public var seconds: Double
        public var runs: Int
    }

    /// Progress callbacks: a phase name, work done and total (bytes while reading, entries while
    /// writing).
    public typealias Progress = @Sendable (_ phase: String, _ done: Int, _ total: Int) -> Void

    public var kind: Kind
    public var memoryLimit: Int

    public init(kind: Kind = .full, memoryLimit: Int = 1 << 30) {
        self.kind = kind
        self.memoryLimit = max(memoryLimit, 1 << 16)
    }

    /// Builds the index at `output` from the text file at `input`. The output is written under a
    /// temporary name and renamed into place (rename(2), atomic) when complete; an existing output
    /// that is not a regular file (a directory) is refused before anything is read.
    public func build(input: URL, output: URL, progress: Progress? = nil) throws(BreachError) -> Report {
        let start = Date()
        try IndexWriter.refuseUnlessRegularFile(output)
        guard let handle = FileHandle(forReadingAtPath: input.path) else {
            throw BreachError(.io, "cannot read \(input.path)")
        }
        defer { try? handle.close() }
        let totalBytes =
            (try? FileManager.default.attributesOfItem(atPath: input.path)[.size] as? NSNumber)?.intValue ?? 0
        let scratch = output.deletingLastPathComponent().appendingPathComponent(
            ".\(output.lastPathComponent).runs-\(UUID().uuidString)"
        )
        defer { try? FileManager.default.removeItem(at: scratch) }

        var runs = RunSet(kind: kind, capacity: memoryLimit / (kind == .compact ? 16 : 32), scratch: scratch)
        var reader = HIBPLineReader(handle: handle)
        var badLines = 0
        var samples: [(Int, String)] = []
        do {
            try reader.read(
                entry: { digest, count in runs.add(digest, count) },
                bad: { line in
                    badLines += 1
                    if samples.count < 20 { samples.append((line.line, line.reason)) }
                },
                progress: { progress?("reading", $0, totalBytes) }
            )
            try runs.flushIfSpilled()
        } catch let error as BreachError {
            throw error
        } catch {
            throw BreachError(.io, "reading \(input.path) failed: \(error.localizedDescription)")
        }
        guard runs.total > 0 else {
            throw BreachError(.invalidInput, "\(input.path) has no valid `SHA1:COUNT` line (\(badLines) malformed)")
        }

        let total = runs.total
        let hashes = try IndexWriter.replacing(output) { temporary in
            var writer = try IndexWriter(kind: kind, url: temporary, expectedCount: total)
            try runs.merge { key, count in
                try writer.append(key, count)
            } progress: { done in
                progress?("writing", done, total)
            }
            return try writer.finish()
        }
        let size = (try? FileManager.default.attributesOfItem(atPath: output.path)[.size] as? NSNumber)?.intValue ?? 0
        return Report(
            hashes: hashes,
            lines: reader.line,
            badLines: badLines,
            badLineSamples: samples,
            bytes: size,
            seconds: Date().timeIntervalSince(start),
            runs: runs.runCount
        )
    }
}

/// A sortable index entry: the hash (or its first 64 bits) and the count.
struct Entry: Comparable {
    var a: UInt64
    var b: UInt64  // compact: 0
    var c: UInt32  // bytes 16 ..< 20 (full)
    var count: UInt32

    static func < (lhs: Entry, rhs: Entry) -> Bool {
        if lhs.a != rhs.a { return lhs.a < rhs.a }
        if lhs.b != rhs.b { return lhs.b < rhs.b }
        return lhs.c < rhs.c
    }

    static func == (lhs: Entry, rhs: Entry) -> Bool { lhs.a == rhs.a && lhs.b == rhs.b && lhs.c == rhs.c }

    init(_ digest: SHA1Digest, count: UInt32, full: Bool) {
        let bytes = digest.bytes
        a = bytes[0..<8].reduce(0) { $0 << 8 | UInt64($1) }
        b = full ? bytes[8..<16].reduce(0) { $0 << 8 | UInt64($1) } : 0
        c = full ? bytes[16..<20].reduce(0) { $0 << 8 | UInt32($1) } : 0
        self.count = count
    }

    init(a: UInt64, b: UInt64, c: UInt32, count: UInt32) {
        self.a = a
        self.b = b
        self.c = c
        self.count = count
    }
}

/// Sorted runs: in memory while they fit, spilled to files otherwise.
struct RunSet {
    let kind: BreachIndexBuilder.Kind
    let capacity: Int
    let scratch: URL
    var current: [Entry] = []
    var files: [URL] = []
    var total = 0
    var runCount: Int { max(files.count, 1) }

    init(kind: BreachIndexBuilder.Kind, capacity: Int, scratch: URL) {
        self.kind = kind
        self.capacity = capacity
        self.scratch = scratch
        current.reserveCapacity(min(capacity, 1 << 20))
    }

    mutating func add(_ digest: SHA1Digest, _ count: UInt32) {
        current.append(Entry(digest, count: count, full: kind == .full))
        total += 1
        if current.count >= capacity {
            do { try spill() } catch { spillError = error }
        }
    }

    var spillError: (any Error)?

    mutating func spill() throws {
        if let spillError { throw spillError }
        guard !current.isEmpty else { return }
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        current.sort()
        let url = scratch.appendingPathComponent("run-\(files.count)")
        let data = current.withUnsafeBufferPointer { Data(buffer: $0) }
        try data.write(to: url)
        files.append(url)
        current.removeAll(keepingCapacity: true)
    }

    /// Spills the last run when earlier ones were spilled (so that all runs are files).
    mutating func flushIfSpilled() throws {
        if let spillError { throw spillError }
        if !files.isEmpty { try spill() }
    }

    /// Merges all runs in order, adding the counts of equal entries.
    mutating func merge(_ output: (Entry, UInt32) throws -> Void, progress: (Int) -> Void) throws {
        var done = 0
        var pending: Entry?
        func emit(_ entry: Entry) throws {
            if var last = pending, last == entry {
                last.count = last.count &+ entry.count < last.count ? .max : last.count + entry.count
                pending = last
                return
            }
            if let last = pending { try output(last, last.count) }
            pending = entry
            done += 1
            if done & 0xFFFFF == 0 { progress(done) }
        }
        if files.isEmpty {
            current.sort()
            for entry in current { try emit(entry) }
        } else {
            var readers = try files.map { try RunReader(url: $0) }
            var heap = MergeHeap()
            for (index, reader) in readers.enumerated() {
                if let first = reader.peek { heap.push(first, source: index) }
            }
            while let (entry, source) = heap.pop() {
                try emit(entry)
                readers[source].advance()
                if let next = readers[source].peek { heap.push(next, source: source) }
            }
        }
        if let last = pending { try output(last, last.count) }
        progress(done)
    }
}

/// Reads one spilled run with a buffer.
struct RunReader {
    let handle: FileHandle
    var buffer: [Entry] = []
    var index = 0

    init(url: URL) throws {
        guard let handle = FileHandle(forReadingAtPath: url.path) else {
            throw BreachError(.io, "cannot read the temporary run \(url.lastPathComponent)")
        }
        self.handle = handle
        refill()
    }

    var peek: Entry? { index < buffer.count ? buffer[index] : nil }

    mutating func advance() {
        index += 1
        if index >= buffer.count { refill() }
    }

    mutating func refill() {
        let stride = MemoryLayout<Entry>.stride
        let data = (try? handle.read(upToCount: stride * 65_536)) ?? Data()
        buffer = data.withUnsafeBytes { raw in
            Array(raw.bindMemory(to: Entry.self).prefix(data.count / stride))
        }
        index = 0
    }
}

/// A binary min-heap of (entry, run).
struct MergeHeap {
    var items: [(Entry, Int)] = []

    mutating func push(_ entry: Entry, source: Int) {
        items.append((entry, source))
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard items[child].0 < items[parent].0 else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() -> (Entry, Int)? {
        guard !items.isEmpty else { return nil }
        let top = items[0]
        let last = items.removeLast()
        if !items.isEmpty {
            items[0] = last
            var parent = 0
            while true {
                let left = parent * 2 + 1
                let right = left + 1
                var smallest = parent
                if left < items.count && items[left].0 < items[smallest].0 { smallest = left }
                if right < items.count && items[right].0 < items[smallest].0 { smallest = right }
                if smallest == parent { break }
                items.swapAt(parent, smallest)
                parent = smallest
            }
        }
        return top
    }
}
