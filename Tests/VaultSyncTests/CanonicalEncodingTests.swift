import KeyhavenTesting
import Testing
import VaultSync

/// The record's byte encoding: one encoding per record, and one record per encoding.
struct CanonicalEncodingTests {
    let id = ItemID(high: 0x0102_0304_0506_0708, low: 0x090A_0B0C_0D0E_0F10)

    @Test(arguments: 0..<30)
    func roundTrips(seed: UInt64) throws {
        var generator = SeededRandomNumberGenerator(seed: seed)
        for record in RecordFixtures.divergentReplicas(of: id, count: 2, edits: 40, using: &generator) {
            let bytes = record.canonicalBytes
            let decoded = try SyncRecord(canonicalBytes: bytes)
            #expect(decoded == record)
            #expect(decoded.canonicalBytes == bytes)
        }
    }

    @Test func theLayoutIsTheDocumentedOne() {
        let device = DeviceID(0xD)
        let record = SyncRecord.created(
            id: id,
            values: [.title: .text("A")],
            stamp: HLCTimestamp(physical: 0x10, counter: 2, device: device)
        )
        let stamp: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0x0D]
        let expected: [UInt8] =
            [1] + id.bytes + [1] + stamp  // format, id, a table of one stamp
            + [1] + [5] + Array("title".utf8) + [0] + [0] + [1, 1, 0x41]  // a field: key, stamp 0, no parents, "A"
            + [0] + [0]  // no history, no tombstone
        #expect(record.canonicalBytes == expected)
        #expect(id.bytes == Array(1...16))
    }

    /// Any bytes that decode are the canonical bytes of what they decode to: no second encoding of
    /// a record exists (a flipped byte, a reordered field, a padded count all fail or re-encode
    /// identically).
    @Test(arguments: 0..<20)
    func noSecondEncoding(seed: UInt64) throws {
        var generator = SeededRandomNumberGenerator(seed: seed)
        let record = RecordFixtures.divergentReplicas(of: id, count: 3, edits: 25, using: &generator)[0]
        let bytes = record.canonicalBytes
        for _ in 0..<300 {
            var mutated = bytes
            let index = Int.random(in: 0..<mutated.count, using: &generator)
            mutated[index] = UInt8.random(in: 0...255, using: &generator)
            if let decoded = try? SyncRecord(canonicalBytes: mutated) {
                #expect(decoded.canonicalBytes == mutated)
            }
        }
    }

    @Test func refusesWhatItWouldNotHaveWritten() throws {
        var generator = SeededRandomNumberGenerator(seed: 1)
        let bytes = RecordFixtures.divergentReplicas(of: id, count: 2, edits: 20, using: &generator)[0].canonicalBytes
        let malformed = VaultSyncError(.malformedRecord, "")
        // Every truncation, and a byte after the end.
        for length in 0..<bytes.count {
            #expect(throws: VaultSyncError.self) { try SyncRecord(canonicalBytes: Array(bytes.prefix(length))) }
        }
        #expect(throws: malformed) { try SyncRecord(canonicalBytes: bytes + [0]) }
        // A newer format asks for an update.
        #expect(throws: VaultSyncError(.unsupportedFormat, "")) {
            try SyncRecord(canonicalBytes: [2] + bytes.dropFirst())
        }
        // A count padded to two bytes (0x80 0x00 for 0).
        let empty = SyncRecord(id: id).canonicalBytes
        #expect(empty == [1] + id.bytes + [0, 0, 0, 0])
        #expect(throws: malformed) { try SyncRecord(canonicalBytes: [1] + id.bytes + [0x80, 0x00, 0, 0, 0]) }
        // Fields out of order: "user" before "title" (both absent, written at stamp 0 of the table).
        let stamp = [UInt8](repeating: 0, count: 19) + [1]
        let laterStamp = [UInt8](repeating: 0, count: 19) + [2]
        let field = { (name: String) in [UInt8(name.utf8.count)] + Array(name.utf8) + [0, 0, 0] }
        let sorted: [UInt8] = [1] + id.bytes + [1] + stamp + [2] + field("title") + field("user") + [0, 0]
        #expect(try SyncRecord(canonicalBytes: sorted)[.user] == .absent)
        let unsorted: [UInt8] = [1] + id.bytes + [1] + stamp + [2] + field("user") + field("title") + [0, 0]
        #expect(throws: malformed) { try SyncRecord(canonicalBytes: unsorted) }
        // A stamp in the table no version refers to; a reference past the table; a table out of order.
        let unused: [UInt8] = [1] + id.bytes + [2] + stamp + laterStamp + [1] + field("title") + [0, 0]
        #expect(throws: malformed) { try SyncRecord(canonicalBytes: unused) }
        let outside: [UInt8] = [1] + id.bytes + [1] + stamp + [1] + [5] + Array("title".utf8) + [1, 0, 0] + [0, 0]
        #expect(throws: malformed) { try SyncRecord(canonicalBytes: outside) }
        let reversed: [UInt8] = [1] + id.bytes + [2] + laterStamp + stamp + [1] + field("title") + [0, 0]
        #expect(throws: malformed) { try SyncRecord(canonicalBytes: reversed) }
        // Invalid UTF-8 in a key.
        #expect(throws: malformed) {
            try SyncRecord(canonicalBytes: [1] + id.bytes + [1] + stamp + [1, 1, 0xFF, 0, 0, 0, 0, 0])
        }
    }

    /// Stamps are written once: a new credential's fields share one, and a password change adds
    /// one stamp and one version (the way to issue 28's ≤ 300 bytes per credential on disk).
    @Test func aCredentialIsSmall() {
        var clock = HybridLogicalClock(device: DeviceID(0x1234_5678_9ABC_DEF0))
        var record = SyncRecord.created(
            id: id,
            values: [
                .title: .text("GitHub"), .services: .list(["https://github.com"]), .user: .text("ada@example.com"),
                .password: .text("xK9#mP2$vL7qR4!n"), .notes: .text(""), .folder: .text("Work"),
            ],
            stamp: clock.send(now: 1_767_225_600_000)
        )
        #expect(record.canonicalBytes.count <= 170)
        let before = record.canonicalBytes.count
        record.set(.password, to: .text("nB3&wQ8*zT5@hJ1%"), stamp: clock.send(now: 1_767_225_700_000))
        #expect(record.canonicalBytes.count - before <= 55)
    }

    /// "é" composed and decomposed are equal Strings in Swift, but two names on the wire: they
    /// stay two fields, and the record still reads back byte for byte.
    @Test func fieldNamesAreTheirBytes() throws {
        var record = SyncRecord(id: id)
        let stamp = HLCTimestamp(physical: 1, counter: 0, device: DeviceID(1))
        record.set(FieldKey("caf\u{E9}"), to: .text("composed"), stamp: stamp)
        record.set(FieldKey("cafe\u{301}"), to: .text("decomposed"), stamp: stamp)
        #expect(record.fields.count == 2)
        #expect(try SyncRecord(canonicalBytes: record.canonicalBytes).canonicalBytes == record.canonicalBytes)
    }

    @Test func errorsNameTheItemNeverAValue() throws {
        var record = SyncRecord(id: id)
        record.set(
            .password,
            to: .text("hunter2-secret"),
            stamp: HLCTimestamp(physical: 1, counter: 0, device: DeviceID(1))
        )
        let bytes = record.canonicalBytes
        do {
            _ = try SyncRecord(canonicalBytes: bytes + [7])
            Issue.record("trailing bytes were accepted")
        } catch {
            #expect(error.code == .malformedRecord)
            #expect(!String(reflecting: error).contains("hunter2"))
            #expect(error.item == id)
        }
    }
}
