import Testing
import VaultSync

/// A replica is saved between syncs as its canonical bytes: read back equal (a mutation in flight
/// included, so the retry after a restart is the same mutation), and nothing else is accepted.
struct SyncReplicaEncodingTests {
    /// A replica with a confirmed item, one in flight, one pending, a deletion and a pulled cursor.
    static func replica() throws -> SyncReplica {
        var server = ReferenceSyncServer()
        var other = SyncReplica(device: DeviceID(9))
        _ = other.create(ItemID(high: 9, low: 9), values: [.title: .text("theirs")], now: 900)
        if let mutation = other.nextMutation() { try other.handle(server.push(mutation), to: mutation, now: 901) }

        var replica = SyncReplica(device: DeviceID(7))
        let (a, b, c) = (ItemID(high: 1, low: 1), ItemID(high: 2, low: 2), ItemID(high: 3, low: 3))
        _ = replica.create(a, values: [.title: .text("A"), .password: .text("p1")], now: 1000)
        _ = replica.create(b, values: [.title: .text("B"), .notes: .text("ünïcode")], now: 1001)
        try replica.apply(server.changes(since: 0), now: 1002)
        let first = replica.nextMutation()
        try replica.handle(server.push(try #require(first)), to: try #require(first), now: 1003)
        let inFlight = replica.nextMutation()  // b: sent, never answered
        try #require(inFlight != nil)
        _ = replica.create(c, values: [.user: .text("ada")], now: 1004)
        try replica.set(.password, to: .text("p2"), in: a, now: 1005)
        try replica.delete(c, now: 1006)
        return replica
    }

    @Test func aReplicaRoundTripsWithItsMutationInFlight() throws {
        let replica = try Self.replica()
        let bytes = replica.canonicalBytes
        var decoded = try SyncReplica(canonicalBytes: bytes)
        #expect(decoded == replica)
        #expect(decoded.canonicalBytes == bytes)
        #expect(decoded.cursor > 0)
        #expect(decoded.revisions.count == 2)
        #expect(decoded.outbox.entries.first?.inFlight != nil)
        var original = replica
        // The retry after a restart is the very mutation sent before it.
        #expect(decoded.nextMutation() == original.nextMutation())
        #expect(try SyncReplica(canonicalBytes: SyncReplica(device: DeviceID(1)).canonicalBytes).records.isEmpty)
    }

    @Test func everyTruncationAndAnyTrailingByteIsRefused() throws {
        let bytes = try Self.replica().canonicalBytes
        for length in 0..<bytes.count {
            #expect(throws: VaultSyncError.self) { try SyncReplica(canonicalBytes: Array(bytes.prefix(length))) }
        }
        #expect { try SyncReplica(canonicalBytes: bytes + [0]) } throws: {
            ($0 as? VaultSyncError)?.code == .malformedReplica
        }
    }

    @Test func aNewerLayoutAndAlteredBytesAreRefused() throws {
        let bytes = try Self.replica().canonicalBytes
        var newer = bytes
        newer[4] = 2
        #expect { try SyncReplica(canonicalBytes: newer) } throws: {
            ($0 as? VaultSyncError)?.code == .unsupportedFormat
        }
        var magic = bytes
        magic[0] ^= 1
        #expect { try SyncReplica(canonicalBytes: magic) } throws: {
            ($0 as? VaultSyncError)?.code == .malformedReplica
        }
        // Every single flipped byte is refused or reads as another replica: never as this one.
        let replica = try Self.replica()
        for index in bytes.indices {
            var altered = bytes
            altered[index] ^= 0x40
            if let read = try? SyncReplica(canonicalBytes: altered) {
                #expect(read != replica, "byte \(index) flipped reads as the same replica")
                #expect(read.canonicalBytes == altered, "byte \(index) flipped reads as a second encoding")
            }
        }
    }
}
