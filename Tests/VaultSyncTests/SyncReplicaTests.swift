import Testing
import VaultSync

/// The device's outbox against the reference server: compare-and-swap, stale answers merged and
/// retried, lost answers retried without a second write.
struct SyncReplicaTests {
    let item = ItemID(high: 7, low: 7)

    /// The replica's next mutation (failing the test when nothing is pending).
    static func next(_ replica: inout SyncReplica) throws -> Mutation {
        let mutation = replica.nextMutation()
        return try #require(mutation)
    }

    /// Pushes `mutation` and gives the server's answer to the replica.
    static func send(
        _ mutation: Mutation,
        from replica: inout SyncReplica,
        to server: inout ReferenceSyncServer,
        now: UInt64
    ) throws -> SyncReplica.PushOutcome {
        try replica.handle(server.push(mutation), to: mutation, now: now)
    }

    func twoDevicesSharingAnItem() throws -> (server: ReferenceSyncServer, a: SyncReplica, b: SyncReplica) {
        var server = ReferenceSyncServer()
        var a = SyncReplica(device: DeviceID(0xA))
        var b = SyncReplica(device: DeviceID(0xB))
        _ = a.create(item, values: [.title: .text("Bank"), .password: .text("p0")], now: 1_000)
        let mutation = try Self.next(&a)
        #expect(mutation.baseRevision == 0)
        #expect(try Self.send(mutation, from: &a, to: &server, now: 1_001) == .confirmed)
        #expect(a.outbox.isEmpty && a.revisions[item] == 1)
        try b.apply(server.changes(since: b.cursor), now: 1_002)
        #expect(b.records[item] == a.records[item])
        #expect(b.outbox.isEmpty)
        return (server, a, b)
    }

    @Test func aStaleWriteIsAnsweredWithTheCurrentRecordMergedAndRetried() throws {
        var (server, a, b) = try twoDevicesSharingAnItem()
        // Both edit offline.
        try a.set(.password, to: .text("pA"), in: item, now: 2_000)
        try b.set(.title, to: .text("Bank (joint)"), in: item, now: 2_000)
        try b.set(.password, to: .text("pB"), in: item, now: 2_500)

        let fromA = try Self.next(&a)
        #expect(try Self.send(fromA, from: &a, to: &server, now: 3_000) == .confirmed)

        let fromB = try Self.next(&b)
        let answer = server.push(fromB)
        guard case .stale(let current) = answer else {
            Issue.record("expected a stale answer, got \(answer)")
            return
        }
        #expect(current.revision == 2 && current.payload == a.records[item]!.canonicalBytes)
        guard case .merged(let merge) = try b.handle(answer, to: fromB, now: 3_100) else {
            Issue.record("expected a merge")
            return
        }
        #expect(merge.fields[.title] == .keptLocal)
        #expect(merge.conflictingFields == [.password])
        #expect(b.revisions[item] == 2)

        let retry = try Self.next(&b)
        #expect(retry.baseRevision == 2 && retry.id != fromB.id)
        #expect(try Self.send(retry, from: &b, to: &server, now: 3_200) == .confirmed)
        try a.apply(server.changes(since: a.cursor), now: 3_300)

        #expect(a.records[item]!.canonicalBytes == b.records[item]!.canonicalBytes)
        #expect(a.records[item]!.canonicalBytes == server.items[item]!.payload)
        let record = a.records[item]!
        #expect(record[.title] == .text("Bank (joint)"))
        #expect(record[.password] == .text("pB"))  // the later of the two (2_500 > 2_000)
        #expect(a.conflicts[item]?.map(\.other.value) == [.text("pA")])
        #expect(server.items[item]?.revision == 3)
    }

    @Test func aLostAnswerIsRetriedWithTheSameMutationAndAppliedOnce() throws {
        var (server, a, _) = try twoDevicesSharingAnItem()
        try a.set(.notes, to: .text("recovery codes"), in: item, now: 2_000)
        let first = try Self.next(&a)
        _ = server.push(first)  // applied, but the answer never arrives
        #expect(server.items[item]?.revision == 2)

        let retry = try Self.next(&a)
        #expect(retry == first)
        #expect(a.outbox.entries.first?.unansweredAttempts == 2)
        let answer = server.push(retry)
        #expect(answer == .accepted(revision: 2))
        #expect(server.items[item]?.revision == 2)  // not applied twice
        let outcome = try a.handle(answer, to: retry, now: 2_100)
        #expect(outcome == .confirmed)
        #expect(a.outbox.isEmpty)
    }

    @Test func aLostRequestIsRetriedAndApplied() throws {
        var (server, a, _) = try twoDevicesSharingAnItem()
        try a.set(.folder, to: .text("Finance"), in: item, now: 2_000)
        let first = try Self.next(&a)  // never reaches the server
        let retry = try Self.next(&a)
        #expect(retry.id == first.id)
        #expect(try Self.send(retry, from: &a, to: &server, now: 2_100) == .confirmed)
        #expect(server.items[item]?.revision == 2)
    }

    @Test func anEditMadeWhileAMutationIsInFlightIsSentNext() throws {
        var (server, a, _) = try twoDevicesSharingAnItem()
        try a.set(.user, to: .text("ada"), in: item, now: 2_000)
        let first = try Self.next(&a)
        try a.set(.user, to: .text("ada.l"), in: item, now: 2_001)
        #expect(try Self.send(first, from: &a, to: &server, now: 2_002) == .acceptedWithMoreToSend)
        let second = try Self.next(&a)
        #expect(second.baseRevision == 2 && second.id != first.id)
        #expect(try Self.send(second, from: &a, to: &server, now: 2_003) == .confirmed)
        #expect(try SyncRecord(canonicalBytes: server.items[item]!.payload)[.user] == .text("ada.l"))
    }

    @Test func aPullThatAlreadyHoldsTheLocalChangesEmptiesTheOutbox() throws {
        var (server, a, b) = try twoDevicesSharingAnItem()
        try a.set(.title, to: .text("Bank!"), in: item, now: 2_000)
        let mutation = try Self.next(&a)
        _ = server.push(mutation)  // applied; the answer is lost
        try a.apply(server.changes(since: a.cursor), now: 2_100)
        #expect(a.outbox.isEmpty)
        #expect(a.revisions[item] == 2)
        // B had nothing pending: it simply takes the server's record.
        let merges = try b.apply(server.changes(since: b.cursor), now: 2_200)
        #expect(merges[item]?.fields == [.title: .tookRemote])
        #expect(b.records[item] == a.records[item] && b.outbox.isEmpty)
        #expect(server.changes(since: b.cursor).items.isEmpty)
    }

    @Test func aPayloadThatIsNotARecordChangesNothing() throws {
        var (_, a, _) = try twoDevicesSharingAnItem()
        try a.set(.title, to: .text("x"), in: item, now: 2_000)
        let before = a
        let mutation = try Self.next(&a)
        let garbage = ServerItem(item: item, revision: 5, payload: [1, 2, 3], sequence: 9)
        var after = a
        #expect(throws: VaultSyncError(.malformedRecord, "")) {
            try after.handle(.stale(current: garbage), to: mutation, now: 2_001)
        }
        #expect(after == a)
        #expect(before.records == after.records)
    }

    @Test func aRefusedItemDoesNotHoldUpTheOthers() throws {
        let (_, shared, _) = try twoDevicesSharingAnItem()  // the item is at revision 1 there
        var a = shared
        try a.set(.title, to: .text("Bank!"), in: item, now: 2_000)
        let other = ItemID(high: 8, low: 8)
        _ = a.create(other, values: [.title: .text("Other")], now: 2_001)
        var emptied = ReferenceSyncServer()  // a server that lost the vault refuses revision 1's update
        let first = try Self.next(&a)
        #expect(first.item == item)
        guard case .rejected = try Self.send(first, from: &a, to: &emptied, now: 2_002) else {
            Issue.record("expected a refusal")
            return
        }
        #expect(a.outbox.items == [other, item])
        #expect(try Self.next(&a).item == other)
    }

    @Test func theServerRefusesAnUpdateOfAnItemItDoesNotHave() throws {
        var server = ReferenceSyncServer()
        let mutation = Mutation(item: item, baseRevision: 3, payload: SyncRecord(id: item).canonicalBytes)
        guard case .rejected = server.push(mutation) else {
            Issue.record("expected a refusal")
            return
        }
        var a = SyncReplica(device: DeviceID(1))
        #expect(throws: VaultSyncError(.unknownItem, "")) { try a.set(.title, to: .text("t"), in: item, now: 1) }
    }

    @Test func anAdoptedRecordIsMergedSentAndStampedBefore() throws {
        var a = SyncReplica(device: DeviceID(1))
        _ = a.create(item, values: [.title: .text("here")], now: 1_000)
        // Made outside the replica (an item the vault held before it synced), with later stamps.
        var clock = HybridLogicalClock(device: DeviceID(1), latest: a.clock.latest)
        var outside = SyncRecord(id: item)
        outside.set(.password, to: .text("p0"), stamp: clock.send(now: 5_000))
        outside.set(.password, to: .text("p1"), stamp: clock.send(now: 6_000))
        try a.adopt(outside, now: 2_000)
        let record = try #require(a.records[item])
        #expect(record[.title] == .text("here") && record[.password] == .text("p1"))
        #expect(record.versions(of: .password).count == 2)
        #expect(a.outbox.items == [item])
        // The next write is stamped after everything adopted, though the wall clock is behind.
        #expect(try a.set(.notes, to: .text("n"), in: item, now: 2_001))
        #expect(try #require(a.records[item]?.fields[.notes]).stamp > (outside.latestStamp ?? a.clock.latest))
    }
}
