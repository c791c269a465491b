public import Foundation

/// The device's list of the most common leaked passwords (issue 29, item 3): the `top` SHA-1s of a
/// Pwned Passwords file with the highest counts, written as a compact breach index (64-bit
/// prefixes and power-of-two counts, about 6 bytes per hash: ~6 MB for a million). `keyhaven audit
/// --breach-psi URL` looks passwords up in it first, with no network, and sends only the rest to the
/// breach-PSI server.
///
/// Selecting is one pass over the text with a min-heap of the `top` most common hashes so far
/// (16 bytes each: 16 MB for a million, sorted in place afterwards), whatever the file's size.
/// Equal counts at the cut keep the lower hashes, so the list does not depend on the file's order.
/// A hash listed twice takes one place, with its larger count (Pwned Passwords lists each hash
/// once; a file that repeats kept hashes costs another pass for each round of repeats found).
public struct BreachTopListBuilder: Sendable {
    public static let defaultTop = 1_000_000
    /// 1.6 GB of heap: more is a full index's job (`breach index build --compact`).
    public static let maximumTop = 100_000_000

    /// What the pass over the text found, ready to be written.
    public struct Selection: Sendable {
        /// The selected hashes' 64-bit prefixes with their counts, sorted by prefix, each once.
        var entries: [TopHeap.Item]
        /// Lines read, malformed lines (skipped) and the first 20 of them by number.
        public var lines: Int
        public var badLines: Int
        public var badLineSamples: [(line: Int, reason: String)]
        /// Good lines (hashes) read.
        public var hashesRead: Int
        /// The smallest count kept (0 when nothing was read): a password seen fewer times is not on the list.
        public var smallestCount: Int
        public var hashes: Int { entries.count }
    }

    /// Progress: work done and total (bytes while reading, entries while writing).
    public typealias Progress = @Sendable (_ phase: String, _ done: Int, _ total: Int) -> Void

    public let top: Int

    /// `top` must be 1 ... ``maximumTop``.
    public init(top: Int = defaultTop) throws(BreachError) {
        guard top >= 1, top <= Self.maximumTop else {
            throw BreachError(.invalidInput, "the list's size must be 1 to \(Self.maximumTop) hashes (got \(top))")
        }
        self.top = top
    }

    /// Reads the Pwned Passwords text file at `input` (`SHA1:COUNT` lines) and keeps its `top` most
    /// common hashes.
    public func select(input: URL, progress: Progress? = nil) throws(BreachError) -> Selection {
        guard let handle = FileHandle(forReadingAtPath: input.path) else {
            throw BreachError(.io, "cannot read \(input.path); give a Pwned Passwords text file (SHA1:COUNT lines)")
        }
        defer { try? handle.close() }
        let head = (try? handle.read(upToCount: BreachIndexFormat.magic.count)) ?? nil
        if let head, Array(head) == BreachIndexFormat.magic {
            throw BreachError(
                .invalidInput,
                "\(input.path) is a breach index; the list is selected by count from the Pwned Passwords text file (SHA1:COUNT lines)"
            )
        }
        let totalBytes =
            (try? FileManager.default.attributesOfItem(atPath: input.path)[.size] as? NSNumber)?.intValue ?? 0
        // A hash listed twice must not take two places. The heap cannot look its items up, so a pass
        // that kept a hash twice is repeated with that hash set aside (its largest count offered once,
        // after the pass) until no kept hash repeats: one pass for a file that lists each hash once,
        // as Pwned Passwords does.
        var repeated: [UInt64: UInt32] = [:]
        while true {
            try? handle.seek(toOffset: 0)
            var pass = try onePass(handle, input: input, setAside: &repeated, totalBytes: totalBytes, progress)
            // The heap's own array, sorted and deduplicated in place: no second copy (16 bytes a
            // hash at the peak).
            var items = pass.heap.items
            pass.heap = TopHeap(capacity: 0)
            items.sort { $0.prefix < $1.prefix }
            var kept = 0
            var again = false
            for index in items.indices {
                if kept > 0, items[kept - 1].prefix == items[index].prefix {
                    repeated[items[index].prefix] = max(items[kept - 1].count, items[index].count)
                    again = true
                } else {
                    items[kept] = items[index]
                    kept += 1
                }
            }
            guard !again else { continue }
            return Selection(
                entries: items,
                lines: pass.reader.line,
                badLines: pass.badLines,
                badLineSamples: pass.samples,
                hashesRead: pass.good,
                smallestCount: Int(items.lazy.map(\.count).min() ?? 0)
            )
        }
    }

    /// One pass over the text: the heap of the most common hashes, each hash of `setAside` offered
    /// once after the pass with its largest count (which the pass updates).
    func onePass(
        _ handle: FileHandle,
        input: URL,
        setAside: inout [UInt64: UInt32],
        totalBytes: Int,
        _ progress: Progress?
    ) throws(BreachError) -> (heap: TopHeap, reader: HIBPLineReader, badLines: Int, good: Int, samples: [(Int, String)])
    {
        var heap = TopHeap(capacity: top)
        var reader = HIBPLineReader(handle: handle)
        var badLines = 0
        var good = 0
        var samples: [(Int, String)] = []
        var aside = setAside
        do {
            try reader.read(
                entry: { digest, count in
                    good += 1
                    let prefix = digest.high64
                    if let known = aside[prefix] {
                        aside[prefix] = max(known, count)
                    } else {
                        heap.offer(TopHeap.Item(prefix: prefix, count: count))
                    }
                },
                bad: { line in
                    badLines += 1
                    if samples.count < 20 { samples.append((line.line, line.reason)) }
                },
                progress: { progress?("reading", $0, totalBytes) }
            )
        } catch {
            throw BreachError(.io, "reading \(input.path) failed: \(error.localizedDescription)")
        }
        for (prefix, count) in aside { heap.offer(TopHeap.Item(prefix: prefix, count: count)) }
        setAside = aside
        return (heap, reader, badLines, good, samples)
    }

    /// Throws unless `output` is absent or a regular file (which ``write(_:to:progress:)`` replaces):
    /// a directory, say, is refused before the long pass over the text, and never deleted.
    public static func checkOutput(_ output: URL) throws(BreachError) {
        try IndexWriter.refuseUnlessRegularFile(output)
    }

    /// Writes `selection` as a compact index at `output` (under a temporary name, renamed into
    /// place with rename(2) when complete; an existing output that is not a regular file is
    /// refused); returns its size in bytes. An empty selection is an error: nothing is
    /// written and an older list stays.
    public func write(_ selection: Selection, to output: URL, progress: Progress? = nil) throws(BreachError) -> Int {
        guard !selection.entries.isEmpty else {
            throw BreachError(
                .invalidInput,
                "no valid `SHA1:COUNT` line was read (\(selection.badLines) malformed): nothing was written"
            )
        }
        try IndexWriter.replacing(output) { temporary in
            var writer = try IndexWriter(kind: .compact, url: temporary, expectedCount: selection.entries.count)
            for (done, entry) in selection.entries.enumerated() {
                try writer.append(Entry(a: entry.prefix, b: 0, c: 0, count: entry.count), entry.count)
                if done & 0xFFFF == 0xFFFF { progress?("writing", done + 1, selection.entries.count) }
            }
            _ = try writer.finish()
        }
        progress?("writing", selection.entries.count, selection.entries.count)
        return (try? FileManager.default.attributesOfItem(atPath: output.path)[.size] as? NSNumber)?.intValue ?? 0
    }
}

/// A min-heap of at most `capacity` items whose root is the least common kept so far.
struct TopHeap {
    struct Item {
        var prefix: UInt64
        var count: UInt32

        /// Less common: a lower count, or the same count and a higher prefix (a cut that does not
        /// depend on the input's order).
        func isBelow(_ other: Item) -> Bool {
            count != other.count ? count < other.count : prefix > other.prefix
        }
    }

    let capacity: Int
    var items: [Item] = []

    init(capacity: Int) {
        self.capacity = capacity
        items.reserveCapacity(min(capacity, 1 << 20))
    }

    mutating func offer(_ item: Item) {
        if items.count < capacity {
            items.append(item)
            // Up while below its parent.
            var child = items.count - 1
            while child > 0, items[child].isBelow(items[(child - 1) / 2]) {
                items.swapAt(child, (child - 1) / 2)
                child = (child - 1) / 2
            }
        } else if items[0].isBelow(item) {
            items[0] = item
            // Down while a child is below it, swapping with the lower child.
            var parent = 0
            while 2 * parent + 1 < items.count {
                let first = 2 * parent + 1
                let lower = first + 1 < items.count && items[first + 1].isBelow(items[first]) ? first + 1 : first
                guard items[lower].isBelow(items[parent]) else { break }
                items.swapAt(parent, lower)
                parent = lower
            }
        }
    }
}
