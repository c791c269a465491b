import BreachCheck
import Foundation
import KeyhavenTesting
import Testing

/// Index build and lookup on generated Pwned-Passwords files: sorted and shuffled, LF and CRLF, with
/// broken lines; every present hash found with its count, none of 100,000 absent ones.
@Suite(.offCooperativePool)
struct BreachIndexTests {
    typealias Corpus = BreachCorpus

    static func corpus(size: Int, seed: UInt64) -> Corpus {
        BreachCorpus(size: size, seed: seed)
    }

    /// Writes the corpus in HIBP's text format, with `broken` malformed lines mixed in.
    static func write(
        _ corpus: Corpus,
        to url: URL,
        sorted: Bool,
        lineEnding: String,
        broken: [String] = [],
        seed: UInt64 = 1
    ) throws -> [Int] {
        try corpus.write(to: url, sorted: sorted, lineEnding: lineEnding, broken: broken, seed: seed)
    }

    static let broken = [
        "NOTAHASH:12",
        "ABCDEF:5",
        "\(String(repeating: "G", count: 40)):3",
        "\(String(repeating: "A", count: 40))-7",
        "\(String(repeating: "B", count: 40)):",
        "\(String(repeating: "C", count: 40)):12x",
        "\(String(repeating: "D", count: 40)):0",
    ]

    @Test(arguments: [
        (BreachIndexBuilder.Kind.full, true, "\n"),
        (.full, false, "\r\n"),
        (.compact, true, "\r\n"),
        (.compact, false, "\n"),
    ])
    func findsEveryPresentHashAndNoAbsentOne(_ kind: BreachIndexBuilder.Kind, _ sorted: Bool, _ ending: String) throws {
        let directory = try TemporaryDirectory.make()
        let corpus = Self.corpus(size: 50_000, seed: sorted ? 1 : 2)
        let source = directory.appendingPathComponent("pwned.txt")
        let brokenLines = try Self.write(corpus, to: source, sorted: sorted, lineEnding: ending, broken: Self.broken)
        let output = directory.appendingPathComponent("pwned.khbi")
        // A small memory limit forces several sorted runs and a merge (the bounded-memory path).
        let report = try BreachIndexBuilder(kind: kind, memoryLimit: 200_000).build(input: source, output: output)
        #expect(report.hashes == corpus.present.count)
        #expect(report.badLines == Self.broken.count)
        #expect(report.badLineSamples.map(\.line) == brokenLines)
        #expect(report.runs > 1)

        let index = try BreachIndex(url: output)
        #expect(index.count == corpus.present.count)
        for (digest, count) in corpus.present {
            let found = try index.count(of: digest)
            if kind == .full {
                #expect(found == count)
            } else {
                // Compact counts are powers of two: the largest not above the true count (max 32768).
                #expect(found == 1 << min(15, Int.bitWidth - 1 - count.leadingZeroBitCount))
            }
            if found == 0 { break }
        }
        var falsePositives = 0
        for digest in corpus.absent where try index.count(of: digest) != 0 {
            falsePositives += 1
        }
        #expect(falsePositives == 0)
        if kind == .compact {
            #expect(index.bytesPerHash < 8)
        }
    }

    @Test func sortedAndShuffledInputsGiveTheSameIndex() throws {
        let directory = try TemporaryDirectory.make()
        let corpus = Self.corpus(size: 20_000, seed: 3)
        var files: [Data] = []
        for (name, sorted, memory) in [("a", true, 1 << 30), ("b", false, 100_000), ("c", false, 1 << 30)] {
            let source = directory.appendingPathComponent("\(name).txt")
            _ = try Self.write(corpus, to: source, sorted: sorted, lineEnding: sorted ? "\n" : "\r\n")
            let output = directory.appendingPathComponent("\(name).khbi")
            _ = try BreachIndexBuilder(kind: .compact, memoryLimit: memory).build(input: source, output: output)
            files.append(try Data(contentsOf: output))
        }
        #expect(files[0] == files[1])
        #expect(files[0] == files[2])
    }

    @Test(arguments: [BreachIndexBuilder.Kind.compact, .full])
    func crowdedBucketsUseTheOverflowTable(_ kind: BreachIndexBuilder.Kind) throws {
        // 300 hashes sharing their first 40 bits land in one bucket (sizes above 14 escape).
        var rng = SeededRandomNumberGenerator(seed: 9)
        let hexDigits = Array("0123456789ABCDEF")
        func random(_ count: Int) -> String { String((0..<count).map { _ in hexDigits.randomElement(using: &rng)! }) }
        var lines: [String] = []
        var expected: [(SHA1Digest, Int)] = []
        for index in 0..<300 {
            let hex = "ABCDEF0123" + random(30)
            lines.append("\(hex):\(index + 1)")
            expected.append((SHA1Digest(hex: hex)!, index + 1))
        }
        for index in 0..<2000 {
            let hex = random(40)
            lines.append("\(hex):\(index + 1)")
            expected.append((SHA1Digest(hex: hex)!, index + 1))
        }
        lines.shuffle(using: &rng)
        let directory = try TemporaryDirectory.make()
        let source = directory.appendingPathComponent("crowded.txt")
        try Data(lines.joined(separator: "\n").utf8).write(to: source)
        let output = directory.appendingPathComponent("crowded.khbi")
        _ = try BreachIndexBuilder(kind: kind).build(input: source, output: output)
        let index = try BreachIndex(url: output)
        for (digest, count) in expected {
            let found = try index.count(of: digest)
            #expect(found == (kind == .full ? count : 1 << min(15, Int.bitWidth - 1 - count.leadingZeroBitCount)))
        }
        #expect(try index.count(of: SHA1Digest(hex: "ABCDEF0123" + String(repeating: "0", count: 30))!) == 0)
    }

    @Test func duplicateHashesAddTheirCounts() throws {
        let directory = try TemporaryDirectory.make()
        let digest = SHA1Digest(password: "duplicate")
        let source = directory.appendingPathComponent("dup.txt")
        try Data("\(digest.hex):5\n\(digest.hex.lowercased()):7\n".utf8).write(to: source)
        let output = directory.appendingPathComponent("dup.khbi")
        _ = try BreachIndexBuilder(kind: .full).build(input: source, output: output)
        let index = try BreachIndex(url: output)
        #expect(index.count == 1)
        #expect(try index.count(of: digest) == 12)
    }

    @Test func rangesListEverySuffixInOrder() throws {
        let directory = try TemporaryDirectory.make()
        let corpus = Self.corpus(size: 30_000, seed: 4)
        let source = directory.appendingPathComponent("r.txt")
        _ = try Self.write(corpus, to: source, sorted: false, lineEnding: "\n")
        let output = directory.appendingPathComponent("r.khbi")
        _ = try BreachIndexBuilder(kind: .full).build(input: source, output: output)
        let index = try BreachIndex(url: output)
        var byPrefix: [String: [(String, Int)]] = [:]
        for (digest, count) in corpus.present {
            byPrefix[digest.prefix, default: []].append((digest.suffix, count))
        }
        for prefix in Array(byPrefix.keys).sorted().prefix(300) + ["00000", "FFFFF"] {
            let expected = (byPrefix[prefix] ?? []).sorted { $0.0 < $1.0 }
            let rows = try index.range(prefix: RangeBody.prefixValue(prefix)!)
            #expect(rows.count == expected.count)
            for (row, (suffix, count)) in zip(rows, expected) {
                let hex = SHA1Digest(bytes: [0, 0] + row.suffix)!.hex
                #expect(String(hex.dropFirst(5)) == suffix)
                #expect(row.count == count)
            }
        }
        // A compact index refuses.
        let compact = directory.appendingPathComponent("c.khbi")
        _ = try BreachIndexBuilder(kind: .compact).build(input: source, output: compact)
        #expect(throws: BreachError(.needsFullIndex, "")) { try BreachIndex(url: compact).range(prefix: 0) }
    }

    @Test func foreignAndTruncatedFilesAreClearErrors() throws {
        let directory = try TemporaryDirectory.make()
        let corpus = Self.corpus(size: 5_000, seed: 5)
        let source = directory.appendingPathComponent("s.txt")
        _ = try Self.write(corpus, to: source, sorted: true, lineEnding: "\n")
        let output = directory.appendingPathComponent("s.khbi")
        _ = try BreachIndexBuilder(kind: .compact).build(input: source, output: output)
        let data = try Data(contentsOf: output)

        let truncated = directory.appendingPathComponent("t.khbi")
        try data.prefix(data.count - 100).write(to: truncated)
        #expect {
            try BreachIndex(url: truncated)
        } throws: { error in
            (error as? BreachError)?.code == .truncated && "\(error)".contains("truncated")
        }
        // The HIBP text itself is not an index.
        #expect(throws: BreachError(.notAnIndex, "")) { try BreachIndex(url: source) }
        let empty = directory.appendingPathComponent("e.khbi")
        try Data().write(to: empty)
        #expect(throws: BreachError(.notAnIndex, "")) { try BreachIndex(url: empty) }
        var damaged = data
        damaged[20] ^= 0xFF
        let damagedURL = directory.appendingPathComponent("d.khbi")
        try damaged.write(to: damagedURL)
        #expect(throws: BreachError(.notAnIndex, "")) { try BreachIndex(url: damagedURL) }
        #expect(throws: BreachError(.io, "")) { try BreachIndex(url: directory.appendingPathComponent("missing")) }
    }

    /// `breach index build --output DIR` refuses a directory (nothing in it deleted) and replaces an
    /// existing file by rename(2) (the checks of `BreachTopListTests`).
    @Test(arguments: [BreachIndexBuilder.Kind.compact, .full])
    func aDirectoryOutputIsRefusedAndAFileReplacedByRename(_ kind: BreachIndexBuilder.Kind) throws {
        let directory = try TemporaryDirectory.make()
        let source = directory.appendingPathComponent("pwned.txt")
        _ = try Self.write(Self.corpus(size: 200, seed: 7), to: source, sorted: true, lineEnding: "\n")
        try BreachTopListTests.checkOutputIsProtected(in: directory) { output in
            _ = try BreachIndexBuilder(kind: kind).build(input: source, output: output)
        }
    }

    @Test func anInputWithoutValidLinesIsRefused() throws {
        let directory = try TemporaryDirectory.make()
        let source = directory.appendingPathComponent("junk.txt")
        try Data("hello\nworld\n".utf8).write(to: source)
        #expect(throws: BreachError(.invalidInput, "")) {
            try BreachIndexBuilder().build(input: source, output: directory.appendingPathComponent("x.khbi"))
        }
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("x.khbi").path))
    }

    @Test func lookupsAreSafeFromManyThreads() async throws {
        let directory = try TemporaryDirectory.make()
        let corpus = Self.corpus(size: 20_000, seed: 6)
        let source = directory.appendingPathComponent("m.txt")
        _ = try Self.write(corpus, to: source, sorted: true, lineEnding: "\n")
        let output = directory.appendingPathComponent("m.khbi")
        _ = try BreachIndexBuilder(kind: .full).build(input: source, output: output)
        let index = try BreachIndex(url: output)
        let present = corpus.present
        let mismatches = await withTaskGroup(of: Int.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    var wrong = 0
                    for (position, entry) in present.enumerated() where position % 8 == worker {
                        if (try? index.count(of: entry.digest)) != entry.count { wrong += 1 }
                    }
                    return wrong
                }
            }
            return await group.reduce(0, +)
        }
        #expect(mismatches == 0)
    }
}
