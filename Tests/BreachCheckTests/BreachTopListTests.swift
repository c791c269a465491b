import BreachCheck
import Foundation
import KeyhavenTesting
import Testing

/// `keyhaven breach top`'s builder: the N most common hashes of a Pwned Passwords file, as a compact
/// index, whatever the file's order; a wrong input is an error and writes nothing.
@Suite(.offCooperativePool)
struct BreachTopListTests {
    static let corpus = BreachCorpus(size: 5_000, seed: 4242)

    /// The 500 most common of 5,000 (ties at the cut: the lower 64-bit prefix), the same file from
    /// sorted and shuffled input; every kept hash found, every dropped one and the absent ones not.
    @Test func keepsTheMostCommon() throws {
        let directory = try TemporaryDirectory.make()
        let sortedText = directory.appendingPathComponent("sorted.txt")
        let shuffledText = directory.appendingPathComponent("shuffled.txt")
        _ = try Self.corpus.write(to: sortedText, sorted: true, lineEnding: "\n", broken: [])
        _ = try Self.corpus.write(to: shuffledText, sorted: false, lineEnding: "\r\n", broken: ["NOTAHASH:3"], seed: 9)
        let builder = try BreachTopListBuilder(top: 500)
        let fromSorted = try builder.select(input: sortedText)
        let fromShuffled = try builder.select(input: shuffledText)
        #expect(fromSorted.hashes == 500 && fromSorted.hashesRead == 5_000 && fromSorted.badLines == 0)
        #expect(fromShuffled.badLines == 1 && fromShuffled.badLineSamples.first?.reason.isEmpty == false)
        let first = directory.appendingPathComponent("a.khbi")
        let second = directory.appendingPathComponent("b.khbi")
        let bytes = try builder.write(fromSorted, to: first)
        _ = try builder.write(fromShuffled, to: second)
        #expect(try Data(contentsOf: first) == Data(contentsOf: second))
        #expect(bytes - 128 < 500 * 8, "compact: under 8 bytes a hash after the 128-byte header")

        func prefix(_ digest: SHA1Digest) -> UInt64 { digest.bytes[0..<8].reduce(0) { $0 << 8 | UInt64($1) } }
        let ranked = Self.corpus.present.sorted { a, b in
            a.count != b.count ? a.count > b.count : prefix(a.digest) < prefix(b.digest)
        }
        #expect(fromSorted.smallestCount == ranked[499].count)
        let list = try BreachIndex(url: first)
        #expect(list.kind == .compact && list.count == 500)
        // Kept: found, with a power-of-two count at most the real one; below the cut: not found.
        var wrong: [Int] = []
        for (rank, entry) in ranked.enumerated() {
            let found = try list.count(of: entry.digest)
            if rank < 500 ? !(found > 0 && found <= entry.count) : found != 0 { wrong.append(rank) }
        }
        #expect(wrong.isEmpty, "ranks \(wrong.prefix(10))")
        #expect(try Self.corpus.absent.prefix(20_000).allSatisfy { try list.count(of: $0) == 0 })

        // A list longer than the file keeps all of it.
        let all = try BreachTopListBuilder(top: 1_000_000).select(input: sortedText)
        #expect(all.hashes == 5_000 && all.smallestCount == Self.corpus.present.map { $0.count }.min())
    }

    /// A size out of range, an index given as the text, a file with no SHA1:COUNT line: errors, and
    /// an older list stays as it was.
    @Test func refusesWrongInput() throws {
        #expect(throws: BreachError.self) { try BreachTopListBuilder(top: 0) }
        #expect(throws: BreachError.self) { try BreachTopListBuilder(top: BreachTopListBuilder.maximumTop + 1) }
        let directory = try TemporaryDirectory.make()
        let text = directory.appendingPathComponent("pwned.txt")
        _ = try Self.corpus.write(to: text, sorted: true, lineEnding: "\n", broken: [])
        let builder = try BreachTopListBuilder(top: 10)
        let output = directory.appendingPathComponent("top.khbi")
        _ = try builder.write(try builder.select(input: text), to: output)
        let before = try Data(contentsOf: output)

        let fromIndex = #expect(throws: BreachError.self) { try builder.select(input: output) }
        #expect(fromIndex?.code == .invalidInput && fromIndex?.message.contains("text file") == true)
        let garbage = directory.appendingPathComponent("garbage.txt")
        try Data("no hashes here\nnor here\n".utf8).write(to: garbage)
        let empty = try builder.select(input: garbage)
        #expect(empty.hashes == 0 && empty.badLines == 2)
        let refused = #expect(throws: BreachError.self) { try builder.write(empty, to: output) }
        #expect(refused?.message.contains("nothing was written") == true)
        #expect(try Data(contentsOf: output) == before)
        let missing = #expect(throws: BreachError.self) {
            try builder.select(input: directory.appendingPathComponent("missing.txt"))
        }
        #expect(missing?.code == .io)
    }

    /// Ten hashes of equal count straddle the cut (5 above it, 5 below it, 5 of the ties kept): the
    /// kept ties are the lowest prefixes, the same file from the lines in order and reversed; a hash
    /// listed twice (one line repeated, and the same hash with another count) takes one place.
    @Test func tiesAtTheCutAndRepeatedLines() throws {
        func prefix(_ digest: SHA1Digest) -> UInt64 { digest.bytes[0..<8].reduce(0) { $0 << 8 | UInt64($1) } }
        let common = (0..<5).map { SHA1Digest(password: "common-\($0)") }
        let ties = (0..<10).map { SHA1Digest(password: "tie-\($0)") }
        let rare = (0..<5).map { SHA1Digest(password: "rare-\($0)") }
        var lines = common.map { "\($0.hex):1000" } + ties.map { "\($0.hex):50" } + rare.map { "\($0.hex):3" }
        lines.insert("\(common[0].hex):1000", at: 3)  // the same line twice
        lines.append("\(common[1].hex):7")  // the same hash again with a smaller count
        let directory = try TemporaryDirectory.make()
        let builder = try BreachTopListBuilder(top: 10)
        var files: [Data] = []
        for (name, order) in [("forward", lines), ("reverse", Array(lines.reversed()))] {
            let text = directory.appendingPathComponent("\(name).txt")
            try Data(order.joined(separator: "\n").utf8).write(to: text)
            let selection = try builder.select(input: text)
            #expect(selection.hashes == 10 && selection.smallestCount == 50, "\(name)")
            let output = directory.appendingPathComponent("\(name).khbi")
            _ = try builder.write(selection, to: output)
            files.append(try Data(contentsOf: output))
            let list = try BreachIndex(url: output)
            let keptTies = ties.sorted { prefix($0) < prefix($1) }
            #expect(try common.allSatisfy { try list.count(of: $0) == 512 }, "1000 seen: 512 in a compact index")
            #expect(try keptTies.prefix(5).allSatisfy { try list.count(of: $0) == 32 }, "\(name)")
            #expect(try keptTies.suffix(5).allSatisfy { try list.count(of: $0) == 0 }, "\(name)")
            #expect(try rare.allSatisfy { try list.count(of: $0) == 0 })
        }
        #expect(files[0] == files[1])
    }

    /// A file with no newline (CR-only line endings) longer than a read chunk: one malformed line,
    /// with the reason, and the good line after the next newline is read (the reader keeps a line of
    /// at most 1 KB, not the whole file).
    @Test func aFileWithoutNewlinesIsOneBoundedBadLine() throws {
        let directory = try TemporaryDirectory.make()
        let text = directory.appendingPathComponent("cr-only.txt")
        let line = "\(SHA1Digest(password: "cr").hex):12\r"
        var bytes = Data(String(repeating: line, count: (5 << 20) / line.utf8.count).utf8)
        bytes.append(Data("\n\(SHA1Digest(password: "after").hex):9\n".utf8))
        try bytes.write(to: text)
        let selection = try BreachTopListBuilder(top: 10).select(input: text)
        #expect(selection.hashesRead == 1 && selection.badLines == 1 && selection.lines == 2)
        #expect(selection.badLineSamples.first?.reason.contains("longer than 1024 bytes") == true)
        let crOnly = directory.appendingPathComponent("only-cr.txt")
        try Data(String(repeating: line, count: 100).utf8).write(to: crOnly)
        let refused = try BreachTopListBuilder(top: 10).select(input: crOnly)
        #expect(refused.hashes == 0 && refused.badLines == 1)
        #expect(refused.badLineSamples.first?.reason.contains("longer than 1024 bytes") == true)
    }

    /// An output that is a directory (holding a file) is refused, naming it, and nothing in it is
    /// deleted; an existing regular file is replaced by rename(2): a link to the old file keeps the
    /// old bytes, the path holds the new ones, no temporary file is left beside it.
    @Test func aDirectoryOutputIsRefusedAndAFileReplacedByRename() throws {
        let directory = try TemporaryDirectory.make()
        let text = directory.appendingPathComponent("pwned.txt")
        _ = try Self.corpus.write(to: text, sorted: true, lineEnding: "\n", broken: [])
        let builder = try BreachTopListBuilder(top: 10)
        let selection = try builder.select(input: text)
        try Self.checkOutputIsProtected(in: directory) { output in
            try BreachTopListBuilder.checkOutput(output)
            _ = try builder.write(selection, to: output)
        }
    }

    /// The checks of ``aDirectoryOutputIsRefusedAndAFileReplacedByRename()`` for any writer of an
    /// index at `output` (`breach top`'s and `breach index build`'s).
    static func checkOutputIsProtected(in directory: URL, write: (URL) throws -> Void) throws {
        let documents = directory.appendingPathComponent("Documents")
        try FileManager.default.createDirectory(at: documents, withIntermediateDirectories: true)
        let kept = documents.appendingPathComponent("thesis.txt")
        try Data("my thesis".utf8).write(to: kept)
        let refused = #expect(throws: BreachError.self) { try write(documents) }
        #expect(refused?.message.contains(documents.path) == true && refused?.message.contains("directory") == true)
        #expect(try Data(contentsOf: kept) == Data("my thesis".utf8), "the directory and its file are intact")

        let output = directory.appendingPathComponent("list.khbi")
        try Data("old list".utf8).write(to: output)
        let link = directory.appendingPathComponent("old-link")
        try FileManager.default.linkItem(at: output, to: link)
        try write(output)
        #expect(try Data(contentsOf: link) == Data("old list".utf8), "the old file was not rewritten in place")
        #expect(try BreachIndex(url: output).count > 0)
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(!names.contains { $0.contains(".building-") }, "\(names)")
    }
}
