import AutoFill
import Crypto
import Foundation
import KeyhavenApp
import KeyhavenTesting
import SyncClient
import Synchronization
import Testing
import Vault
import VaultSync
import VaultSyncBridge
import _KeyhavenSupport

@testable import KeyhavenSync

/// The agent's background sync on a real session, a real vault file and the real server on a
/// loopback port, with the phone simulated beside it; waits poll the session with a deadline.
@Suite(.offCooperativePool)
struct BackgroundSyncTests {
    /// Polls `condition` every 50 ms until it holds or `seconds` pass.
    static func eventually(
        within seconds: Double = 15,
        _ condition: () async throws -> Bool
    ) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return try await condition()
    }

    /// Sleeps the loop asks for, recorded; short ones pass in 20 ms, 100 s or more waits for real
    /// (until cancelled).
    final class RecordingSleep: Sendable {
        let asked = Mutex<[Duration]>([])
        var durations: [Duration] { asked.withLock { $0 } }

        var sleep: @Sendable (Duration) async throws -> Void {
            { duration in
                self.asked.withLock { $0.append(duration) }
                try await Task.sleep(for: duration >= .seconds(100) ? duration : .milliseconds(20))
            }
        }
    }

    static func timing(_ recording: RecordingSleep) -> BackgroundSync.Timing {
        var timing = BackgroundSync.Timing()
        timing.recheck = .seconds(3600)
        timing.sleep = recording.sleep
        return timing
    }

    @Test func theBackoffDoublesFromOneSecondToFiveMinutes() {
        let timing = BackgroundSync.Timing()
        #expect(
            (1...11).map { timing.backoff(after: $0) }
                == [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300].map { Duration.seconds($0) }
        )
        #expect(timing.backoff(after: 1000) == .seconds(300))
    }

    @Test func anotherDevicesEditArrivesAndALocalEditLeavesWithoutAManualSync() async throws {
        let clock = TestClock()
        let test = try TestVault(now: { clock.now })
        let mail = try test.vault.add(
            CredentialContent(title: "Mail", services: [ServiceIdentifier("mail.example")], user: "ada", password: "p0")
        )
        try await withSyncServer(clock: clock) { server in
            // An idle lock of 10 minutes: the background sync's vault calls must not keep it open.
            let laptop = KeyhavenSession(
                .init(vaultURL: test.url, idleLock: 600, allowInsecureKDF: true, now: { clock.now })
            )
            try await laptop.unlock(masterPassword: test.masterPassword)
            _ = try await laptop.enableSync(server: server, deviceName: "laptop")
            var phone = try await Phone(joining: laptop, server: server, clock: clock)
            try await phone.session.pull()
            let autofill = AutoFillAgent(session: laptop)
            let pairing = try await BrowserPairing(agent: autofill).pair()

            let recording = RecordingSleep()
            let background = BackgroundSync(session: laptop, timing: Self.timing(recording))
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await background.run() }
                #expect(try await Self.eventually { background.state.phase == "waiting" }, "\(background.state)")
                #expect(background.state.syncs >= 1 && background.state.lastError == nil)

                // The phone edits and pushes; the laptop's long poll wakes and its sync merges it.
                clock.advance(100)
                try await SessionSyncTests.phoneEdits(&phone, mail, clock: clock) { $0.user = "ada.lovelace" }
                #expect(try await Self.eventually { try test.vault.credential(mail).user == "ada.lovelace" })
                #expect(
                    try #require(await laptop.status().lockIn) <= 500,
                    "the background sync is not the person's activity"
                )
                // AutoFill answers with it (its identities are read again at the change).
                let users = await autofill.handle(
                    ["id": 1, "type": "identities.query", "url": "https://mail.example/login"],
                    pairingId: pairing
                )["ok"]?["identities"]?.array?.compactMap { $0["user"]?.string }
                #expect(users == ["ada.lovelace"])

                // An edit here leaves on its own, about a second later.
                var changes = CredentialChanges()
                changes.notes = "from the laptop"
                guard case .credential = await laptop.answerWithSync(.update(id: mail, changes: changes)) else {
                    Issue.record("the edit is answered")
                    group.cancelAll()
                    return
                }
                #expect(
                    try await Self.eventually {
                        try await phone.session.pull()
                        return try phone.session.replica.credential(ItemID(mail)).content.notes == "from the laptop"
                    }
                )
                #expect(try await Self.eventually { try await laptop.syncStatus().pending == 0 })
                // One sync for the edit: the long poll that comes back with the laptop's own push
                // is not another one.
                #expect(try await Self.eventually { background.state.phase == "waiting" })
                let afterEdit = background.state.syncs
                #expect(
                    try await !Self.eventually(within: 2) { background.state.syncs > afterEdit },
                    "the echo of the push made another sync"
                )

                // Locked: the loop stops; the phone's next edit stays on the server.
                await laptop.lock()
                #expect(try await Self.eventually { background.state.phase == "locked" })
                let syncs = background.state.syncs
                try await SessionSyncTests.phoneEdits(&phone, mail, clock: clock) { $0.user = "ada.byron" }
                try await Task.sleep(for: .milliseconds(500))
                #expect(background.state.syncs == syncs)
                #expect(try test.vault.credential(mail).user == "ada.lovelace")

                // Unlocked again: it syncs at once and brings the edit.
                try await laptop.unlock(masterPassword: test.masterPassword)
                #expect(try await Self.eventually { try test.vault.credential(mail).user == "ada.byron" })
                #expect(try await Self.eventually { background.state.phase == "waiting" })
                // The agent stopping: the loop ends at once, its long poll with it.
                let stopping = ContinuousClock.now
                group.cancelAll()
                try await group.waitForAll()
                #expect(ContinuousClock.now - stopping < .seconds(5), "\(ContinuousClock.now - stopping)")
            }
            #expect(background.state.phase == "stopped")
        }
    }

    @Test func aServerOutOfReachIsTriedAgainLaterAndNothingElseWaits() async throws {
        let clock = TestClock()
        let test = try TestVault(now: { clock.now })
        let mail = try test.vault.add(CredentialContent(title: "Mail", user: "ada", password: "p0"))
        // Sync on with a server that is gone once the closure returns.
        let laptop = try await withSyncServer(clock: clock) { server in
            try await syncingLaptop(test, server: server, clock: clock)
        }
        try test.vault.update(mail) { $0.notes = "offline" }

        let recording = RecordingSleep()
        let background = BackgroundSync(session: laptop, timing: Self.timing(recording))
        try await withThrowingTaskGroup(of: Void.self) { group throws -> Void in
            group.addTask { await background.run() }
            let schedule: [Duration] = [1, 2, 4, 8, 16, 32, 64, 128].map { .seconds($0) }
            #expect(
                try await Self.eventually { recording.durations.count >= schedule.count },
                "\(recording.durations)"
            )
            #expect(Array(recording.durations.prefix(schedule.count)) == schedule)
            let state = background.state
            #expect(state.phase == "backingOff" && state.lastError == "unreachable" && state.failures == 8)
            #expect(state.nextAttempt == clock.now.addingTimeInterval(128))
            #expect(state.lastErrorMessage?.contains("pending") == true, "\(state.lastErrorMessage ?? "")")

            // Meanwhile the session answers at once: a list (what AutoFill and the CLI read), the status.
            let started = ContinuousClock.now
            guard case .listing(let listing) = await laptop.answerWithSync(.list(deleted: false)) else {
                Issue.record("the list is answered")
                group.cancelAll()
                return
            }
            #expect(listing.credentials.map(\.id) == [mail])
            #expect(try await laptop.syncStatus().pending == 1)
            #expect(ContinuousClock.now - started < .seconds(1))

            // Locking ends the 128 s wait at once.
            await laptop.lock()
            #expect(try await Self.eventually(within: 5) { background.state.phase == "locked" })
            #expect(background.state.nextAttempt == nil)
            group.cancelAll()
        }
    }
}

extension BackgroundSyncTests {
    @Test func disablingSyncStopsTheLoopAtOnceWithoutBusy() async throws {
        let clock = TestClock()
        let test = try TestVault(now: { clock.now })
        let stopping = try await withSyncServer(clock: clock) { server in
            let laptop = try await syncingLaptop(test, server: server, clock: clock)
            let recording = RecordingSleep()
            let background = BackgroundSync(session: laptop, timing: Self.timing(recording))
            try await withThrowingTaskGroup(of: Void.self) { group throws -> Void in
                group.addTask { await background.run() }
                #expect(try await Self.eventually { background.state.phase == "waiting" }, "\(background.state)")
                // A sync of this session runs meanwhile: disable waits for it rather than `busy`.
                let syncing = Task { await laptop.answerWithSync(.syncNow) }
                let answer = await laptop.answerWithSync(.syncDisable)
                guard case .syncStatus = answer else {
                    Issue.record("disable is answered: \(answer)")
                    group.cancelAll()
                    return
                }
                _ = await syncing.value
                // The loop leaves its long poll (the old key) at once: off, with no 30 s look needed.
                #expect(try await Self.eventually(within: 5) { background.state.phase == "off" }, "\(background.state)")
                group.cancelAll()
            }
            return ContinuousClock.now
        }
        // The server's stop ends the long poll the loop left open (it does not wait out its 25 s).
        #expect(ContinuousClock.now - stopping < .seconds(10), "\(ContinuousClock.now - stopping)")
    }

    @Test func aLongPollThatKeepsFailingBacksOffThoughSyncWorks() async throws {
        let clock = TestClock()
        let test = try TestVault(now: { clock.now })
        try await withSyncServer(clock: clock) { server in
            let laptop = try await syncingLaptop(test, server: server, clock: clock)
            let recording = RecordingSleep()
            var timing = Self.timing(recording)
            // Refused by the client at once (a poll of less than 1 s), while every sync works.
            timing.longPoll = .milliseconds(10)
            let background = BackgroundSync(session: laptop, timing: timing)
            try await withThrowingTaskGroup(of: Void.self) { group throws -> Void in
                group.addTask { await background.run() }
                #expect(
                    try await Self.eventually { background.state.failures >= 4 },
                    "\(background.state) \(recording.durations)"
                )
                // The back-offs (the hour-long looks left out) grow though every sync in between works.
                let backoffs = recording.durations.filter { $0 < .seconds(3600) }
                #expect(Array(backoffs.prefix(4)) == [1, 2, 4, 8].map { Duration.seconds($0) }, "\(backoffs)")
                #expect(background.state.syncs >= 4)
                group.cancelAll()
            }
        }
    }
}

/// Pairs with an AutoFill agent as the extension does (see AutoFillTests' `HarnessView`).
struct BrowserPairing {
    let agent: AutoFillAgent

    static func random(_ count: Int) -> Data { Data((0..<count).map { _ in UInt8.random(in: .min ... .max) }) }

    func pair() async throws -> String {
        let clientNonce = Self.random(16)
        let offer = try await agent.beginPairing(
            clientNonce: clientNonce,
            request: nil,
            caller: "test",
            browser: "chromium"
        )
        let shown = try #require(await agent.waitForPairingCode(timeout: 1))
        let client = try PairingExchange(
            role: .extensionSide,
            context: PairingContext(
                code: shown.code,
                request: offer.request,
                browser: "chromium",
                caller: "test",
                clientNonce: clientNonce,
                agentNonce: offer.agentNonce
            ),
            scalar: Self.random(32)
        )
        let keys = try client.keys(otherShare: offer.agentShare)
        let (id, _) = try await agent.finishPairing(
            request: offer.request,
            clientShare: client.share,
            clientConfirm: keys.clientConfirm
        )
        return id
    }
}
