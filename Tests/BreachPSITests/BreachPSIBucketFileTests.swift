import BreachCheck
import Foundation
import KeyhavenTesting
import Testing
import _KeyhavenSupport

@testable import BreachPSI

/// The on-disk bucket file: built in several passes it holds exactly what the in-memory buckets
/// hold, a server over it answers as one over memory, and damaged or foreign files are refused.
struct BreachPSIBucketFileTests {
    let directory: URL
    let corpus = BreachCorpus(size: 240, seed: 291)
    let key: BreachPSIServerKey

    init() throws {
        directory = try TemporaryDirectory.make()
        var rng = SeededRandomNumberGenerator(seed: 29)
        key = BreachPSIServerKey(using: &rng)
    }

    func build(memoryLimit: Int, name: String = "buckets.khpsi") throws -> (URL, BreachPSIBucketFileBuilder.Report) {
        let url = directory.appendingPathComponent(name)
        let digests = corpus.present.map(\.digest)
        let builder = BreachPSIBucketFileBuilder(key: key, memoryLimit: memoryLimit)
        let report = try builder.build(estimatedCount: digests.count, output: url) { add in
            digests.forEach(add)
        }
        return (url, report)
    }

    @Test func severalPassesGiveTheSameBucketsAsMemory() throws {
        // 240 digests × 16 bytes over 1,000 bytes: 4 passes, each evaluating only its own buckets.
        let (url, report) = try build(memoryLimit: 1_000)
        #expect(report.passes == 4)
        #expect(report.digests == corpus.present.count)
        var builder = BreachPSIBucketBuilder(key: key)
        try builder.add(contentsOf: corpus.present.map(\.digest))
        let memory = builder.finish()
        let file = try BreachPSIBucketFile(url: url)
        #expect(file.count == memory.count && report.entries == memory.count)
        #expect(file.keyID == key.publicKey.id)
        #expect(file.largestBucket == memory.largestBucket)
        let size = try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int
        #expect(size == 32 + 8 * (BreachPSI.bucketCount + 1) + 8 * memory.count)
        for prefix in 0..<UInt16(BreachPSI.bucketCount) {
            let expected = Array(memory.entries(prefix: prefix))
            let read = try file.bucket(prefix)
            if read != expected {
                Issue.record("bucket \(prefix) differs")
                break
            }
        }
        // A one-pass build writes the same bytes.
        let (single, one) = try build(memoryLimit: 1 << 30, name: "single.khpsi")
        #expect(one.passes == 1)
        #expect(try Data(contentsOf: single) == Data(contentsOf: url))
        // No temporary file is left beside the output.
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == [
                "buckets.khpsi", "single.khpsi",
            ]
        )
    }

    @Test func aServerOverTheFileFindsBreachedAndCleanPasswords() throws {
        let (url, _) = try build(memoryLimit: 1 << 20)
        let server = try BreachPSIServer(key: key, bucketFile: BreachPSIBucketFile(url: url))
        let client = BreachPSIClient(publicKey: key.publicKey)
        for digest in corpus.present.prefix(8).map(\.digest) + corpus.absent.prefix(8) {
            let query = try client.query(digest)
            let answer = try client.isBreached(query, response: server.answer(encoded: query.request.encoded))
            #expect(answer == corpus.present.contains { $0.digest == digest })
        }
    }

    @Test func damagedOrForeignFilesAreRefused() throws {
        let (url, _) = try build(memoryLimit: 1 << 20)
        // Another key's file: its entries would all be wrong.
        var rng = SeededRandomNumberGenerator(seed: 30)
        let other = BreachPSIServerKey(using: &rng)
        let foreign = #expect(throws: BreachPSIError.self) {
            try BreachPSIServer(key: other, bucketFile: BreachPSIBucketFile(url: url))
        }
        #expect(foreign?.code == .invalidKey)
        // Cut short by one entry.
        let bytes = try Data(contentsOf: url)
        let cut = directory.appendingPathComponent("cut.khpsi")
        try bytes.dropLast(8).write(to: cut)
        let error = #expect(throws: BreachPSIError.self) { try BreachPSIBucketFile(url: cut) }
        #expect(error?.code == .io && error?.message.contains("truncated or damaged") == true)
        // A table that goes backwards.
        var crafted = Array(bytes)
        crafted[32 + 8 * 5 + 7] = 0xFF
        let bad = directory.appendingPathComponent("bad.khpsi")
        try Data(crafted).write(to: bad)
        let backwards = #expect(throws: BreachPSIError.self) { try BreachPSIBucketFile(url: bad) }
        #expect(backwards?.code == .io && backwards?.message.contains("starts before") == true)
        // A bucket larger than a client accepts (bucket 0 ends 2^20 entries in).
        var huge = Array(bytes)
        huge[32 + 8 * 1 + 5] |= 0x10
        try Data(huge).write(to: bad)
        let oversized = #expect(throws: BreachPSIError.self) { try BreachPSIBucketFile(url: bad) }
        #expect(oversized?.code == .oversizedBucket)
        // Reserved header bytes that are not zero.
        var reserved = Array(bytes)
        reserved[12] = 1
        try Data(reserved).write(to: bad)
        let header = #expect(throws: BreachPSIError.self) { try BreachPSIBucketFile(url: bad) }
        #expect(header?.code == .io && header?.message.contains("reserved") == true)
        // Not a bucket file at all.
        let text = directory.appendingPathComponent("text.khpsi")
        try Data(repeating: 0x41, count: 300_000).write(to: text)
        #expect(throws: BreachPSIError.self) { try BreachPSIBucketFile(url: text) }
    }
}
