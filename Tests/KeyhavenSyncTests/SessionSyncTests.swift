import Foundation
import KeyhavenApp
import KeyhavenTesting
import SyncClient
import Testing
import Vault
import VaultSync
import VaultSyncBridge

@testable import KeyhavenSync

/// `enableSync`, `syncNow` and `syncStatus` on a real session and a real vault file, against the
/// real sync server on a loopback port, with a second device simulated beside it.
@Suite(.offCooperativePool)
struct SessionSyncTests {
    @Test func enablingPushesEveryCredentialAndRefusesASecondTime() async throws {
        let clock = TestClock()
        let test = try TestVault(now: { clock.now })
        let mail = try test.vault.add(CredentialContent(title: "Mail", user: "ada", password: "p0"))
        try test.vault.update(mail) { $0.password = "p1" }
        let bank = try test.vault.add(CredentialContent(title: "Bank", user: "ada", password: "b0", notes: "PIN"))
        let old = try test.vault.add(CredentialContent(title: "Old", user: "ada"))
        try test.vault.remove(old)
        try await withSyncServer(clock: clock) { server in
            let session = try await unlockedSession(test, clock: clock)
            #expect(try await session.syncStatus() == .disabled)
            #expect(await session.syncNowError()?.code == .notEnabled)

            let status = try await session.enableSync(server: server, deviceName: "laptop")
            #expect(status.enabled && status.pending == 0 && status.server == server)
            #expect(status.deviceName == "laptop" && status.lastSync == clock.now)
            #expect(status.account?.count == 32 && status.deviceID?.count == 32)
            #expect(try await session.syncStatus() == status)

            var phone = try await Phone(joining: session, server: server, clock: clock)
            try await phone.session.pull()
            let replica = phone.session.replica
            #expect(Set(replica.records.keys) == Set([mail, bank, old].map(ItemID.init)))
            #expect(try replica.credential(ItemID(mail)).content == test.vault.credential(mail).content)
            #expect(try replica.credential(ItemID(mail)).passwordHistory.map(\.password) == ["p0"])
            #expect(try replica.credential(ItemID(bank)).content.notes == "PIN")
            #expect(try replica.credential(ItemID(old)).deleted != nil)

            do {
                _ = try await session.enableSync(server: server, deviceName: "again")
                Issue.record("a second enable is refused")
            } catch let error as SyncError {
                #expect(error.code == .alreadyEnabled)
            }
        }
    }

    @Test func anEditReachesTheServerAndAnotherDevicesChangesComeIntoTheVault() async throws {
        let clock = TestClock()
        let test = try TestVault(now: { clock.now })
        let mail = try test.vault.add(CredentialContent(title: "Mail", user: "ada", password: "p0"))
        let bank = try test.vault.add(CredentialContent(title: "Bank", user: "ada", password: "b0"))
        try await withSyncServer(clock: clock) { server in
            let session = try await syncingLaptop(test, server: server, clock: clock)
            var phone = try await Phone(joining: session, server: server, clock: clock)
            try await phone.session.pull()

            // An edit through the session reaches the server.
            clock.advance(1)
            var changes = CredentialChanges()
            changes.password = "p1"
            guard case .credential = await session.answer(.update(id: mail, changes: changes)) else {
                Issue.record("the edit is answered with the credential")
                return
            }
            #expect(try await session.syncStatus().pending == 1, "an edit since the last sync is pending")
            let sent = try await session.syncNow()
            #expect(sent.pushed == 1 && sent.status.pending == 0)
            try await phone.session.pull()
            #expect(try phone.session.replica.credential(ItemID(mail)).content.password == "p1")
            #expect(try phone.session.replica.credential(ItemID(mail)).passwordHistory.map(\.password) == ["p0"])

            // The phone edits one, creates one and deletes one; the next sync brings them in.
            clock.advance(1)
            var edited = try phone.session.replica.credential(ItemID(mail)).content
            edited.notes = "from the phone"
            try phone.session.replica.write(edited, passkeys: [], to: ItemID(mail), now: clock.milliseconds)
            var random = SystemRandomNumberGenerator()
            let created = ItemID(using: &random)
            try phone.session.replica.adopt(
                SyncedCredential(content: CredentialContent(title: "Phone", user: "p"), created: clock.now),
                as: created,
                now: clock.milliseconds
            )
            try phone.session.replica.delete(ItemID(bank), now: clock.milliseconds)
            #expect(try await phone.session.push().confirmed == 3)

            let events = await session.events()
            let before = await session.currentRevision
            clock.advance(1)
            let report = try await session.syncNow()
            #expect(report.updated == 1 && report.created == 1 && report.deleted == 1)
            #expect(report.pulled >= 3 && report.pushed == 0)
            #expect(try test.vault.credential(mail).notes == "from the phone")
            #expect(try test.vault.credential(mail).password == "p1")
            #expect(try test.vault.credential(CredentialID(created)).title == "Phone")
            #expect(try test.vault.credential(bank).deleted != nil)
            #expect(await session.currentRevision > before, "the write-back is a change of the vault")
            var iterator = events.makeAsyncIterator()
            guard case .changed = await iterator.next() else {
                Issue.record("the session publishes the change")
                return
            }
            // Nothing goes back and forth: a second sync changes nothing.
            let quiet = try await session.syncNow()
            #expect(quiet.pushed == 0 && quiet.updated == 0 && quiet.created == 0 && quiet.deleted == 0)
            #expect(quiet.status.lastSync == clock.now)
        }
    }

    @Test func disjointOfflineEditsOnBothDevicesMerge() async throws {
        let clock = TestClock()
        let test = try TestVault(now: { clock.now })
        let mail = try test.vault.add(CredentialContent(title: "Mail", user: "ada", password: "p0", notes: "n0"))
        try await withSyncServer(clock: clock) { server in
            let session = try await syncingLaptop(test, server: server, clock: clock)
            var phone = try await Phone(joining: session, server: server, clock: clock)
            try await phone.session.pull()

            clock.advance(1)
            try test.vault.update(mail) { $0.password = "laptop password" }
            clock.advance(1)
            var edited = try phone.session.replica.credential(ItemID(mail)).content
            edited.notes = "phone notes"
            edited.folder = "Work"
            try phone.session.replica.write(edited, passkeys: [], to: ItemID(mail), now: clock.milliseconds)
            try await phone.session.push()

            clock.advance(1)
            let report = try await session.syncNow()
            #expect(report.status.pending == 0 && report.status.conflicts == 0)
            let merged = try test.vault.credential(mail)
            #expect(merged.password == "laptop password")
            #expect(merged.notes == "phone notes" && merged.folder == "Work")
            try await phone.session.pull()
            #expect(try phone.session.replica.credential(ItemID(mail)).content == merged.content)
        }
    }

    @Test func anUnreachableServerFailsAtOnceAndKeepsEverythingPending() async throws {
        let clock = TestClock()
        let test = try TestVault(now: { clock.now })
        let mail = try test.vault.add(CredentialContent(title: "Mail", user: "ada", password: "p0"))
        try await withSyncServer(clock: clock) { server in
            let session = try await syncingLaptop(test, server: server, clock: clock)
            let synced = try await session.syncStatus().lastSync

            // The device's server is not there (a closed port): the sync fails at once.
            var state = try #require(try await session.savedSyncState())
            state.server = "http://127.0.0.1:1"
            try await session.saveSyncState(state)
            clock.advance(60)
            try test.vault.update(mail) { $0.password = "offline edit" }
            let started = ContinuousClock.now
            let error = await session.syncNowError()
            // Refused at once, not after a request's deadline (10 s); loose for a loaded machine.
            #expect(ContinuousClock.now - started < .seconds(8))
            #expect(error?.code == .unreachable)
            #expect(error?.message.contains("1 change stays pending here") == true, "\(String(describing: error))")
            let status = try await session.syncStatus()
            #expect(status.pending == 1 && status.lastSync == synced)
            #expect(try test.vault.credential(mail).password == "offline edit")

            // Back online: the pending edit goes out.
            state.server = server
            state.replica = try #require(try await session.savedSyncState()).replica
            try await session.saveSyncState(state)
            let report = try await session.syncNow()
            #expect(report.pushed == 1 && report.status.pending == 0 && report.status.lastSync == clock.now)
            var phone = try await Phone(joining: session, server: server, clock: clock)
            try await phone.session.pull()
            #expect(try phone.session.replica.credential(ItemID(mail)).content.password == "offline edit")
        }
    }
}
