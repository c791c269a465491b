import Foundation
import HTTPTypes
import KeyhavenTesting
import SyncServer
import SyncServerPostgres
import Testing
import VaultSync
import _KeyhavenSupport

/// The sync server on a real PostgreSQL (`KEYHAVEN_TEST_POSTGRES_URL`, set by scripts/test.sh after
/// scripts/start-test-postgres.sh): the same answers as the reference server, and two instances on
/// one database serving one account. Each test has tables of its own (a unique prefix), dropped after.
@Suite(.offCooperativePool)
struct SyncPostgresTests {
    static let url = ProcessInfo.processInfo.environment["KEYHAVEN_TEST_POSTGRES_URL"].flatMap {
        $0.isEmpty ? nil : $0
    }

    /// Runs `body` with `count` stores (instances) on one set of fresh tables.
    static func withStores(
        _ count: Int,
        _ body: @escaping @Sendable ([PostgresSyncStore]) async throws -> Void
    ) async throws {
        let prefix = "sync_test_\(UInt32.random(in: 0...UInt32.max))_"
        let stores = try (0..<count).map { _ in try PostgresSyncStore(url: url!, tablePrefix: prefix) }
        let run: () async throws -> Void = {
            try await stores[0].prepare()
            try await stores[1 % count].prepare()  // a second instance finds the tables there
            do {
                try await body(stores)
            } catch {
                try? await stores[0].dropTables()
                throw error
            }
            try await stores[0].dropTables()
        }
        try await stores[0].withRunning {
            if count > 1 { try await stores[1].withRunning(run) } else { try await run() }
        }
    }

    @Test(.enabled(if: url != nil, "set KEYHAVEN_TEST_POSTGRES_URL (scripts/test.sh does)"))
    func answersAsTheReferenceServer() async throws {
        try await Self.withStores(1) { stores in
            let store = stores[0]
            let account = "0123456789abcdef0123456789abcdef"
            var generator = SeededRandomNumberGenerator(seed: 5)
            let key = TestDeviceKey(&generator)
            try await store.createAccount(
                account,
                firstDevice: EnrolledDevice(
                    id: key.id,
                    account: account,
                    publicKey: key.publicKey,
                    name: "laptop",
                    created: Date()
                )
            )
            var reference = ReferenceSyncServer()
            let items = (0..<4).map { _ in ItemID(using: &generator) }
            var seen: [ItemID: UInt64] = [:]
            var sent: [Mutation] = []
            for step in 0..<120 {
                let item = items.randomElement(using: &generator)!
                let mutation: Mutation
                switch Int.random(in: 0..<8, using: &generator) {
                case 0 where !sent.isEmpty: mutation = sent.randomElement(using: &generator)!
                case 1: mutation = Mutation(item: ItemID(using: &generator), baseRevision: 3, payload: [1])
                case 2:
                    mutation = Mutation(
                        item: item,
                        baseRevision: UInt64.random(in: 0...9, using: &generator),
                        payload: [2]
                    )
                default:
                    mutation = Mutation(item: item, baseRevision: seen[item] ?? 0, payload: [UInt8(step % 256), 7])
                }
                sent.append(mutation)
                let expected = reference.push(mutation)
                #expect(try await store.push(mutation, account: account) == expected, "step \(step)")
                if case .accepted(let revision) = expected { seen[mutation.item] = revision }
                if step % 20 == 0 {
                    let cursor = UInt64.random(in: 0...reference.sequence, using: &generator)
                    #expect(
                        try await store.changes(account: account, since: cursor, limit: 1_000, maxBytes: .max)
                            == reference.changes(since: cursor)
                    )
                }
            }
        }
    }

    /// Two instances (each its own pool, service and HTTP server) on one database: devices signed
    /// in on either converge; racing writes to one item from both are applied once per revision;
    /// a long poll on one hears a write through the other.
    @Test(.enabled(if: url != nil, "set KEYHAVEN_TEST_POSTGRES_URL (scripts/test.sh does)"))
    func twoInstancesServeOneAccount() async throws {
        try await Self.withStores(2) { stores in
            var configuration = SyncServerConfiguration()
            configuration.recheck = .milliseconds(200)
            let services = stores.map { SyncService(store: $0, configuration: configuration) }
            try await withSyncServer(services[0]) { first in
                try await withSyncServer(services[1]) { second in
                    var generator = SeededRandomNumberGenerator(seed: 6)
                    let laptop = TestDeviceKey(&generator)
                    let phone = TestDeviceKey(&generator)
                    let account = try await first.createAccount(laptop)
                    // Enrolled through the second instance, signed in through each.
                    #expect(try await second.addDevice(phone, to: account, approvedBy: laptop).status == .created)
                    let laptopToken = try await first.signIn(laptop)
                    let phoneToken = try await second.signIn(phone)
                    // A token issued by one instance works on the other.
                    #expect(try await second.call(.get, "/v1/devices", token: laptopToken).status == .ok)

                    // Replicas on both instances converge.
                    var replicas = [SyncReplica(device: DeviceID(1)), SyncReplica(device: DeviceID(2))]
                    let apis = [first, second]
                    let tokens = [laptopToken, phoneToken]
                    var codec = PlainPayloads()
                    for step in 0..<30 {
                        let index = step % 2
                        let id = ItemID(high: 9, low: UInt64(step % 5))
                        if replicas[index].records[id] == nil {
                            _ = replicas[index].create(
                                id,
                                values: [.title: .text("t\(step)")],
                                now: UInt64(1_000 + step)
                            )
                        } else {
                            try replicas[index].set(.notes, to: .text("n\(step)"), in: id, now: UInt64(1_000 + step))
                        }
                        if step % 3 == 0 {
                            try await SyncHTTPTests.sync(
                                &replicas[index],
                                api: apis[index],
                                token: tokens[index],
                                now: UInt64(1_000 + step),
                                codec: &codec
                            )
                        }
                    }
                    for _ in 0..<2 {
                        for index in 0..<2 {
                            try await SyncHTTPTests.sync(
                                &replicas[index],
                                api: apis[index],
                                token: tokens[index],
                                now: 2_000,
                                codec: &codec
                            )
                        }
                    }
                    #expect(replicas[0].records == replicas[1].records)
                    #expect(replicas[0].records.count == 5)

                    // Racing writes to one item on the same base: one wins, the other is stale.
                    let item = ItemID(using: &generator)
                    let laptopDevice = try await services[0].authenticate(token: laptopToken)
                    let phoneDevice = try await services[1].authenticate(token: phoneToken)
                    for base in 0..<UInt64(20) {
                        async let a = services[0].push(
                            Mutation(item: item, baseRevision: base, payload: [1, UInt8(base)]),
                            by: laptopDevice
                        )
                        async let b = services[1].push(
                            Mutation(item: item, baseRevision: base, payload: [2, UInt8(base)]),
                            by: phoneDevice
                        )
                        let answers = try await [a, b]
                        let accepted = answers.filter { $0 == .accepted(revision: base + 1) }.count
                        #expect(accepted == 1, "base \(base): \(answers)")
                    }
                    let all = try await second.changes(since: 0, token: phoneToken)
                    #expect(all.items.filter { $0.item == item }.map(\.revision) == [20])

                    // A long poll on the second instance hears a write through the first.
                    let cursor = try await second.changes(since: 0, token: phoneToken).sequence
                    let clock = ContinuousClock()
                    let started = clock.now
                    let poll = Task { try await second.changes(since: cursor, token: phoneToken, wait: 20) }
                    try await Task.sleep(for: .milliseconds(300))
                    let written = ItemID(using: &generator)
                    #expect(
                        try await first.push(Mutation(item: written, baseRevision: 0, payload: [5]), token: laptopToken)
                            == .accepted(revision: 1)
                    )
                    #expect(try await poll.value.items.map(\.item) == [written])
                    #expect(clock.now - started < .seconds(5))
                }
            }
        }
    }

    /// Errors inside a transaction are mapped as outside: a key enrolled twice is 409
    /// `alreadyEnrolled` (as on SQLite), a device for a missing account is `notFound`.
    @Test(.enabled(if: url != nil, "set KEYHAVEN_TEST_POSTGRES_URL (scripts/test.sh does)"))
    func transactionErrorsAreMapped() async throws {
        try await Self.withStores(1) { stores in
            let service = SyncService.testing(store: stores[0])
            try await withSyncServer(service) { api in
                var generator = SeededRandomNumberGenerator(seed: 7)
                let laptop = TestDeviceKey(&generator)
                let phone = TestDeviceKey(&generator)
                let account = try await api.createAccount(laptop)
                #expect(try await api.addDevice(phone, to: account, approvedBy: laptop).status == .created)
                #expect(try await stores[0].device(phone.id)?.approvedBy == laptop.id)
                #expect(try await stores[0].device(laptop.id)?.approvedBy == nil)
                let again = try await api.addDevice(phone, to: account, approvedBy: laptop)
                #expect(again.status == .conflict)
                #expect(again.string("error") == "alreadyEnrolled")
                // A revoked approver adds nothing (checked inside the transaction).
                #expect(try await stores[0].revoke(laptop.id, of: account, at: Date()))
                let late = TestDeviceKey(&generator)
                await #expect(throws: SyncServerError(.forbidden, "")) {
                    try await stores[0].addDevice(
                        EnrolledDevice(
                            id: late.id,
                            account: account,
                            publicKey: late.publicKey,
                            name: "y",
                            created: Date()
                        ),
                        approvedBy: laptop.id
                    )
                }
            }
            await #expect(throws: SyncServerError(.notFound, "")) {
                try await stores[0].changes(
                    account: "ffffffffffffffffffffffffffffffff",
                    since: 0,
                    limit: 10,
                    maxBytes: .max
                )
            }
            var strayGenerator = SeededRandomNumberGenerator(seed: 8)
            let stray = TestDeviceKey(&strayGenerator)
            await #expect(throws: SyncServerError(.notFound, "")) {
                try await stores[0].addDevice(
                    EnrolledDevice(
                        id: stray.id,
                        account: "ffffffffffffffffffffffffffffffff",
                        publicKey: stray.publicKey,
                        name: "x",
                        created: Date()
                    ),
                    approvedBy: stray.id
                )
            }
        }
    }
}
