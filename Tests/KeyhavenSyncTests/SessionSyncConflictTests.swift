import Foundation
import KeyhavenApp
import KeyhavenTesting
import SyncClient
import Synchronization
import Testing
import Vault
import VaultSync
import VaultSyncBridge

@testable import KeyhavenSync

/// Conflicts as the person sees and answers them: `syncConflicts(reveal:)` and
/// `resolveSyncConflict(_:field:keeping:)` on the session, `keyhaven list --conflicts` and
/// `keyhaven sync resolve` as processes on the same vault file.
extension SessionSyncTests {
    /// A same-field conflict on the password of a "Mail" credential: the phone wrote "phone
    /// password" while the laptop's vault wrote "laptop password" (later, so current), both offline.
    static func passwordConflict(
        _ test: TestVault,
        server: String,
        clock: TestClock
    ) async throws -> (KeyhavenSession, Phone, CredentialID) {
        let mail = try test.vault.add(
            CredentialContent(title: "Mail", services: [ServiceIdentifier("mail.example")], user: "ada", password: "p0")
        )
        let session = try await syncingLaptop(test, server: server, clock: clock)
        var phone = try await Phone(joining: session, server: server, clock: clock)
        try await phone.session.pull()
        try await Self.phoneEdits(&phone, mail, clock: clock) { $0.password = "phone password" }
        clock.advance(1)
        try test.vault.update(mail) { $0.password = "laptop password" }
        _ = try await session.syncNow()
        return (session, phone, mail)
    }

    @Test func aConflictIsListedMaskedOrRevealedAndResolvedKeepingTheOtherValueEverywhere() async throws {
        let clock = TestClock()
        let test = try TestVault(now: { clock.now })
        try await withSyncServer(clock: clock) { server in
            let (session, phone, mail) = try await Self.passwordConflict(test, server: server, clock: clock)
            var device = phone
            let quiet = try test.vault.add(CredentialContent(title: "Quiet", user: "bob", password: "q"))

            let masked = try await session.syncConflicts(reveal: false)
            #expect(masked.map(\.id) == [mail])
            let item = try #require(masked.first)
            #expect(item.title == "Mail" && item.service == "mail.example" && item.user == "ada")
            #expect(item.conflicts.count == 1)
            let conflict = try #require(item.conflicts.first)
            #expect(conflict.field == "password" && conflict.option == 1 && conflict.secret && conflict.masked)
            #expect(conflict.current == nil && conflict.other == nil, "a password stays hidden unless asked")
            #expect(conflict.otherWritten.timeIntervalSince1970 > 1_800_000_000)

            let revealed = try #require(try await session.syncConflicts(reveal: true).first?.conflicts.first)
            #expect(!revealed.masked && revealed.current == "laptop password" && revealed.other == "phone password")
            // The same through the request the agent and the CLI send.
            guard case .syncConflicts(let answered) = await session.answerWithSync(.syncConflicts(reveal: false))
            else {
                Issue.record("syncConflicts is answered with the list")
                return
            }
            #expect(answered == masked)

            // Clear refusals: a credential without conflicts, a field without one, an option not there.
            do throws(SyncError) {
                _ = try await session.resolveSyncConflict(quiet, field: "password", keeping: .current)
                Issue.record("a credential without conflicts is refused")
            } catch {
                #expect(error.code == .noConflict && error.message.contains("has no conflicts"), "\(error.message)")
            }
            do throws(SyncError) {
                _ = try await session.resolveSyncConflict(mail, field: "notes", keeping: .other(option: 1))
                Issue.record("a field without a conflict is refused")
            } catch {
                #expect(error.code == .noConflict && error.message.contains("password"), "\(error.message)")
            }
            do throws(SyncError) {
                _ = try await session.resolveSyncConflict(mail, field: "password", keeping: .other(option: 2))
                Issue.record("an option that is not there is refused")
            } catch {
                #expect(error.code == .invalidInput)
            }
            #expect(try await session.syncConflicts(reveal: false).count == 1, "nothing changed by the refusals")

            // Keep the other value: the vault holds it now (the laptop's goes to the history), the
            // mark is gone here, and the item is pending.
            let status = try await session.resolveSyncConflict(mail, field: "password", keeping: .other(option: 1))
            #expect(status.conflicts == 0 && status.pending >= 1)
            #expect(try test.vault.credential(mail).password == "phone password")
            #expect(try test.vault.history(mail).map(\.password).contains("laptop password"))
            #expect(try await session.syncConflicts(reveal: true).isEmpty)

            // The next sync sends it: the phone holds the resolution without a mark.
            _ = try await session.syncNow()
            try await device.session.pull()
            let there = try device.session.replica.credential(ItemID(mail))
            #expect(there.content.password == "phone password" && there.conflicts.isEmpty)
            #expect(device.session.replica.conflicts.isEmpty)
            #expect(try await session.syncStatus().conflicts == 0)
        }
    }

    @Test func keepingTheCurrentValueClearsTheMarkWithoutChangingTheVault() async throws {
        let clock = TestClock()
        let test = try TestVault(now: { clock.now })
        try await withSyncServer(clock: clock) { server in
            let (session, phone, mail) = try await Self.passwordConflict(test, server: server, clock: clock)
            var device = phone
            let history = try test.vault.history(mail)
            let status = try await session.resolveSyncConflict(mail, field: "password", keeping: .current)
            #expect(status.conflicts == 0 && status.pending == 1)
            #expect(try test.vault.credential(mail).password == "laptop password")
            #expect(try test.vault.history(mail) == history, "the same value again is no new password")
            _ = try await session.syncNow()
            try await device.session.pull()
            let there = try device.session.replica.credential(ItemID(mail))
            #expect(there.content.password == "laptop password" && there.conflicts.isEmpty)
        }
    }

    @Test func aResolutionDuringASyncWaitsForItRatherThanMakingItBusy() async throws {
        let clock = TestClock()
        let test = try TestVault(now: { clock.now })
        try await withSyncServer(clock: clock) { server in
            let (session, _, mail) = try await Self.passwordConflict(test, server: server, clock: clock)
            let resolved = Mutex<Task<SyncStatus, any Error>?>(nil)
            // While the sync is between the network and its last vault write, the person resolves.
            let report = try await Self.syncNow(session) {
                let task = Task { try await session.resolveSyncConflict(mail, field: "password", keeping: .current) }
                resolved.withLock { $0 = task }
                // Without the gate it would save the sync state now (the sync then fails `busy`);
                // with it, it waits for the sync to end.
                let deadline = ContinuousClock.now + .seconds(1)
                while ContinuousClock.now < deadline {
                    if (try? await session.syncStatus().conflicts) == 0 { break }
                    try? await Task.sleep(for: .milliseconds(20))
                }
            }
            #expect(report.status.conflicts == 1, "the sync ended first")
            let status = try await #require(resolved.withLock { $0 }).value
            #expect(status.conflicts == 0 && status.pending == 1)
        }
    }

    @Test func listConflictsAndSyncResolveAsProcesses() async throws {
        let clock = TestClock()
        let test = try TestVault(now: { clock.now })
        try await withSyncServer(clock: clock) { server in
            let (session, phone, mail) = try await Self.passwordConflict(test, server: server, clock: clock)
            var device = phone
            let runtime = try TemporaryDirectory.make()
            var environment = ProcessInfo.processInfo.environment
            environment["KEYHAVEN_VAULT"] = test.url.path
            environment["KEYHAVEN_PASSWORD"] = test.masterPassword
            environment["KEYHAVEN_INSECURE_KDF"] = "1"
            environment["KEYHAVEN_NO_AGENT"] = "1"
            environment["XDG_RUNTIME_DIR"] = runtime.path
            environment["HOME"] = runtime.path
            environment["XDG_CONFIG_HOME"] = runtime.appendingPathComponent("config").path
            let keyhaven = CommandRunner.keyhaven(environment: environment)

            struct Item: Decodable {
                struct Conflict: Decodable {
                    var field: String
                    var option: Int
                    var secret: Bool
                    var masked: Bool
                    var current: String?
                    var other: String?
                    var otherWritten: String
                }
                var id: String
                var title: String
                var service: String?
                var user: String
                var conflicts: [Conflict]
            }
            let listed = try await keyhaven.runDetached(["list", "--conflicts", "--json"])
            #expect(listed.status == 0, "\(listed.stderr)")
            #expect(!listed.stdout.contains("phone password") && !listed.stdout.contains("laptop password"))
            let items = try JSONDecoder().decode([Item].self, from: Data(listed.stdout.utf8))
            #expect(items.map(\.id) == [mail.rawValue] && items.first?.title == "Mail")
            #expect(items.first?.service == "mail.example" && items.first?.user == "ada")
            let conflict = try #require(items.first?.conflicts.first)
            #expect(conflict.field == "password" && conflict.option == 1 && conflict.secret && conflict.masked)
            #expect(conflict.current == nil && conflict.other == nil)
            #expect(ISO8601DateFormatter().date(from: conflict.otherWritten) != nil)

            let revealed = try await keyhaven.runDetached(["list", "--conflicts", "--reveal", "--json"])
            let open = try JSONDecoder().decode([Item].self, from: Data(revealed.stdout.utf8))
            #expect(open.first?.conflicts.first?.other == "phone password")
            #expect(open.first?.conflicts.first?.current == "laptop password")
            let text = try await keyhaven.runDetached(["list", "--conflicts"])
            #expect(
                text.stdout.contains("Mail") && text.stdout.contains("password: current ••••••••"),
                "\(text.stdout)"
            )
            #expect(text.stdout.contains("keyhaven sync resolve"))

            let short = String(mail.rawValue.prefix(8))
            let unknown = try await keyhaven.runDetached([
                "sync", "resolve", short, "--field", "colour", "--keep", "other",
            ])
            #expect(
                unknown.status == 1 && unknown.stderr.contains("no conflict on the field colour"),
                "\(unknown.stderr)"
            )
            #expect(unknown.stderr.contains("password"), "names the field that has one")
            let badKeep = try await keyhaven.runDetached([
                "sync", "resolve", short, "--field", "password", "--keep", "mine",
            ])
            #expect(badKeep.status != 0 && badKeep.stderr.contains("current, other or other:N"), "\(badKeep.stderr)")
            let quiet = try test.vault.add(CredentialContent(title: "Quiet", user: "bob", password: "q"))
            _ = try await session.syncNow()
            let none = try await keyhaven.runDetached(
                ["sync", "resolve", String(quiet.rawValue.prefix(8)), "--field", "password", "--keep", "current"]
            )
            #expect(none.status == 1 && none.stderr.contains("has no conflicts"), "\(none.stderr)")

            let resolved = try await keyhaven.runDetached(
                ["sync", "resolve", short, "--field", "password", "--keep", "other", "--json"]
            )
            #expect(resolved.status == 0, "\(resolved.stderr)")
            #expect(resolved.stdout.contains(#""conflicts" : 0"#), "\(resolved.stdout)")
            let empty = try await keyhaven.runDetached(["list", "--conflicts", "--json"])
            #expect(try JSONDecoder().decode([Item].self, from: Data(empty.stdout.utf8)).isEmpty)

            // The session (the agent's, were one running) sends it with the next sync.
            _ = try await session.syncNow()
            try await device.session.pull()
            let there = try device.session.replica.credential(ItemID(mail))
            #expect(there.content.password == "phone password" && there.conflicts.isEmpty)
            #expect(try test.vault.credential(mail).password == "phone password")
        }
    }
}
