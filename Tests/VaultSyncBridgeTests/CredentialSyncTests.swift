import Foundation
import KeyhavenTesting
import Passkeys
import Testing
import Vault
import VaultSync
import VaultSyncBridge

/// Two devices editing one credential offline, synced sealed through the reference server: the
/// merge per field, seen on the credential side.
struct CredentialSyncTests {
    let item = ItemID(high: 28, low: 2)
    static let created = Date(timeIntervalSince1970: 1_700_000_000)
    static let start = CredentialRecordMapping.milliseconds(created)

    struct Devices {
        var server = ReferenceSyncServer()
        var a = SyncReplica(device: DeviceID(0xA))
        var b = SyncReplica(device: DeviceID(0xB))
        var codecA = CredentialFixtures.codec(seed: 28)
        var codecB = CredentialFixtures.codec(seed: 28)

        init() {
            codecB.generator = SeededRandomNumberGenerator(seed: 0xB)  // one vault key, nonces of its own
        }

        /// Pulls, then pushes until nothing is pending.
        mutating func sync(_ which: WritableKeyPath<Devices, SyncReplica>, now: UInt64) throws {
            var replica = self[keyPath: which]
            var codec = which == \Devices.a ? codecA : codecB
            try replica.apply(server.changes(since: replica.cursor), now: now, decoding: codec)
            var rounds = 0
            while let mutation = try replica.nextMutation(encoding: &codec) {
                try replica.handle(server.push(mutation), to: mutation, now: now, decoding: codec)
                rounds += 1
                #expect(rounds < 10)
            }
            self[keyPath: which] = replica
            if which == \Devices.a { codecA = codec } else { codecB = codec }
        }

        /// Both devices hold `credential`, synced.
        static func sharing(_ credential: SyncedCredential, item: ItemID) throws -> Devices {
            var devices = Devices()
            try devices.a.adopt(credential, as: item, now: CredentialSyncTests.start)
            try devices.sync(\.a, now: CredentialSyncTests.start + 1)
            try devices.sync(\.b, now: CredentialSyncTests.start + 2)
            #expect(try devices.b.credential(item) == credential)
            return devices
        }

        /// A, B, then A again: both have everything.
        mutating func syncBoth(now: UInt64) throws {
            try sync(\.a, now: now)
            try sync(\.b, now: now + 1)
            try sync(\.a, now: now + 2)
            #expect(a.records == b.records)
            #expect(a.outbox.isEmpty && b.outbox.isEmpty)
        }
    }

    static let bank = SyncedCredential(
        content: CredentialContent(
            title: "Bank",
            services: [ServiceIdentifier("bank.example")],
            user: "ada",
            password: "p0"
        ),
        created: created
    )

    @Test func disjointEditsOfOneCredentialBothSurvive() throws {
        var devices = try Devices.sharing(Self.bank, item: item)
        var generator = SeededRandomNumberGenerator(seed: 3)
        let passkey = CredentialFixtures.passkey(&generator, created: Self.created)
        var onA = Self.bank.content
        onA.password = "p1"
        var onB = Self.bank.content
        onB.notes = "the branch's number"
        onB.folder = "Finance"
        try devices.a.write(onA, passkeys: [], to: item, now: Self.start + 1_000)
        try devices.b.write(onB, passkeys: [passkey], to: item, now: Self.start + 2_000)
        try devices.syncBoth(now: Self.start + 3_000)

        let merged = try devices.a.credential(item)
        #expect(merged == (try devices.b.credential(item)))
        #expect(merged.content.password == "p1")
        #expect(merged.content.notes == "the branch's number" && merged.content.folder == "Finance")
        #expect(merged.passkeys == [passkey])
        #expect(
            merged.passwordHistory == [
                PasswordHistoryEntry(password: "p0", replaced: Self.created.addingTimeInterval(1))
            ]
        )
        #expect(merged.conflicts.isEmpty)
    }

    @Test func theSameFieldOnTwoDevicesKeepsTheLaterAndShowsTheOtherAsAConflict() throws {
        var devices = try Devices.sharing(Self.bank, item: item)
        var onA = Self.bank.content
        onA.title = "Bank (A)"
        onA.password = "from A"
        var onB = Self.bank.content
        onB.title = "Bank (B)"
        onB.password = "from B"
        try devices.a.write(onA, passkeys: [], to: item, now: Self.start + 1_000)
        try devices.b.write(onB, passkeys: [], to: item, now: Self.start + 2_000)
        try devices.syncBoth(now: Self.start + 3_000)

        for replica in [devices.a, devices.b] {
            let merged = try replica.credential(item)
            #expect(merged.content.title == "Bank (B)" && merged.content.password == "from B")
            // The loser is in the password history too: nothing anyone typed is lost.
            #expect(merged.passwordHistory.map(\.password) == ["p0", "from A"])
            let conflicts = merged.conflicts.map { ($0.field, $0.current, $0.other, $0.otherWritten) }
            let written = Self.created.addingTimeInterval(1)
            #expect(conflicts.count == 2)
            #expect(conflicts.first! == (.password, .text("from B"), .text("from A"), written))
            #expect(conflicts.last! == (.title, .text("Bank (B)"), .text("Bank (A)"), written))
        }

        // The person keeps A's title on A: the mark clears on both devices.
        try devices.a.resolveConflicts(
            in: item,
            field: CredentialField.title.key,
            keeping: .text("Bank (A)"),
            now: Self.start + 4_000
        )
        try devices.syncBoth(now: Self.start + 5_000)
        let resolved = try devices.b.credential(item)
        #expect(resolved.content.title == "Bank (A)")
        #expect(resolved.conflicts.map(\.field) == [.password])
    }

    /// A credential dated in the future (a skewed clock, an import) is stamped no later than the
    /// adopting device's wall clock: else that device's clock would stay there, and each of its
    /// later writes would beat every other device's, however much later they were made.
    @Test func aCredentialDatedInTheFutureDoesNotMakeItsDeviceWinEveryConflict() throws {
        var future = Self.bank
        future.created = .distantFuture
        future.passwordHistory = [PasswordHistoryEntry(password: "older", replaced: .distantFuture)]
        var devices = Devices()
        try devices.a.adopt(future, as: item, now: Self.start)
        let adopted = try devices.a.credential(item)
        #expect(CredentialRecordMapping.milliseconds(adopted.created) <= Self.start)
        #expect(adopted.passwordHistory.map(\.password) == ["older"])
        try devices.sync(\.a, now: Self.start + 1)
        try devices.sync(\.b, now: Self.start + 2)
        // Both change the password offline; B's change is the later one by every wall clock.
        var onA = future.content
        onA.password = "from A"
        var onB = future.content
        onB.password = "from B"
        try devices.a.write(onA, passkeys: [], to: item, now: Self.start + 10)
        try devices.b.write(onB, passkeys: [], to: item, now: Self.start + 20)
        try devices.syncBoth(now: Self.start + 30)
        #expect(try devices.a.credential(item).content.password == "from B")
        #expect(try devices.b.credential(item).conflicts.map(\.field) == [.password])
    }

    @Test func deleteVersusEditKeepsTheEdit() throws {
        var devices = try Devices.sharing(Self.bank, item: item)
        try devices.a.delete(item, now: Self.start + 5_000)
        #expect(try devices.a.credential(item).deleted == Self.created.addingTimeInterval(5))
        var onB = Self.bank.content
        onB.user = "ada.lovelace"
        // B's clock is slow: its edit is stamped before the deletion, and still wins.
        try devices.b.write(onB, passkeys: [], to: item, now: Self.start + 1_000)
        try devices.syncBoth(now: Self.start + 6_000)
        for replica in [devices.a, devices.b] {
            let merged = try replica.credential(item)
            #expect(merged.deleted == nil)
            #expect(merged.content.user == "ada.lovelace")
        }

        // A deletion that saw every edit holds on both.
        try devices.b.delete(item, now: Self.start + 7_000)
        try devices.syncBoth(now: Self.start + 8_000)
        #expect(try devices.a.credential(item).deleted == Self.created.addingTimeInterval(7))
    }

    @Test func aRemovedPasskeyIsRemovedEverywhere() throws {
        var generator = SeededRandomNumberGenerator(seed: 4)
        let kept = CredentialFixtures.passkey(&generator, created: Self.created)
        let removed = CredentialFixtures.passkey(&generator, created: Self.created)
        var credential = Self.bank
        credential = SyncedCredential(content: credential.content, passkeys: [kept, removed], created: Self.created)
        var devices = try Devices.sharing(credential, item: item)
        try devices.a.write(credential.content, passkeys: [kept], to: item, now: Self.start + 1_000)
        try devices.syncBoth(now: Self.start + 2_000)
        #expect(try devices.b.credential(item).passkeys == [kept])
    }
}
