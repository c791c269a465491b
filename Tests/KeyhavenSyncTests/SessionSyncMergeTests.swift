import Foundation
import GRDB
import KeyhavenApp
import KeyhavenTesting
import SyncClient
import Synchronization
import Testing
import Vault
import VaultSync
import VaultSyncBridge

@testable import KeyhavenSync

/// What a sync does with edits made while it waits on the server, with restores, damaged rows,
/// history from the server, a second process and a sync that brings nothing (review of
/// sync-device).
extension SessionSyncTests {
    /// The phone changes `change` of `item` and pushes it.
    static func phoneEdits(
        _ phone: inout Phone,
        _ item: CredentialID,
        clock: TestClock,
        _ change: (inout CredentialContent) -> Void
    ) async throws {
        clock.advance(1)
        var edited = try phone.session.replica.credential(ItemID(item)).content
        change(&edited)
        try phone.session.replica.write(edited, passkeys: [], to: ItemID(item), now: clock.milliseconds)
        #expect(try await phone.session.push().confirmed == 1)
    }

    /// `syncNow()` with `hook` run while the sync is between the network and its last vault write.
    static func syncNow(
        _ session: KeyhavenSession,
        during hook: @escaping @Sendable () async -> Void
    ) async throws -> SyncReport {
        try await SyncHooks.$duringNetwork.withValue(hook) { try await session.syncNow() }
    }

    @Test func aVaultEditDuringTheNetworkOnAFieldTheServerChangedIsAConflictKeepingBoth() async throws {
        let clock = TestClock()
        let test = try TestVault(now: { clock.now })
        let mail = try test.vault.add(CredentialContent(title: "Mail", user: "ada", password: "p0"))
        try await withSyncServer(clock: clock) { server in
            let session = try await syncingLaptop(test, server: server, clock: clock)
            var phone = try await Phone(joining: session, server: server, clock: clock)
            try await phone.session.pull()
            try await Self.phoneEdits(&phone, mail, clock: clock) { $0.password = "phone password" }

            clock.advance(1)
            let vault = test.vault
            _ = try await Self.syncNow(session) {
                clock.advance(1)
                _ = try? vault.update(mail) { $0.password = "laptop password" }
            }
            let merged = try #require(try await session.savedSyncState()).replica.credential(ItemID(mail))
            #expect(merged.content.password == "laptop password")
            #expect(merged.conflicts.map(\.field) == [.password])
            #expect(merged.conflicts.first?.other == .text("phone password"))
            #expect(try test.vault.credential(mail).password == "laptop password")
            #expect(try await session.syncStatus().conflicts == 1)

            // The next sync sends it: the phone holds both values too, with the mark.
            _ = try await session.syncNow()
            try await phone.session.pull()
            let there = try phone.session.replica.credential(ItemID(mail))
            #expect(there.content.password == "laptop password")
            #expect(there.conflicts.map(\.other) == [.text("phone password")])
        }
    }

    @Test func aVaultDeletionDuringTheNetworkKeepsTheServersEdit() async throws {
        let clock = TestClock()
        let test = try TestVault(now: { clock.now })
        let mail = try test.vault.add(CredentialContent(title: "Mail", user: "ada", password: "p0"))
        try await withSyncServer(clock: clock) { server in
            let session = try await syncingLaptop(test, server: server, clock: clock)
            var phone = try await Phone(joining: session, server: server, clock: clock)
            try await phone.session.pull()
            try await Self.phoneEdits(&phone, mail, clock: clock) { $0.notes = "from the phone" }

            let vault = test.vault
            _ = try await Self.syncNow(session) {
                clock.advance(1)
                try? vault.remove(mail)
            }
            let kept = try test.vault.credential(mail)
            #expect(kept.deleted == nil, "delete versus an edit it had not seen keeps the edit")
            #expect(kept.notes == "from the phone")
            _ = try await session.syncNow()
            try await phone.session.pull()
            #expect(try phone.session.replica.credential(ItemID(mail)).deleted == nil)
        }
    }

    @Test func aRestoreFromRecentlyDeletedStaysRestoredHereAndEverywhere() async throws {
        let clock = TestClock()
        let test = try TestVault(now: { clock.now })
        let mail = try test.vault.add(CredentialContent(title: "Mail", user: "ada", password: "p0"))
        try await withSyncServer(clock: clock) { server in
            let session = try await syncingLaptop(test, server: server, clock: clock)
            var phone = try await Phone(joining: session, server: server, clock: clock)

            clock.advance(1)
            try test.vault.remove(mail)
            _ = try await session.syncNow()
            try await phone.session.pull()
            #expect(try phone.session.replica.credential(ItemID(mail)).deleted != nil)

            clock.advance(1)
            try test.vault.restore(mail)
            let report = try await session.syncNow()
            #expect(report.deleted == 0 && report.status.pending == 0)
            #expect(try test.vault.credential(mail).deleted == nil, "the sync does not delete it again")
            _ = try await session.syncNow()
            #expect(try test.vault.credential(mail).deleted == nil)
            try await phone.session.pull()
            let there = try phone.session.replica.credential(ItemID(mail))
            #expect(there.deleted == nil && there.content.password == "p0" && there.conflicts.isEmpty)
        }
    }

    @Test func aDamagedRowIsLeftAloneAndTheOthersStillSync() async throws {
        let clock = TestClock()
        let test = try TestVault(now: { clock.now })
        let mail = try test.vault.add(CredentialContent(title: "Mail", user: "ada", password: "p0"))
        let bank = try test.vault.add(CredentialContent(title: "Bank", user: "ada", password: "b0"))
        try await withSyncServer(clock: clock) { server in
            let session = try await syncingLaptop(test, server: server, clock: clock)
            var phone = try await Phone(joining: session, server: server, clock: clock)
            try await phone.session.pull()

            // Flip one byte of the bank's sealed row, as disk corruption would.
            let database = try DatabaseQueue(path: test.url.path)
            try await database.write { db in
                var sealed = try #require(
                    try Data.fetchOne(db, sql: "SELECT sealed FROM credential WHERE id = ?", arguments: [bank.rawValue])
                )
                sealed[sealed.count / 2] ^= 0x01
                try db.execute(
                    sql: "UPDATE credential SET sealed = ? WHERE id = ?",
                    arguments: [sealed, bank.rawValue]
                )
            }
            try database.close()

            try await Self.phoneEdits(&phone, mail, clock: clock) { $0.notes = "from the phone" }
            try await Self.phoneEdits(&phone, bank, clock: clock) { $0.notes = "bank notes" }
            clock.advance(1)
            let report = try await session.syncNow()
            #expect(report.updated == 1)
            #expect(try test.vault.credential(mail).notes == "from the phone")
            let replica = try #require(try await session.savedSyncState()).replica
            #expect(try replica.credential(ItemID(bank)).content.notes == "bank notes", "kept for the row's repair")
            #expect(try replica.credential(ItemID(bank)).deleted == nil, "a damaged row is no deletion")
        }
    }

    @Test func aCredentialCreatedFromTheServerComesWithItsPasswordHistory() async throws {
        let clock = TestClock()
        let test = try TestVault(now: { clock.now })
        try await withSyncServer(clock: clock) { server in
            let session = try await syncingLaptop(test, server: server, clock: clock)
            var phone = try await Phone(joining: session, server: server, clock: clock)
            var random = SystemRandomNumberGenerator()
            let created = ItemID(using: &random)
            try phone.session.replica.adopt(
                SyncedCredential(
                    content: CredentialContent(title: "Phone", user: "p", password: "new"),
                    passwordHistory: [
                        PasswordHistoryEntry(password: "first", replaced: clock.now.addingTimeInterval(-20)),
                        PasswordHistoryEntry(password: "second", replaced: clock.now.addingTimeInterval(-10)),
                    ],
                    created: clock.now.addingTimeInterval(-30)
                ),
                as: created,
                now: clock.milliseconds
            )
            try await phone.session.push()
            clock.advance(1)
            #expect(try await session.syncNow().created == 1)
            let id = CredentialID(created)
            #expect(try test.vault.credential(id).password == "new")
            #expect(try test.vault.history(id).map(\.password) == ["first", "second"])
            // Written as the server has it: the next sync sends nothing back.
            let quiet = try await session.syncNow()
            #expect(quiet.status.pending == 0 && quiet.updated == 0)
        }
    }

    @Test func aSyncThatBringsNothingWritesNoReplicaAndPublishesNoChange() async throws {
        let clock = TestClock()
        let test = try TestVault(now: { clock.now })
        try test.vault.add(CredentialContent(title: "Mail", user: "ada", password: "p0"))
        try await withSyncServer(clock: clock) { server in
            let session = try await syncingLaptop(test, server: server, clock: clock)
            _ = try await session.syncNow()
            let revision = await session.currentRevision
            let generation = try await session.syncStateGeneration()
            clock.advance(5)
            let quiet = try await session.syncNow()
            #expect(quiet.status.lastSync == clock.now)
            #expect(await session.currentRevision == revision, "no change of credentials is published")
            let after = try await session.syncStateGeneration()
            #expect(after[1] == generation[1], "the replica is not sealed again")
            #expect(after[0] == generation[0].map { $0 + 1 }, "only the device part (its last sync) is saved")
        }
    }

    @Test func aSecondProcessSyncingMeanwhileMakesThisSyncBusyAndLosesNothing() async throws {
        let clock = TestClock()
        let test = try TestVault(now: { clock.now })
        let mail = try test.vault.add(CredentialContent(title: "Mail", user: "ada", password: "p0"))
        try await withSyncServer(clock: clock) { server in
            let session = try await syncingLaptop(test, server: server, clock: clock)
            let other = try await unlockedSession(test, clock: clock)  // another process's session

            clock.advance(1)
            try test.vault.update(mail) { $0.password = "p1" }
            let vault = test.vault
            let during = Mutex<SyncReport?>(nil)
            do {
                _ = try await Self.syncNow(session) {
                    clock.advance(1)
                    _ = try? vault.update(mail) { $0.notes = "meanwhile" }
                    let report = try? await SyncHooks.$duringNetwork.withValue(nil) { try await other.syncNow() }
                    during.withLock { $0 = report }
                }
                Issue.record("the sync that read the state before the other process saved is refused")
            } catch let error as SyncError {
                #expect(error.code == .busy, "\(error)")
            }
            #expect(during.withLock { $0 } != nil, "the other process's sync went through")
            let report = try await session.syncNow()
            #expect(report.status.pending == 0 && report.status.conflicts == 0)
            var phone = try await Phone(joining: session, server: server, clock: clock)
            try await phone.session.pull()
            let there = try phone.session.replica.credential(ItemID(mail))
            #expect(there.content.password == "p1" && there.content.notes == "meanwhile")
            #expect(there.conflicts.isEmpty)
        }
    }

    @Test func disablingRemovesTheSyncStateAndKeepsTheCredentials() async throws {
        let clock = TestClock()
        let test = try TestVault(now: { clock.now })
        let mail = try test.vault.add(CredentialContent(title: "Mail", user: "ada", password: "p0"))
        try await withSyncServer(clock: clock) { server in
            let session = try await unlockedSession(test, clock: clock)
            let on = try await session.enableSync(server: server, deviceName: "laptop")
            let answer = await session.answerWithSync(.syncDisable)
            #expect(answer == .syncStatus(on), "answered with the status sync had")
            #expect(try await session.syncStatus() == .disabled)
            #expect(try await session.savedSyncState() == nil)
            #expect(try test.vault.credential(mail).password == "p0")
            #expect(await session.syncNowError()?.code == .notEnabled)
            guard case .failure(let error) = await session.answerWithSync(.syncDisable) else {
                Issue.record("disabling again is refused")
                return
            }
            #expect(error.code.name == "notEnabled")
            // On again: a new account, every credential sent again.
            let again = try await session.enableSync(server: server, deviceName: "laptop")
            #expect(again.enabled && again.account != on.account && again.pending == 0)
        }
    }

    @Test func aFailedLastStepAfterAFailedNetworkKeepsTheNetworksErrorFirst() async throws {
        let clock = TestClock()
        let test = try TestVault(now: { clock.now })
        let mail = try test.vault.add(CredentialContent(title: "Mail", user: "ada", password: "p0"))
        try await withSyncServer(clock: clock) { server in
            let session = try await syncingLaptop(test, server: server, clock: clock)
            var state = try #require(try await session.savedSyncState())
            state.server = "http://127.0.0.1:1"
            try await session.saveSyncState(state)
            try test.vault.update(mail) { $0.password = "offline edit" }
            do {
                _ = try await Self.syncNow(session) { await session.lock() }
                Issue.record("the sync fails")
            } catch let error as SyncError {
                #expect(error.code == .unreachable, "\(error)")
                #expect(error.message.contains("Saving what was merged also failed"), "\(error)")
                #expect(error.message.contains("locked"), "\(error)")
            }
            try await session.unlock(masterPassword: test.masterPassword)
            #expect(try await session.syncStatus().pending == 1, "the edit stays pending")
        }
    }

    @Test func aServersTextIsPrintedWithoutControlCharacters() {
        let printed = KeyhavenSession.printable("too large\u{1B}[2J\nkeyhaven: fake\u{7}")
        #expect(printed == "too large\u{FFFD}[2J\u{FFFD}keyhaven: fake\u{FFFD}")
        #expect(KeyhavenSession.printable("plain — ünïcode") == "plain — ünïcode")
        // Bidi overrides and line separators (a device name from the server) too.
        #expect(KeyhavenSession.printable("phone\u{202E}txt.exe\u{2028}x") == "phone\u{FFFD}txt.exe\u{FFFD}x")
    }
}
