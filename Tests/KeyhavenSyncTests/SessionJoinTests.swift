import Crypto
import Foundation
import Hummingbird
import HummingbirdTesting
import KeyhavenApp
import KeyhavenTesting
import SyncClient
import SyncServer
import SyncServerHTTP
import Synchronization
import Testing
import Vault
import VaultSync
import _KeyhavenSupport

@testable import KeyhavenSync

/// A second device joins (docs/sync.md "A device joins"), end to end: two real sessions on two
/// real vault files, the real server on a loopback port, the join code carried between them.
@Suite(.offCooperativePool)
struct SessionJoinTests {
    /// The titles of the session's credentials (not recently deleted ones), sorted.
    static func titles(_ session: KeyhavenSession) async throws -> [String] {
        guard case .listing(let listing) = await session.answer(.list(deleted: false)) else {
            throw TestFailure("the list is answered with a listing")
        }
        return listing.credentials.map(\.content.title).sorted()
    }

    /// Approves `code` on `laptop` as soon as the phone's request is on the server.
    static func approve(_ laptop: KeyhavenSession, code: String) async throws -> SyncApproval {
        for _ in 0..<100 {
            switch await attempt(laptop, code: code) {
            case .success(let approval): return approval
            case .failure(let error) where error.code == .notFound: try await Task.sleep(for: .milliseconds(50))
            case .failure(let error): throw error
            }
        }
        throw TestFailure("the join request never reached the server")
    }

    static func attempt(_ laptop: KeyhavenSession, code: String) async -> Result<SyncApproval, SyncError> {
        do {
            return .success(try await laptop.approveDevice(code: code))
        } catch {
            return .failure(error)
        }
    }

    static func joinCode() throws -> JoinCode { try JoinCode(parsing: KeyhavenSession.makeJoinCode()) }

    @Test func aPhoneWithACredentialOfItsOwnJoinsAndBothEndWithEverything() async throws {
        let clock = TestClock()
        let laptopVault = try TestVault(now: { clock.now })
        for title in ["Mail", "Bank", "Forum"] {
            _ = try laptopVault.vault.add(CredentialContent(title: title, user: "ada", password: "\(title)-pw"))
        }
        let phoneVault = try TestVault(now: { clock.now })
        let shop = try phoneVault.vault.add(CredentialContent(title: "Shop", user: "ada", password: "shop-pw"))
        try await withSyncServer(clock: clock) { server in
            let laptop = try await syncingLaptop(laptopVault, server: server, clock: clock)
            let phone = try await unlockedSession(phoneVault, clock: clock)
            let code = try Self.joinCode()
            let joining = Task {
                try await phone.joinSync(
                    server: server,
                    deviceName: "phone",
                    code: code,
                    timeout: .seconds(20),
                    poll: .milliseconds(50)
                )
            }
            // The person types the code as they read it: lowercase, spaces for dashes.
            let typed = code.text.lowercased().replacingOccurrences(of: "-", with: " ")
            let approval = try await Self.approve(laptop, code: typed)
            #expect(approval.deviceName == "phone")
            let status = try await joining.value
            #expect(status.enabled && status.server == server && status.pending == 0)
            #expect(status.account == (try await laptop.syncStatus()).account)
            #expect(status.deviceID == approval.deviceID)

            #expect(try await Self.titles(phone) == ["Bank", "Forum", "Mail", "Shop"])
            _ = try await laptop.syncNow()
            #expect(try await Self.titles(laptop) == ["Bank", "Forum", "Mail", "Shop"])

            // An edit on the phone reaches the laptop.
            clock.advance(1)
            var changes = CredentialChanges()
            changes.password = "shop-pw-2"
            guard case .credential = await phone.answer(.update(id: shop, changes: changes)) else {
                throw TestFailure("the edit is answered with the credential")
            }
            #expect(try await phone.syncNow().pushed == 1)
            #expect(try await laptop.syncNow().updated == 1)
            guard case .credential(let onLaptop) = await laptop.answer(.credential(id: shop)) else {
                throw TestFailure("the laptop has the phone's credential")
            }
            #expect(onLaptop.content.password == "shop-pw-2")

            // Both devices listed, each marking itself; neither revokes itself.
            let devices = try await laptop.syncDevices()
            #expect(devices.map(\.name).sorted() == ["laptop", "phone"])
            #expect(devices.first { $0.current }?.name == "laptop")
            #expect(devices.first { $0.name == "phone" }?.approvedBy == devices.first { $0.current }?.id)
            #expect(try await phone.syncDevices().first { $0.current }?.name == "phone")
            do {
                _ = try await phone.revokeDevice(approval.deviceID)
                Issue.record("a device does not revoke itself")
            } catch let error as SyncError {
                #expect(error.code == .invalidInput && error.message.contains("sync disable"))
            }
            // The code was used once.
            do {
                _ = try await laptop.approveDevice(code: code.text)
                Issue.record("a code is approved once")
            } catch let error as SyncError {
                #expect(error.code == .refused)
            }

            // Revoked, the phone no longer reaches the server.
            let revoked = try await laptop.revokeDevice(approval.deviceID)
            #expect(revoked.revoked != nil && !revoked.current)
            #expect(await phone.syncNowError()?.code == .refused)
        }
    }

    @Test func aServerThatSwapsTheNewDevicesKeyIsRefusedAndNothingIsApproved() async throws {
        let clock = TestClock()
        let laptopVault = try TestVault(now: { clock.now })
        _ = try laptopVault.vault.add(CredentialContent(title: "Mail", user: "ada", password: "pw"))
        let phoneVault = try TestVault(now: { clock.now })
        _ = try phoneVault.vault.add(CredentialContent(title: "Shop", user: "ada", password: "shop-pw"))
        let attacker = Curve25519.KeyAgreement.PrivateKey()
        try await withSyncServer(clock: clock, swappingAgreementKeyFor: Array(attacker.publicKey.rawRepresentation)) {
            server in
            let laptop = try await syncingLaptop(laptopVault, server: server, clock: clock)
            let phone = try await unlockedSession(phoneVault, clock: clock)
            let code = try Self.joinCode()
            let joining = Task {
                try await phone.joinSync(
                    server: server,
                    deviceName: "phone",
                    code: code,
                    timeout: .seconds(2),
                    poll: .milliseconds(50)
                )
            }
            do {
                _ = try await Self.approve(laptop, code: code.text)
                Issue.record("a request whose key was swapped is refused")
            } catch let error as SyncError {
                #expect(error.code == .mismatch)
                #expect(
                    error.message.contains(
                        "the join request does not match this code — someone may have altered it; nothing was approved"
                    )
                )
            }
            do {
                _ = try await joining.value
                Issue.record("nobody approved the phone")
            } catch let error as SyncError {
                #expect(error.code == .notApproved)
            }
            #expect(try await laptop.syncDevices().count == 1)
            #expect(try await phone.syncStatus() == .disabled)
            #expect(try await Self.titles(phone) == ["Shop"])
        }
    }

    @Test func aWrongCodeFindsNoRequestAndATimeoutLeavesThePhoneAsItWas() async throws {
        let clock = TestClock()
        let laptopVault = try TestVault(now: { clock.now })
        let phoneVault = try TestVault(now: { clock.now })
        _ = try phoneVault.vault.add(CredentialContent(title: "Shop", user: "ada", password: "shop-pw"))
        try await withSyncServer(clock: clock) { server in
            let laptop = try await syncingLaptop(laptopVault, server: server, clock: clock)
            let nobodys = try Self.joinCode()
            do {
                _ = try await laptop.approveDevice(code: nobodys.text)
                Issue.record("a code nobody made is not found")
            } catch let error as SyncError {
                #expect(error.code == .notFound && error.message.contains("no join request for this code"))
            }
            do {
                _ = try await laptop.approveDevice(code: "K7QM-2XPA-9FRT")
                Issue.record("a short code is refused")
            } catch let error as SyncError {
                #expect(error.code == .invalidInput && error.message.contains("16 letters and digits"))
            }

            let phone = try await unlockedSession(phoneVault, clock: clock)
            let started = ContinuousClock.now
            let code = try Self.joinCode()
            do {
                _ = try await phone.joinSync(
                    server: server,
                    deviceName: "phone",
                    code: code,
                    timeout: .seconds(1),
                    poll: .milliseconds(100)
                )
                Issue.record("nobody approved the phone")
            } catch let error as SyncError {
                #expect(error.code == .notApproved)
                #expect(error.message.contains("sync stays off"))
            }
            #expect(ContinuousClock.now - started < .seconds(5))
            #expect(try await phone.syncStatus() == .disabled)
            #expect(try await Self.titles(phone) == ["Shop"])
            #expect(try await phone.savedSyncState() == nil)
        }
    }

    @Test func aLostAnswerToTheEnrolmentIsAskedAgainAndCountsAsEnrolled() async throws {
        let clock = TestClock()
        let laptopVault = try TestVault(now: { clock.now })
        _ = try laptopVault.vault.add(CredentialContent(title: "Mail", user: "ada", password: "pw"))
        let phoneVault = try TestVault(now: { clock.now })
        try await withSyncServer(clock: clock, swappingAgreementKeyFor: nil, losingEnrolments: 1) { server in
            let laptop = try await syncingLaptop(laptopVault, server: server, clock: clock)
            let phone = try await unlockedSession(phoneVault, clock: clock)
            let code = try Self.joinCode()
            let joining = Task {
                try await phone.joinSync(
                    server: server,
                    deviceName: "phone",
                    code: code,
                    timeout: .seconds(20),
                    poll: .milliseconds(50)
                )
            }
            _ = try await Self.approve(laptop, code: code.text)
            let status = try await joining.value
            #expect(status.enabled && status.pending == 0)
            #expect(try await Self.titles(phone) == ["Mail"])
            #expect(try await laptop.syncDevices().map(\.name).sorted() == ["laptop", "phone"])
        }
    }

    @Test func lockingDuringTheWaitStopsTheJoinBeforeEnrolling() async throws {
        let clock = TestClock()
        let laptopVault = try TestVault(now: { clock.now })
        let phoneVault = try TestVault(now: { clock.now })
        try await withSyncServer(clock: clock) { server in
            let laptop = try await syncingLaptop(laptopVault, server: server, clock: clock)
            let phone = try await unlockedSession(phoneVault, clock: clock)
            let code = try Self.joinCode()
            let joining = Task {
                try await phone.joinSync(
                    server: server,
                    deviceName: "phone",
                    code: code,
                    timeout: .seconds(20),
                    poll: .seconds(2)
                )
            }
            // Approved while the phone sleeps between two polls, then locked before the next.
            _ = try await Self.approve(laptop, code: code.text)
            await phone.lock()
            do {
                _ = try await joining.value
                Issue.record("a locked vault does not join")
            } catch let error as SyncError {
                #expect(error.code == .locked && error.message.contains("nothing changed on this device"))
            }
            #expect(try await laptop.syncDevices().count == 1)
            try await phone.unlock(masterPassword: phoneVault.masterPassword)
            #expect(try await phone.savedSyncState() == nil)
        }
    }

    @Test func theIdleLockDoesNotFireWhileWaitingForTheApproval() async throws {
        let clock = TestClock()
        let laptopVault = try TestVault(now: { clock.now })
        let phoneVault = try TestVault(now: { clock.now })
        try await withSyncServer(clock: clock) { server in
            let laptop = try await syncingLaptop(laptopVault, server: server, clock: clock)
            let phone = try await unlockedSession(phoneVault, clock: clock)
            try await phone.setIdleLock(60)
            let code = try Self.joinCode()
            let joining = Task {
                try await phone.joinSync(
                    server: server,
                    deviceName: "phone",
                    code: code,
                    timeout: .seconds(20),
                    poll: .milliseconds(20)
                )
            }
            // Five minutes pass, in steps shorter than the idle lock; after each, the agent's
            // timer ticks once the wait has polled again (or after 3 seconds without a poll).
            for _ in 0..<10 {
                clock.advance(30)
                for _ in 0..<150 {
                    if let left = await phone.status().lockIn, left > 45 { break }
                    try await Task.sleep(for: .milliseconds(20))
                }
                await phone.tick()
            }
            #expect(await phone.isUnlocked)
            _ = try await Self.approve(laptop, code: code.text)
            #expect(try await joining.value.enabled)
        }
    }

    @Test func aJoinWhileSyncIsOnPostsNothingAndALockedLaptopApprovesNothing() async throws {
        let clock = TestClock()
        let laptopVault = try TestVault(now: { clock.now })
        try await withSyncServer(clock: clock) { server in
            let laptop = try await syncingLaptop(laptopVault, server: server, clock: clock)
            let code = try Self.joinCode()
            do {
                _ = try await laptop.joinSync(server: server, deviceName: "again", code: code, timeout: .seconds(5))
                Issue.record("a vault with sync on does not join")
            } catch let error as SyncError {
                #expect(error.code == .alreadyEnabled && error.message.contains("sync disable"))
            }
            // Nothing was posted: the code finds no request.
            do {
                _ = try await laptop.approveDevice(code: code.text)
                Issue.record("no request was posted")
            } catch let error as SyncError {
                #expect(error.code == .notFound)
            }
            await laptop.lock()
            do {
                _ = try await laptop.approveDevice(code: code.text)
                Issue.record("a locked vault approves nothing")
            } catch let error as SyncError {
                #expect(error.code == .locked)
            }
        }
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A sync store that hands out every join request with `agreementKey` in place of the new
/// device's: a server substituting its own key to open the grant.
/// With `loseEnrolments`, that many enrolments are stored and then answered with a failure: a
/// `201` lost on the way back.
struct SwappingStore: SyncStore {
    let store: SQLiteSyncStore
    let agreementKey: [UInt8]?
    var loseEnrolments = LostAnswers(0)

    func createAccount(_ account: String, firstDevice: EnrolledDevice) async throws {
        try await store.createAccount(account, firstDevice: firstDevice)
    }
    func addDevice(_ device: EnrolledDevice, approvedBy approver: String) async throws {
        try await store.addDevice(device, approvedBy: approver)
        if loseEnrolments.take() { throw LostAnswer() }
    }
    func device(_ id: String) async throws -> EnrolledDevice? { try await store.device(id) }
    func devices(of account: String) async throws -> [EnrolledDevice] { try await store.devices(of: account) }
    func revoke(_ device: String, of account: String, at date: Date) async throws -> Bool {
        try await store.revoke(device, of: account, at: date)
    }
    func saveChallenge(hash: [UInt8], device: String, expires: Date, keepAtMost: Int, purgeBefore: Date?) async throws {
        try await store.saveChallenge(
            hash: hash,
            device: device,
            expires: expires,
            keepAtMost: keepAtMost,
            purgeBefore: purgeBefore
        )
    }
    func takeChallenge(hash: [UInt8]) async throws -> (device: String, expires: Date)? {
        try await store.takeChallenge(hash: hash)
    }
    func saveToken(hash: [UInt8], device: String, expires: Date, purgeBefore: Date?) async throws {
        try await store.saveToken(hash: hash, device: device, expires: expires, purgeBefore: purgeBefore)
    }
    func tokenHolder(hash: [UInt8], now: Date) async throws -> EnrolledDevice? {
        try await store.tokenHolder(hash: hash, now: now)
    }
    func saveJoinRequest(_ request: JoinRequest, now: Date, maxPending: Int) async throws {
        try await store.saveJoinRequest(request, now: now, maxPending: maxPending)
    }
    func joinRequest(lookup: String, now: Date) async throws -> JoinRequest? {
        guard var request = try await store.joinRequest(lookup: lookup, now: now) else { return nil }
        if let agreementKey { request.agreementKey = agreementKey }
        return request
    }
    func saveJoinGrant(_ grant: [UInt8], lookup: String, now: Date) async throws {
        try await store.saveJoinGrant(grant, lookup: lookup, now: now)
    }
    func push(_ mutation: Mutation, account: String) async throws -> PushResponse {
        try await store.push(mutation, account: account)
    }
    func changes(account: String, since cursor: UInt64, limit: Int, maxBytes: Int) async throws -> ChangeBatch {
        try await store.changes(account: account, since: cursor, limit: limit, maxBytes: maxBytes)
    }
}

struct LostAnswer: Error {}

/// How many more answers to lose.
final class LostAnswers: Sendable {
    let left: Mutex<Int>
    init(_ count: Int) { left = Mutex(count) }
    func take() -> Bool {
        left.withLock { left in
            guard left > 0 else { return false }
            left -= 1
            return true
        }
    }
}

/// ``withSyncServer(clock:_:)`` on a server whose store swaps every join request's agreement key
/// (when given), and loses the answer to the first `losingEnrolments` enrolments.
func withSyncServer<T: Sendable>(
    clock: TestClock,
    swappingAgreementKeyFor agreementKey: [UInt8]?,
    losingEnrolments: Int = 0,
    _ body: @escaping @Sendable (String) async throws -> T
) async throws -> T {
    let store = SwappingStore(
        store: try SQLiteSyncStore(path: nil),
        agreementKey: agreementKey,
        loseEnrolments: LostAnswers(losingEnrolments)
    )
    var configuration = SyncServerConfiguration()
    configuration.now = { clock.now }
    let service = SyncService(store: store, configuration: configuration)
    let app = Application(router: SyncHTTPServer(service: service).router())
    return try await app.test(.live) { client in
        guard let port = client.port else { throw NoPort() }
        service.serving(at: ServiceOrigin(scheme: .http, host: "127.0.0.1", port: port)!)
        return try await body("http://127.0.0.1:\(port)")
    }
}
