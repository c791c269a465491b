public import BreachCheck
public import Foundation

/// A generated Pwned Passwords corpus for tests of breach indexes and range servers: `present`
/// hashes with counts (the same for the same seed), `absent` hashes that are in no file, and the
/// file written in HIBP's text format (`HASH:count` lines).
///
/// ```swift
/// let corpus = BreachCorpus(size: 40_000, seed: 11)
/// _ = try corpus.write(to: directory.appendingPathComponent("pwned.txt"), sorted: false, lineEnding: "\r\n")
/// ```
public struct BreachCorpus: Sendable {
    public var present: [(digest: SHA1Digest, count: Int)]
    public var absent: [SHA1Digest]

    public init(present: [(digest: SHA1Digest, count: Int)], absent: [SHA1Digest]) {
        self.present = present
        self.absent = absent
    }

    /// `size` present hashes (SHA-1 of `present-<seed>-<n>`, counts between 1 and 2,000,000) and
    /// 100,000 absent ones.
    public init(size: Int, seed: UInt64) {
        var rng = SeededRandomNumberGenerator(seed: seed)
        var present: [(digest: SHA1Digest, count: Int)] = []
        present.reserveCapacity(size)
        for index in 0..<size {
            let count = Int.random(in: 1...Int.random(in: 1...2_000_000, using: &rng), using: &rng)
            present.append((SHA1Digest(password: "present-\(seed)-\(index)"), count))
        }
        self.present = present
        absent = (0..<100_000).map { SHA1Digest(password: "absent-\(seed)-\($0)") }
    }

    /// Writes the corpus in HIBP's text format, sorted or shuffled (with `seed`), with the `broken`
    /// lines spread through it; returns the 1-based line numbers of the broken lines.
    public func write(
        to url: URL,
        sorted: Bool,
        lineEnding: String,
        broken: [String] = [],
        seed: UInt64 = 1
    ) throws -> [Int] {
        var rng = SeededRandomNumberGenerator(seed: seed)
        var rows = present.map { "\($0.digest.hex):\($0.count)" }
        if sorted { rows.sort() } else { rows.shuffle(using: &rng) }
        var brokenLines: [Int] = []
        for (offset, bad) in broken.enumerated() {
            let position = min(rows.count, (offset + 1) * rows.count / (broken.count + 1))
            rows.insert(bad, at: position)
        }
        for (index, row) in rows.enumerated() where broken.contains(row) {
            brokenLines.append(index + 1)
        }
        try Data(rows.joined(separator: lineEnding).appending(lineEnding).utf8).write(to: url)
        return brokenLines
    }
}
