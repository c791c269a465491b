import Foundation
import Hummingbird
import HummingbirdTesting
import KeyhavenTesting
import NIOCore
import SyncClient
import SyncServer
import Testing
import Vault
import VaultSync
import VaultSyncBridge

/// A device recovers from a server restored from a backup, a server that does not wait, one that
/// is busy, and one that lies; and only trustworthy URLs are spoken to.
@Suite(.offCooperativePool)
struct SyncRecoveryTests {
    static func temporaryDirectory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("keyhaven-sync-restore-\(UUID())")
    }

    /// The laptop wrote an item up to revision 3; the server is restored to when it was at 1. The
    /// laptop's next push is stale at revision 1 (lower than it knows): it is sent on top of
    /// exactly that revision and lands — before, it was sent on revision 3 again, forever.
    @Test(.timeLimit(.minutes(1))) func aPushAfterTheServerWasRestoredEndsWithNothingLost() async throws {
        let clock = SharedClock()
        let (directory, backup) = (Self.temporaryDirectory(), Self.temporaryDirectory())
        defer { for folder in [directory, backup] { try? FileManager.default.removeItem(at: folder) } }
        var random = SystemRandomNumberGenerator()
        let item = ItemID(using: &random)
        let content = CredentialContent(title: "Bank", user: "ada", password: "p0")

        var devices = try await withLiveSyncServer(clock: clock, directory: directory) { [content] server in
            var devices = try await TwoDevices(server: server, clock: clock)
            try devices.laptop.adopt(content, as: item, clock: clock)
            #expect(try await devices.laptop.session.push().confirmed == 1)
            return devices
        }
        try copyDatabase(from: directory, to: backup)
        devices = try await withLiveSyncServer(clock: clock, directory: directory) { [devices, content] server in
            var (devices, content) = (devices, content)
            try await devices.reconnect(to: server, clock: clock)
            for password in ["p1", "p2"] {
                clock.advance(1)
                content.password = password
                try devices.laptop.session.replica.write(content, passkeys: [], to: item, now: clock.milliseconds)
                #expect(try await devices.laptop.session.push().confirmed == 1)
            }
            #expect(devices.laptop.session.replica.revisions[item] == 3)
            return devices
        }
        try copyDatabase(from: backup, to: directory)
        try await withLiveSyncServer(clock: clock, directory: directory) { [devices] server in
            var devices = devices
            try await devices.reconnect(to: server, clock: clock)
            clock.advance(1)
            var edited = try devices.laptop.session.replica.credential(item).content
            #expect(edited.password == "p2")
            edited.notes = "PIN in the safe"
            try devices.laptop.session.replica.write(edited, passkeys: [], to: item, now: clock.milliseconds)
            let report = try await devices.laptop.session.push()
            #expect(report.merged == 1)
            #expect(report.confirmed == 1)
            #expect(devices.laptop.session.replica.outbox.isEmpty)
            #expect(devices.laptop.session.replica.revisions[item] == 2)

            try await devices.phone.session.pull()
            let seen = try devices.phone.session.replica.credential(item)
            #expect(seen.content == edited)
            #expect(seen.content.password == "p2")
        }
    }

    /// The laptop and the phone synced items A (before the backup) and B (after it); the server is
    /// restored. Their cursors are ahead of it: each pull is answered `cursorAhead`, resyncs from 0
    /// and the next push sends what the server lost (B with base 0). Both end with everything.
    @Test(.timeLimit(.minutes(1))) func aPullAfterTheServerWasRestoredResyncsWithNothingLost() async throws {
        let clock = SharedClock()
        let (directory, backup) = (Self.temporaryDirectory(), Self.temporaryDirectory())
        defer { for folder in [directory, backup] { try? FileManager.default.removeItem(at: folder) } }
        var random = SystemRandomNumberGenerator()
        let (first, second) = (ItemID(using: &random), ItemID(using: &random))
        let firstContent = CredentialContent(title: "Mail", user: "ada", password: "m0")
        let secondContent = CredentialContent(title: "Chat", user: "ada", password: "c0")

        var devices = try await withLiveSyncServer(clock: clock, directory: directory) { server in
            var devices = try await TwoDevices(server: server, clock: clock)
            try devices.laptop.adopt(firstContent, as: first, clock: clock)
            try await devices.laptop.session.sync()
            try await devices.phone.session.sync()
            return devices
        }
        try copyDatabase(from: directory, to: backup)
        devices = try await withLiveSyncServer(clock: clock, directory: directory) { [devices] server in
            var devices = devices
            try await devices.reconnect(to: server, clock: clock)
            clock.advance(1)
            var edited = firstContent
            edited.password = "m1"
            try devices.phone.session.replica.write(edited, passkeys: [], to: first, now: clock.milliseconds)
            try devices.phone.adopt(secondContent, as: second, clock: clock)
            try await devices.phone.session.sync()
            try await devices.laptop.session.sync()
            #expect(devices.laptop.session.replica.cursor > 1)
            return devices
        }
        try copyDatabase(from: backup, to: directory)
        try await withLiveSyncServer(clock: clock, directory: directory) { [devices] server in
            var devices = devices
            try await devices.reconnect(to: server, clock: clock)
            let ahead = devices.laptop.session.replica.cursor
            let error = try await #require(throws: SyncClientError.self) {
                try await devices.laptop.client.changes(since: ahead)
            }
            #expect(error.code == .cursorAhead)

            try await devices.laptop.session.sync()
            #expect(devices.laptop.session.replica.outbox.isEmpty)
            try await devices.phone.session.sync()
            try await devices.laptop.session.sync()
            for device in [devices.laptop, devices.phone] {
                #expect(try device.session.replica.credential(first).content.password == "m1")
                #expect(try device.session.replica.credential(second).content == secondContent)
            }
            #expect(devices.laptop.session.replica.records == devices.phone.session.replica.records)
            let everything = try await devices.phone.client.changes(since: 0)
            #expect(Set(everything.items.map(\.item)) == [first, second])
        }
    }

    /// A server with `--max-wait 0` answers every long poll at once: the device sleeps the rest of
    /// its wait instead of asking again and again; a wait under a second is refused.
    @Test func aServerThatDoesNotWaitIsNotPolledInALoop() async throws {
        let clock = SharedClock()
        let counter = RequestCounter()
        var noWait = SyncServerConfiguration()
        noWait.maxWait = .zero
        try await withLiveSyncServer(clock: clock, counter: counter, configuration: noWait) { server in
            var devices = try await TwoDevices(server: server, clock: clock)
            try await devices.phone.session.sync()
            let before = counter["/v1/changes"]
            let slept = DurationLog()
            devices.phone.session.sleep = { duration in
                if slept.add(duration) >= 2 { throw CancellationError() }
            }
            let phone = devices.phone.session
            let waiting = Task {
                var session = phone
                _ = try await session.waitForChanges(wait: .seconds(3))
            }
            // Stops a busy loop (without the fix) so that the test fails rather than hangs.
            let watchdog = Task {
                try await Task.sleep(for: .seconds(3))
                waiting.cancel()
            }
            await #expect(throws: CancellationError.self) { try await waiting.value }
            watchdog.cancel()
            #expect(counter["/v1/changes"] - before == 2)
            let durations = slept.all
            #expect(durations.count == 2)
            // The rest of each 3 s wait (less what the request took, however slow the machine).
            #expect(durations.allSatisfy { $0 > .milliseconds(500) && $0 <= .seconds(3) })

            let refused = try await devices.phone.session.waitError(wait: .milliseconds(500))
            #expect(refused?.code == .invalidRequest)
        }
    }

    /// A server with too many long polls answers 429 `busy` with `Retry-After: 5`: the device
    /// waits that long before each new poll and gives up after `busyAnswers` answers in a row.
    @Test func aBusyServerIsWaitedOutThenTheDeviceGivesUp() async throws {
        let clock = SharedClock()
        let counter = RequestCounter()
        var crowded = SyncServerConfiguration()
        crowded.maxLongPollsPerDevice = 0
        try await withLiveSyncServer(clock: clock, counter: counter, configuration: crowded) { server in
            var devices = try await TwoDevices(server: server, clock: clock)
            try await devices.phone.session.sync()
            let before = counter["/v1/changes"]
            let slept = DurationLog()
            devices.phone.session.sleep = { duration in _ = slept.add(duration) }
            devices.phone.session.busyAnswers = 3
            let busy = try await devices.phone.session.waitError(wait: .seconds(2))
            #expect(busy?.code == .busy)
            #expect(busy?.retryAfter == 5)
            #expect(slept.all == [.seconds(5), .seconds(5)])
            #expect(counter["/v1/changes"] - before == 3)
        }
    }

    /// Concurrent calls on a client without a token share one sign-in.
    @Test func concurrentCallsShareOneSignIn() async throws {
        let clock = SharedClock()
        let counter = RequestCounter()
        try await withLiveSyncServer(clock: clock, counter: counter) { server in
            let devices = try await TwoDevices(server: server, clock: clock)
            let client = try SyncHTTPClient(server: server, key: devices.laptop.key, now: { clock.now })
            try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<6 { group.addTask { try await client.devices().count } }
                for try await count in group { #expect(count == 2) }
            }
            #expect(counter["/v1/auth/token"] == 1)
            #expect(counter["/v1/auth/challenge"] == 1)
        }
    }

    /// Only https, or http to this machine; never a user name, password, query or fragment (and a
    /// URL with a password is never quoted back).
    @Test func onlyTrustworthyServerURLs() throws {
        for server in [
            "https://sync.example.org", "https://sync.example.org:8443/keyhaven/", "http://127.0.0.1:8080",
            "http://localhost:1", "http://[::1]:2",
        ] {
            #expect(throws: Never.self) { try SyncHTTPClient(server: server, key: SyncDeviceKey()) }
        }
        for server in [
            "http://sync.example.org", "http://10.0.0.1:8080", "ftp://sync.example.org", "sync.example.org",
            "https://sync.example.org/?next=1", "https://sync.example.org/#x", "http://127.0.0.1.evil.org",
            "https://ada:hunter2@sync.example.org", "https://ada@sync.example.org",
        ] {
            let error = #expect(throws: SyncClientError.self, "\(server)") {
                try SyncHTTPClient(server: server, key: SyncDeviceKey())
            }
            #expect(error?.code == .invalidServer, "\(server)")
            #expect(error.map { !$0.message.contains("hunter2") && !$0.message.contains("ada@") } ?? false)
        }
    }
}

/// Servers that do not apply compare-and-swap: the device stops with a typed error.
@Suite(.offCooperativePool)
struct SyncLyingServerTests {
    /// Answers sign-in for any device and every push with `stale`, the current item being
    /// `payload` at `revisionsAhead` past the mutation's base revision.
    static func withStaleServer<T: Sendable>(
        payload: [UInt8],
        revisionsAhead: UInt64,
        pushes: RequestCounter,
        _ body: @escaping @Sendable (String) async throws -> T
    ) async throws -> T {
        let router = Router()
        router.post("v1/auth/challenge") { _, _ in
            try Self.json(ChallengeResponse(challenge: Array(repeating: 7, count: 32), expires: .distantFuture))
        }
        router.post("v1/auth/token") { request, context in
            let asked = try await request.decode(as: TokenRequest.self, context: context)
            return try Self.json(
                TokenResponse(
                    token: "t",
                    expires: .distantFuture,
                    device: asked.device,
                    account: String(repeating: "0", count: 32)
                )
            )
        }
        router.post("v1/push") { request, context in
            pushes.add("/v1/push")
            let push = try await request.decode(as: PushRequest.self, context: context)
            guard let item = ItemID(hex: push.item) else { throw ClientTestFailure("an item id not in hex") }
            let current = ServerItem(
                item: item,
                revision: push.baseRevision + revisionsAhead,
                payload: payload,
                sequence: 1
            )
            return try Self.json(PushResponseJSON(result: "stale", current: ItemJSON(current)), stale: true)
        }
        return try await Application(router: router).test(.live) { client in
            try await body("http://127.0.0.1:\(try #require(client.port))")
        }
    }

    static func json(_ value: some Encodable, stale: Bool = false) throws -> Response {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        return Response(
            status: stale ? .conflict : .ok,
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: Array(try encoder.encode(value))))
        )
    }

    static func replicaWithAnEditedItem() -> (SyncReplica, ItemID, [UInt8]) {
        var replica = SyncReplica(device: DeviceID(1))
        var random = SystemRandomNumberGenerator()
        let item = ItemID(using: &random)
        let old = replica.create(item, values: [.title: .text("old")], now: 1_000)
        _ = try? replica.set(.notes, to: .text("new"), in: item, now: 2_000)
        return (replica, item, old.canonicalBytes)
    }

    /// Stale at the mutation's own base (0 ahead): `badAnswer` at once; always stale one revision
    /// ahead: `noProgress` after `mergesPerItem` merges, the change still pending.
    @Test(arguments: [(UInt64(0), SyncClientError.Code.badAnswer), (1, .noProgress)])
    func aServerThatDoesNotApplyCompareAndSwapStopsThePush(ahead: UInt64, code: SyncClientError.Code) async throws {
        let (replica, item, old) = Self.replicaWithAnEditedItem()
        let pushes = RequestCounter()
        try await Self.withStaleServer(payload: old, revisionsAhead: ahead, pushes: pushes) { server in
            let client = try SyncHTTPClient(server: server, key: SyncDeviceKey())
            var session = SyncSession(replica: replica, codec: PlainPayloads(), client: client, now: { 3_000 })
            #expect(try await session.pushError()?.code == code)
            #expect(pushes["/v1/push"] == (ahead == 0 ? 1 : session.mergesPerItem))
            #expect(session.replica.outbox.contains(item))
        }
    }
}
