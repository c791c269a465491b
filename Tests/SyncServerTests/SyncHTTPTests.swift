import Crypto
import Foundation
import HTTPTypes
import HummingbirdTesting
import KeyhavenTesting
import SyncServer
import Testing
import VaultSync
import _KeyhavenSupport

/// Real replicas syncing through the HTTP server; long polls; the payload cap; the canary.
@Suite(.offCooperativePool)
struct SyncHTTPTests {
    /// One replica's sync: pull, then push until nothing is pending.
    static func sync(
        _ replica: inout SyncReplica,
        api: SyncAPI,
        token: String,
        now: UInt64,
        codec: inout some PayloadCodec
    ) async throws {
        try replica.apply(try await api.changes(since: replica.cursor, token: token), now: now, decoding: codec)
        var rounds = 0
        while let mutation = try replica.nextMutation(encoding: &codec) {
            rounds += 1
            guard rounds < 200 else { throw TestFailure("replica \(replica.device) never finished pushing") }
            try replica.handle(try await api.push(mutation, token: token), to: mutation, now: now, decoding: codec)
        }
    }

    @Test(arguments: [3, 4] as [UInt64])
    func replicasSyncingThroughTheServerConverge(seed: UInt64) async throws {
        let service = SyncService.testing(store: try SQLiteSyncStore(path: nil), seed: seed)
        try await withSyncServer(service, .live) { api in
            var generator = SeededRandomNumberGenerator(seed: seed)
            let keys = (0..<3).map { _ in TestDeviceKey(&generator) }
            let account = try await api.createAccount(keys[0])
            for key in keys.dropFirst() {
                #expect(try await api.addDevice(key, to: account, approvedBy: keys[0]).status == .created)
            }
            var tokens: [String] = []
            for key in keys { tokens.append(try await api.signIn(key)) }
            var replicas = (1...3).map { SyncReplica(device: DeviceID(UInt64($0))) }
            var codec = PlainPayloads()
            let fields: [FieldKey] = [.title, .user, .password, .notes, .folder]
            var now: UInt64 = 10_000
            for _ in 0..<120 {
                now += UInt64.random(in: 1...50, using: &generator)
                let index = Int.random(in: 0..<3, using: &generator)
                let known = replicas[index].records.keys.sorted()
                switch Int.random(in: 0..<10, using: &generator) {
                case 0, 1:
                    _ = replicas[index].create(
                        ItemID(using: &generator),
                        values: [.title: .text("item \(now)"), .password: .text("p\(now)")],
                        now: now
                    )
                case 2 where !known.isEmpty:
                    try replicas[index].delete(known.randomElement(using: &generator)!, now: now)
                case 3, 4:
                    try await Self.sync(&replicas[index], api: api, token: tokens[index], now: now, codec: &codec)
                default:
                    guard let item = known.randomElement(using: &generator) else { continue }
                    try replicas[index].set(
                        fields.randomElement(using: &generator)!,
                        to: .text("v\(Int.random(in: 0..<1000, using: &generator))"),
                        in: item,
                        now: now
                    )
                }
            }
            // Everyone syncs until nothing is pending, then pulls once more.
            for round in 0..<2 {
                for index in replicas.indices {
                    try await Self.sync(
                        &replicas[index],
                        api: api,
                        token: tokens[index],
                        now: now + UInt64(round),
                        codec: &codec
                    )
                }
            }
            let server = try await api.changes(since: 0, token: tokens[0])
            let serverRecords = try Dictionary(
                uniqueKeysWithValues: server.items.map {
                    ($0.item, try SyncRecord(canonicalBytes: $0.payload).canonicalBytes)
                }
            )
            #expect(!serverRecords.isEmpty)
            for replica in replicas {
                #expect(replica.outbox.entries.isEmpty)
                #expect(replica.records.mapValues(\.canonicalBytes) == serverRecords)
            }
        }
    }

    @Test func aLongPollAnswersAsSoonAsAnotherDeviceWrites() async throws {
        // Re-checks would take a minute: only the in-process wake-up can answer in time.
        var configuration = SyncService.testing(store: try SQLiteSyncStore(path: nil)).configuration
        configuration.recheck = .seconds(60)
        let service = SyncService(store: try SQLiteSyncStore(path: nil), configuration: configuration)
        try await withSyncServer(service, .live) { api in
            var generator = SeededRandomNumberGenerator(seed: 9)
            let laptop = TestDeviceKey(&generator)
            let phone = TestDeviceKey(&generator)
            let account = try await api.createAccount(laptop)
            _ = try await api.addDevice(phone, to: account, approvedBy: laptop)
            let laptopToken = try await api.signIn(laptop)
            let phoneToken = try await api.signIn(phone)

            // Nothing happens: the poll answers empty when its time is up.
            let clock = ContinuousClock()
            var started = clock.now
            let idle = try await api.changes(since: 0, token: phoneToken, wait: 1)
            #expect(idle.items.isEmpty)
            #expect(clock.now - started >= .milliseconds(900))

            // The laptop writes while the phone waits (up to 30 s): the phone hears within moments.
            started = clock.now
            let poll = Task { try await api.changes(since: 0, token: phoneToken, wait: 30) }
            try await Task.sleep(for: .milliseconds(300))
            let item = ItemID(high: 5, low: 6)
            // (The test client has one connection, busy with the poll: the laptop's write goes to the
            // service directly.)
            let laptopDevice = try await service.authenticate(token: laptopToken)
            #expect(
                try await service.push(Mutation(item: item, baseRevision: 0, payload: [1, 2, 3]), by: laptopDevice)
                    == .accepted(revision: 1)
            )
            let written = clock.now
            let batch = try await poll.value
            #expect(batch.items.map(\.item) == [item])
            #expect(clock.now - written < .seconds(1))
            // A poll behind the cursor answers at once.
            started = clock.now
            #expect(try await api.changes(since: 0, token: phoneToken, wait: 30).items.count == 1)
            #expect(clock.now - started < .seconds(5))
            #expect(try await api.call(.get, "/v1/changes?since=0&wait=61", token: phoneToken).status == .badRequest)
            // No poll and no waiter is left behind.
            #expect(service.waitingLongPolls.polls == 0 && service.waitingLongPolls.waiters == 0)
        }
    }

    @Test func aPayloadOverTheCapIs413() async throws {
        let service = SyncService.testing(store: try SQLiteSyncStore(path: nil), maxItemBytes: 4096)
        try await withSyncServer(service) { api in
            var generator = SeededRandomNumberGenerator(seed: 10)
            let laptop = TestDeviceKey(&generator)
            _ = try await api.createAccount(laptop)
            let token = try await api.signIn(laptop)
            let item = ItemID(high: 1, low: 1).description
            let atCap = try await api.call(
                .post,
                "/v1/push",
                token: token,
                body: [
                    "item": item, "baseRevision": 0, "payload": Base64URL.encode([UInt8](repeating: 1, count: 4096)),
                ]
            )
            #expect(atCap.status == .ok)
            let over = try await api.call(
                .post,
                "/v1/push",
                token: token,
                body: [
                    "item": item, "baseRevision": 1, "payload": Base64URL.encode([UInt8](repeating: 1, count: 4097)),
                ]
            )
            #expect(over.status == .contentTooLarge)
            #expect(over.string("error") == "tooLarge")
            #expect(over.string("message")?.contains("at most 4096") == true)
            // A body far over any cap is cut off while it is read.
            let huge = try await api.call(
                .post,
                "/v1/push",
                token: token,
                raw: [UInt8](repeating: 0x20, count: 64 << 10)
            )
            #expect(huge.status == .contentTooLarge)
            #expect(huge.string("error") == "tooLarge")
            let bigAccount = try await api.call(.post, "/v1/accounts", raw: [UInt8](repeating: 0x20, count: 20 << 10))
            #expect(bigAccount.status == .contentTooLarge)
        }
    }

    /// The first piece of issue 28's canary: markers in every field of a sealed item, synced
    /// between two devices through the server; the server's SQLite file (and its WAL) holds none.
    @Test func theDatabaseNeverHoldsAPlaintextMarker() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sync-canary-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("sync.sqlite").path
        let store = try SQLiteSyncStore(path: path)
        let service = SyncService.testing(store: store)
        let marker = "CANARY-7f3a"
        try await withSyncServer(service) { api in
            var generator = SeededRandomNumberGenerator(seed: 11)
            let laptop = TestDeviceKey(&generator)
            let phone = TestDeviceKey(&generator)
            let account = try await api.createAccount(laptop, name: "canary-control-name")
            _ = try await api.addDevice(phone, to: account, approvedBy: laptop)
            let tokens = [try await api.signIn(laptop), try await api.signIn(phone)]
            let vaultKey = SymmetricKey(data: (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) })
            let sealer = ItemSealer(vaultKey: vaultKey, vault: VaultID(using: &generator))
            var codec = SealedPayloads(sealer: sealer, generator: SeededRandomNumberGenerator(seed: 12))
            var laptopReplica = SyncReplica(device: DeviceID(1))
            var phoneReplica = SyncReplica(device: DeviceID(2))
            let item = ItemID(using: &generator)
            _ = laptopReplica.create(
                item,
                values: [
                    .title: .text("\(marker)-title"), .services: .list(["https://\(marker.lowercased()).example"]),
                    .user: .text("\(marker)-user"), .password: .text("\(marker)-password"),
                    .notes: .text("\(marker)-notes"), .totp: .text("\(marker)-totp"),
                    .folder: .text("\(marker)-folder"), .signIn: .text("https://\(marker).example/login"),
                    .passkey("k1"): .bytes(Array("\(marker)-passkey".utf8)),
                ],
                now: 1_000
            )
            try await Self.sync(&laptopReplica, api: api, token: tokens[0], now: 1_000, codec: &codec)
            try await Self.sync(&phoneReplica, api: api, token: tokens[1], now: 1_001, codec: &codec)
            // The phone opened it: the markers went through.
            #expect(phoneReplica.records[item]?[.password] == .text("\(marker)-password"))
            try phoneReplica.set(.notes, to: .text("\(marker)-edited"), in: item, now: 2_000)
            try await Self.sync(&phoneReplica, api: api, token: tokens[1], now: 2_000, codec: &codec)
            try await Self.sync(&laptopReplica, api: api, token: tokens[0], now: 2_001, codec: &codec)
            #expect(laptopReplica.records[item]?[.notes] == .text("\(marker)-edited"))
        }
        var files: [UInt8] = []
        for suffix in ["", "-wal", "-shm"] {
            if let data = FileManager.default.contents(atPath: path + suffix) { files += data }
        }
        func hits(_ text: String) -> Int {
            let needle = Array(text.utf8)
            guard files.count >= needle.count else { return 0 }
            return (0...(files.count - needle.count)).count { files[$0..<($0 + needle.count)].elementsEqual(needle) }
        }
        // The scan finds what is stored in the clear (the device's name), so 0 hits means something.
        #expect(hits("canary-control-name") > 0)
        #expect(hits(marker) == 0)
        #expect(hits(marker.lowercased()) == 0)
    }
}
