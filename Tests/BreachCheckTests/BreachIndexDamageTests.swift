import BreachCheck
import Foundation
import KeyhavenTesting
import Testing

/// Truncated, damaged and crafted index files (review: "crafted breach index files"): each is a
/// `BreachError` with a code, at open or at lookup, never a crash or a read outside the file. The
/// crafted headers carry a correct checksum, as an attacker's would.
@Suite(.offCooperativePool)
struct BreachIndexDamageTests {
    /// Small real indexes built by the builder: a compact one with a crowded bucket (so it has an
    /// overflow table) and a full one.
    struct Built {
        var directory: URL
        var compact: Data
        var full: Data
        var digests: [SHA1Digest]
    }

    static func build() throws -> Built {
        let directory = try TemporaryDirectory.make()
        var rng = SeededRandomNumberGenerator(seed: 77)
        let hexDigits = Array("0123456789ABCDEF")
        func random(_ count: Int) -> String { String((0..<count).map { _ in hexDigits.randomElement(using: &rng)! }) }
        var hexes = (0..<3000).map { _ in random(40) }
        hexes += (0..<40).map { _ in "ABCDEF0123" + random(30) }
        let source = directory.appendingPathComponent("pwned.txt")
        try Data(hexes.enumerated().map { "\($1):\($0 + 1)" }.joined(separator: "\n").utf8).write(to: source)
        let compact = directory.appendingPathComponent("compact.khbi")
        let full = directory.appendingPathComponent("full.khbi")
        _ = try BreachIndexBuilder(kind: .compact).build(input: source, output: compact)
        _ = try BreachIndexBuilder(kind: .full).build(input: source, output: full)
        return Built(
            directory: directory,
            compact: try Data(contentsOf: compact),
            full: try Data(contentsOf: full),
            digests: hexes.map { SHA1Digest(hex: $0)! }
        )
    }

    // MARK: Crafting

    static func fnv1a(_ bytes: some Sequence<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        return hash
    }

    static func read(_ data: Data, at offset: Int) -> UInt64 {
        (0..<8).reduce(0) { $0 | UInt64(data[offset + $1]) << UInt64(8 * $1) }
    }

    static func put<T: FixedWidthInteger>(_ value: T, at offset: Int, in data: inout Data) {
        withUnsafeBytes(of: value.littleEndian) { raw in
            for (index, byte) in raw.enumerated() { data[offset + index] = byte }
        }
    }

    /// `data` with a header field changed and the header checksum made right again.
    static func crafted<T: FixedWidthInteger>(_ data: Data, _ value: T, at offset: Int) -> Data {
        var copy = data
        put(value, at: offset, in: &copy)
        resealed(&copy)
        return copy
    }

    static func resealed(_ data: inout Data) {
        put(fnv1a(data.prefix(112)), at: 112, in: &data)
    }

    /// Writes `data` and opens it: the error's code, or nil when it opened.
    static func openCode(_ data: Data, in directory: URL) throws -> (BreachIndex?, BreachError.Code?) {
        let url = directory.appendingPathComponent("crafted-\(UUID().uuidString).khbi")
        try data.write(to: url)
        do {
            return (try BreachIndex(url: url), nil)
        } catch {
            return (nil, error.code)
        }
    }

    // MARK: Tests

    @Test func truncatedAtAnyPointIsAnError() throws {
        let built = try Self.build()
        for data in [built.compact, built.full] {
            var cuts = [0, 1, 7, 8, 12, 64, 111, 112, 119, 127, 128, 129, 200, data.count / 2, data.count - 17]
            cuts += [data.count - 1]
            for cut in cuts {
                let (index, code) = try Self.openCode(data.prefix(cut), in: built.directory)
                #expect(index == nil, "cut at \(cut) opened")
                #expect(code == .notAnIndex || code == .truncated, "cut at \(cut): \(String(describing: code))")
            }
            // Truncated, with the header rewritten to the new size: the sections no longer fit.
            for cut in [129, 1000, data.count / 2, data.count - 17, data.count - 1] {
                let truncated = Self.crafted(data.prefix(cut), UInt64(cut), at: 104)
                let (index, code) = try Self.openCode(truncated, in: built.directory)
                #expect(index == nil && code == .corrupt, "crafted cut at \(cut): \(String(describing: code))")
            }
        }
    }

    @Test func craftedHeaderFieldsAreRefusedAtOpen() throws {
        let built = try Self.build()
        for data in [built.compact, built.full] {
            let size = UInt64(data.count)
            var cases: [(String, Data)] = []
            for (name, offset) in [("buckets", 40), ("blocks", 56), ("overflow", 72), ("records", 88)] {
                // An empty section (a full index has no blocks or overflow) may sit at the very end.
                let empty = Self.read(data, at: offset + 8) == 0
                for value in [UInt64.max, UInt64(Int.max), size + 1, size, 0, 64] where !(empty && value == size) {
                    cases.append(("\(name) offset \(value)", Self.crafted(data, value, at: offset)))
                }
                for value in [UInt64.max, UInt64(Int.max) + 1, size] {
                    cases.append(("\(name) length \(value)", Self.crafted(data, value, at: offset + 8)))
                }
            }
            for value in [UInt64.max, UInt64(Int.max) + 1, size, Self.read(data, at: 16) + 1] {
                cases.append(("count \(value)", Self.crafted(data, value, at: 16)))
            }
            for value: UInt32 in [0, 7, 41, 63, 64, 65, .max] {
                cases.append(("bucket bits \(value)", Self.crafted(data, value, at: 24)))
            }
            for offset in [28, 32] {
                for value: UInt32 in [0, 1, 65, 200, .max] {
                    cases.append(("bit width at \(offset) = \(value)", Self.crafted(data, value, at: offset)))
                }
            }
            for (name, crafted) in cases {
                let (index, code) = try Self.openCode(crafted, in: built.directory)
                #expect(index == nil, "\(name) opened")
                #expect(code == .corrupt, "\(name): \(String(describing: code))")
            }
            // A file size beyond any real file is the truncation message, not a trap converting it.
            let (_, sizeCode) = try Self.openCode(Self.crafted(data, UInt64.max, at: 104), in: built.directory)
            #expect(sizeCode == .truncated)
        }
    }

    @Test func craftedTablesAreRefusedAtOpen() throws {
        let built = try Self.build()
        // Full: the bucket-start table (65,537 entries) must rise from 0 to the hash count.
        let full = built.full
        let buckets = Int(Self.read(full, at: 40))
        let count = Self.read(full, at: 16)
        // The first non-empty bucket start, followed by a smaller one.
        let rising = try #require((1...65_535).first { Self.read(full, at: buckets + $0 * 8) > 0 })
        for (entry, value) in [
            (0, UInt64(1)), (1, UInt64.max), (30_000, count + 1), (65_536, count - 1), (rising + 1, 0),
        ] {
            var copy = full
            Self.put(value, at: buckets + entry * 8, in: &copy)
            let (index, code) = try Self.openCode(copy, in: built.directory)
            #expect(index == nil && code == .corrupt, "bucket \(entry) = \(value): \(String(describing: code))")
        }
        // Compact: block starts, and the overflow table of (bucket, size) pairs.
        let compact = built.compact
        let blocks = Int(Self.read(compact, at: 56))
        let overflow = Int(Self.read(compact, at: 72))
        let overflowLength = Int(Self.read(compact, at: 80))
        #expect(overflowLength >= 16, "the test index needs an overflow table")
        let bucketBits = Int(Self.read(compact, at: 24) & 0xFFFF_FFFF)
        var edits: [(String, Int, UInt64)] = [
            ("block 0", blocks, 1), ("block 1", blocks + 8, .max),
            ("last block", blocks + (1 << bucketBits) / 128 * 8, 0),
            ("overflow bucket", overflow, 1 << UInt64(bucketBits)), ("overflow size", overflow + 8, .max),
            ("overflow size under 15", overflow + 8, 3),
        ]
        if overflowLength >= 32 {
            edits.append(("overflow order", overflow + 16, 0))
        }
        for (name, offset, value) in edits {
            var copy = compact
            Self.put(value, at: offset, in: &copy)
            let (index, code) = try Self.openCode(copy, in: built.directory)
            #expect(index == nil && code == .corrupt, "\(name): \(String(describing: code))")
        }
        // A partial overflow entry.
        let partial = Self.crafted(compact, UInt64(overflowLength - 8), at: 80)
        #expect(try Self.openCode(partial, in: built.directory).1 == .corrupt)
    }

    /// Bucket sizes are only checked when a lookup sums them: a crafted size that runs past the
    /// records is `corrupt` from `count(of:)`, and so is an escaped size with no overflow entry.
    @Test func craftedBucketSizesFailTheLookupThatMeetsThem() throws {
        let built = try Self.build()
        let compact = built.compact
        let buckets = Int(Self.read(compact, at: 40))
        let bucketsLength = Int(Self.read(compact, at: 48))
        for nibbles: UInt8 in [0xEE, 0xFF, 0xE0] {
            var copy = compact
            for offset in buckets..<(buckets + bucketsLength) { copy[offset] = nibbles }
            let (opened, code) = try Self.openCode(copy, in: built.directory)
            let index = try #require(opened, "\(String(describing: code))")
            var damaged = 0
            for digest in built.digests {
                do {
                    _ = try index.count(of: digest)
                } catch {
                    #expect(error.code == .corrupt)
                    damaged += 1
                }
            }
            #expect(damaged > 0, "nibbles \(nibbles)")
        }
    }

    @Test func aRangeOutsideTheTwentyBitPrefixesIsInvalidInput() throws {
        let built = try Self.build()
        let (opened, _) = try Self.openCode(built.full, in: built.directory)
        let index = try #require(opened)
        #expect(throws: BreachError(.invalidInput, "")) { try index.range(prefix: 0x10_0000) }
        #expect(throws: BreachError(.invalidInput, "")) { try index.range(prefix: .max) }
        _ = try index.range(prefix: 0xF_FFFF)
    }

    /// Random damage anywhere in the file, with the header checksum made right again: every outcome
    /// is an open that fails with a code, or an index whose lookups and ranges answer or fail with a
    /// code. A read outside the file would trap here (the tests build with bounds checks).
    @Test(arguments: [false, true])
    func randomDamageNeverCrashes(_ full: Bool) throws {
        let built = try Self.build()
        let original = full ? built.full : built.compact
        var rng = SeededRandomNumberGenerator(seed: full ? 1 : 2)
        var outcomes: [String: Int] = [:]
        for round in 0..<300 {
            var copy = original
            for _ in 0..<Int.random(in: 1...8, using: &rng) {
                // Half the edits hit the header, where one byte moves a whole section.
                let offset =
                    Bool.random(using: &rng)
                    ? Int.random(in: 12..<104, using: &rng) : Int.random(in: 128..<copy.count, using: &rng)
                copy[offset] = UInt8.random(in: 0...255, using: &rng)
            }
            if round % 3 != 0 { Self.resealed(&copy) }
            let (opened, code) = try Self.openCode(copy, in: built.directory)
            guard let index = opened else {
                outcomes["open: \(code!)", default: 0] += 1
                continue
            }
            for digest in built.digests.prefix(200) {
                do {
                    _ = try index.count(of: digest)
                } catch {
                    outcomes["lookup: \(error.code)", default: 0] += 1
                }
            }
            if index.kind == .full {
                for prefix in stride(from: UInt32(0), through: 0xF_FFFF, by: 0x1_0001) {
                    _ = try index.range(prefix: prefix)
                }
            }
            outcomes["opened", default: 0] += 1
        }
        #expect(outcomes.keys.contains { $0.hasPrefix("open: ") })
    }
}
