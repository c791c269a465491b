import KeyhavenTesting
import Testing
import VaultSync

/// The three-way per-field merge: what survives, what goes to history, what is marked, and the
/// laws that make replicas converge.
struct SyncRecordMergeTests {
    let id = ItemID(high: 1, low: 2)
    let a = DeviceID(0xA)
    let b = DeviceID(0xB)

    /// Device A creates the item at 1 s; devices A and B both start from that record.
    func base() -> (record: SyncRecord, a: HybridLogicalClock, b: HybridLogicalClock) {
        var clockA = HybridLogicalClock(device: a)
        var clockB = HybridLogicalClock(device: b)
        let record = SyncRecord.created(
            id: id,
            values: [.title: .text("Mail"), .user: .text("ada"), .password: .text("p0"), .folder: .text("Work")],
            stamp: clockA.send(now: 1_000)
        )
        clockB.receive(record.latestStamp!, now: 1_000)
        return (record, clockA, clockB)
    }

    @Test func disjointEditsMergeSilently() throws {
        let (record, clockA0, clockB0) = base()
        var (clockA, clockB) = (clockA0, clockB0)
        var onA = record
        var onB = record
        onA.set(.password, to: .text("p1"), stamp: clockA.send(now: 2_000))
        onB.set(.title, to: .text("Mail (work)"), stamp: clockB.send(now: 3_000))
        onB.set(.folder, to: .text("Personal"), stamp: clockB.send(now: 3_001))  // a move

        let merge = try SyncRecord.merge(local: onA, remote: onB)
        #expect(merge.record[.password] == .text("p1"))
        #expect(merge.record[.title] == .text("Mail (work)"))
        #expect(merge.record[.folder] == .text("Personal"))
        #expect(merge.record.conflicts.isEmpty)
        #expect(merge.fields == [.password: .keptLocal, .title: .tookRemote, .folder: .tookRemote])
        #expect(merge.deletion == .notDeleted)
        #expect(try onB.merged(with: onA).canonicalBytes == merge.record.canonicalBytes)
        // Nothing lost: the replaced values are history, not conflicts.
        #expect(merge.record.history[.password]?.values.map(\.value) == [.text("p0")])
    }

    @Test func theSameFieldOnBothSidesKeepsTheLaterAndMarksTheOther() throws {
        let (record, clockA0, clockB0) = base()
        var (clockA, clockB) = (clockA0, clockB0)
        var onA = record
        var onB = record
        let ancestor = record.fields[.password]!.stamp
        onA.set(.password, to: .text("from A"), stamp: clockA.send(now: 5_000))
        onB.set(.password, to: .text("from B"), stamp: clockB.send(now: 4_000))  // B's clock is behind

        let merge = try SyncRecord.merge(local: onB, remote: onA)
        let stampA = onA.fields[.password]!.stamp
        let stampB = onB.fields[.password]!.stamp
        #expect(merge.record[.password] == .text("from A"))
        #expect(merge.fields[.password] == .conflict(kept: stampA, other: stampB, ancestor: ancestor))
        #expect(merge.conflictingFields == [.password])
        let conflicts = merge.record.conflicts
        #expect(conflicts.count == 1)
        #expect(conflicts.first?.field == .password)
        #expect(conflicts.first?.other.value == .text("from B"))
        #expect(conflicts.first?.current.value == .text("from A"))
        // The other side sees the same record and the same mark.
        let mirrored = try SyncRecord.merge(local: onA, remote: onB)
        #expect(mirrored.record.canonicalBytes == merge.record.canonicalBytes)
        #expect(mirrored.fields[.password] == .conflict(kept: stampA, other: stampB, ancestor: ancestor))
    }

    @Test func passwordHistoryIsNotAConflict() {
        var (record, clockA, _) = base()
        record.set(.password, to: .text("p1"), stamp: clockA.send(now: 2_000))
        record.set(.password, to: .text("p2"), stamp: clockA.send(now: 3_000))
        #expect(record.versions(of: .password).map(\.value) == [.text("p0"), .text("p1"), .text("p2")])
        #expect(record.conflicts.isEmpty)
        // Writing the value the field already holds writes nothing.
        let wrote = record.set(.password, to: .text("p2"), stamp: clockA.send(now: 4_000))
        #expect(!wrote)
        #expect(record.historyCount == 2)
    }

    @Test func resolvingAConflictClearsTheMarkOnEveryReplica() throws {
        var (record, clockA, clockB) = base()
        var onA = record
        var onB = record
        onA.set(.user, to: .text("ada@a"), stamp: clockA.send(now: 2_000))
        onB.set(.user, to: .text("ada@b"), stamp: clockB.send(now: 2_000))
        record = try onA.merged(with: onB)
        #expect(record.conflicts.count == 1)
        clockA.receive(record.latestStamp!, now: 2_001)
        var resolved = record
        resolved.resolveConflicts(in: .user, keeping: .text("ada@a"), stamp: clockA.send(now: 2_002))
        #expect(resolved.conflicts.isEmpty)
        #expect(resolved[.user] == .text("ada@a"))
        // B, still holding the unresolved record, merges the resolution: no mark there either.
        #expect(try record.merged(with: resolved).conflicts.isEmpty)
        #expect(try record.merged(with: resolved).canonicalBytes == resolved.canonicalBytes)
    }

    @Test func deleteVersusEditKeepsTheEdit() throws {
        let (record, clockA0, clockB0) = base()
        var (clockA, clockB) = (clockA0, clockB0)
        var onA = record
        var onB = record
        onA.delete(stamp: clockA.send(now: 9_000))
        // B edits offline with a clock far behind: its edit is stamped before A's deletion.
        onB.set(.notes, to: .text("new recovery codes"), stamp: clockB.send(now: 1_500))
        #expect(onA.isDeleted)

        let merge = try SyncRecord.merge(local: onA, remote: onB)
        #expect(!merge.record.isDeleted)
        #expect(merge.deletion == .editKeptOverDeletion)
        #expect(merge.record[.notes] == .text("new recovery codes"))
        #expect(try onB.merged(with: onA).canonicalBytes == merge.record.canonicalBytes)

        // A deletion made after seeing the edit does delete it, on every replica.
        var onC = merge.record
        clockA.receive(onC.latestStamp!, now: 9_100)
        onC.delete(stamp: clockA.send(now: 9_100))
        let final = try SyncRecord.merge(local: onB, remote: onC)
        #expect(final.record.isDeleted)
        #expect(final.deletion == .deleted)
        #expect(try onC.merged(with: merge.record).isDeleted)
    }

    @Test func anEditAfterADeletionOnTheSameDeviceRestoresTheItem() {
        var (record, clockA, _) = base()
        record.delete(stamp: clockA.send(now: 2_000))
        #expect(record.isDeleted)
        record.set(.title, to: .text("Mail, restored"), stamp: clockA.send(now: 2_001))
        #expect(!record.isDeleted)
    }

    @Test func passkeysAddedOnTwoDevicesAreBothKept() throws {
        var (record, clockA, clockB) = base()
        var onA = record
        var onB = record
        onA.set(.passkey("k1"), to: .bytes([1, 2, 3]), stamp: clockA.send(now: 2_000))
        onB.set(.passkey("k2"), to: .bytes([4, 5, 6]), stamp: clockB.send(now: 2_000))
        record = try onA.merged(with: onB)
        #expect(record[.passkey("k1")] == .bytes([1, 2, 3]))
        #expect(record[.passkey("k2")] == .bytes([4, 5, 6]))
        #expect(record.conflicts.isEmpty)
        #expect(FieldKey.passkey("k1").isPasskey && !FieldKey.password.isPasskey)
    }

    @Test func recordsOfDifferentItemsDoNotMerge() {
        let (record, _, _) = base()
        #expect(throws: VaultSyncError(.itemMismatch, "")) {
            try record.merged(with: SyncRecord(id: ItemID(high: 9, low: 9)))
        }
    }

    /// Commutative, associative, idempotent — on bytes, over divergent replicas of random edits.
    @Test(arguments: 0..<40)
    func mergeIsASemilattice(seed: UInt64) throws {
        var generator = SeededRandomNumberGenerator(seed: seed)
        let replicas = RecordFixtures.divergentReplicas(of: id, count: 3, edits: 30, using: &generator)
        let (x, y, z) = (replicas[0], replicas[1], replicas[2])
        #expect(try x.merged(with: y).canonicalBytes == y.merged(with: x).canonicalBytes)
        #expect(
            try x.merged(with: y).merged(with: z).canonicalBytes == x.merged(with: y.merged(with: z)).canonicalBytes
        )
        #expect(try x.merged(with: x).canonicalBytes == x.canonicalBytes)
        let all = try x.merged(with: y).merged(with: z)
        #expect(try all.merged(with: y).canonicalBytes == all.canonicalBytes)  // absorbing what it holds
        // Nothing any replica held is lost.
        for replica in replicas {
            for (field, version) in replica.fields {
                #expect(all.version(of: field, stamped: version.stamp) == version)
            }
            for (field, versions) in replica.history {
                for version in versions.values { #expect(all.version(of: field, stamped: version.stamp) == version) }
            }
        }
    }
}
