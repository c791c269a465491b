import Foundation
import KeyhavenTesting
import SyncServer
import Testing
import VaultSync

/// The SQLite store answers pushes and changes exactly as VaultSync's reference server does.
@Suite(.offCooperativePool)
struct SyncStoreTests {
    static let account = "0123456789abcdef0123456789abcdef"

    /// The id of the account's first device.
    static var firstDevice: String {
        var generator = SeededRandomNumberGenerator(seed: 1)
        return TestDeviceKey(&generator).id
    }

    static func store(path: String? = nil) async throws -> SQLiteSyncStore {
        let store = try SQLiteSyncStore(path: path)
        var generator = SeededRandomNumberGenerator(seed: 1)
        let key = TestDeviceKey(&generator)
        try await store.createAccount(
            account,
            firstDevice: EnrolledDevice(
                id: key.id,
                account: account,
                publicKey: key.publicKey,
                name: "laptop",
                created: Date(timeIntervalSince1970: 0)
            )
        )
        return store
    }

    /// Several simulated devices push new items, edits on what they last saw (often stale), writes
    /// to items the server never had, and retries of earlier mutations; after each step the store
    /// and the reference server answer alike, and so do changes from random cursors.
    @Test(arguments: 0..<12 as Range<UInt64>)
    func answersAsTheReferenceServer(seed: UInt64) async throws {
        let store = try await Self.store()
        var reference = ReferenceSyncServer()
        var generator = SeededRandomNumberGenerator(seed: seed)
        let items = (0..<6).map { _ in ItemID(using: &generator) }
        // What each of 4 devices last saw of each item (its base for the next write).
        var seen = Array(repeating: [ItemID: UInt64](), count: 4)
        var sent: [Mutation] = []
        var answers: [String: Int] = [:]
        for step in 0..<250 {
            let device = Int.random(in: 0..<4, using: &generator)
            let item = items.randomElement(using: &generator)!
            let mutation: Mutation
            switch Int.random(in: 0..<10, using: &generator) {
            case 0 where !sent.isEmpty:
                mutation = sent.randomElement(using: &generator)!  // a retry after a lost answer
            case 1:
                // An item the server does not have, on a base revision it never gave.
                let unknown = ItemID(using: &generator)
                mutation = Mutation(
                    item: unknown,
                    baseRevision: UInt64.random(in: 1...40, using: &generator),
                    payload: [1]
                )
            case 2:
                // A base revision ahead of the item's.
                mutation = Mutation(
                    item: item,
                    baseRevision: UInt64.random(in: 1...40, using: &generator),
                    payload: [2]
                )
            default:
                let payload = (0..<Int.random(in: 0..<64, using: &generator)).map { _ in
                    UInt8.random(in: 0...255, using: &generator)
                }
                mutation = Mutation(item: item, baseRevision: seen[device][item] ?? 0, payload: payload)
            }
            sent.append(mutation)
            let expected = reference.push(mutation)
            let answer = try await store.push(mutation, account: Self.account)
            #expect(answer == expected, "seed \(seed) step \(step)")
            switch expected {
            case .accepted(let revision):
                seen[device][mutation.item] = revision
                answers["accepted", default: 0] += 1
            case .stale(let current):
                seen[device][mutation.item] = current.revision
                answers["stale", default: 0] += 1
            case .rejected: answers["rejected", default: 0] += 1
            }
            if step % 25 == 0 {
                let cursor = UInt64.random(in: 0...reference.sequence, using: &generator)
                let all = try await store.changes(account: Self.account, since: cursor, limit: 10_000, maxBytes: .max)
                #expect(all == reference.changes(since: cursor), "seed \(seed) step \(step) cursor \(cursor)")
                // Paged: the pages together are the same items, and the last cursor the same.
                var paged = ChangeBatch(items: [], sequence: cursor)
                while true {
                    let page = try await store.changes(
                        account: Self.account,
                        since: paged.sequence,
                        limit: 2,
                        maxBytes: .max
                    )
                    paged.items += page.items
                    if page.items.isEmpty || page.sequence == paged.sequence { break }
                    paged.sequence = page.sequence
                }
                #expect(paged.items == all.items)
            }
        }
        // The sequence exercised every answer.
        #expect(answers["accepted", default: 0] > 20)
        #expect(answers["stale", default: 0] > 5)
        #expect(answers["rejected", default: 0] > 5)
    }

    @Test func accountsAreApart() async throws {
        let store = try await Self.store()
        let other = "ffffffffffffffffffffffffffffffff"
        var generator = SeededRandomNumberGenerator(seed: 2)
        let key = TestDeviceKey(&generator)
        try await store.createAccount(
            other,
            firstDevice: EnrolledDevice(
                id: key.id,
                account: other,
                publicKey: key.publicKey,
                name: "b",
                created: Date()
            )
        )
        let item = ItemID(high: 1, low: 2)
        #expect(
            try await store.push(Mutation(item: item, baseRevision: 0, payload: [1]), account: Self.account)
                == .accepted(revision: 1)
        )
        // The same item id in another account is another item.
        #expect(
            try await store.push(Mutation(item: item, baseRevision: 0, payload: [1]), account: other)
                == .accepted(revision: 1)
        )
        #expect(try await store.changes(account: other, since: 0, limit: 10, maxBytes: .max).items.count == 1)
        // A key is enrolled once, in one account.
        await #expect(throws: SyncServerError(.alreadyEnrolled, "")) {
            try await store.addDevice(
                EnrolledDevice(id: key.id, account: Self.account, publicKey: key.publicKey, name: "c", created: Date()),
                approvedBy: Self.firstDevice
            )
        }
    }

    /// The file is WAL and private, and keeps its data across opening.
    @Test func aFileKeepsItsItems() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sync-store-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("sync.sqlite").path
        let item = ItemID(high: 3, low: 4)
        do {
            let store = try await Self.store(path: path)
            #expect(
                try await store.push(Mutation(item: item, baseRevision: 0, payload: [9]), account: Self.account)
                    == .accepted(revision: 1)
            )
        }
        let reopened = try SQLiteSyncStore(path: path)
        let batch = try await reopened.changes(account: Self.account, since: 0, limit: 10, maxBytes: .max)
        #expect(batch.items.map(\.payload) == [[9]])
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(FileManager.default.fileExists(atPath: path + "-wal"))
    }

    /// A changes page holds payloads of at most `maxBytes` (but always one item): items near the cap
    /// come one per page, smaller ones share pages, and paging reaches every item once.
    @Test func aChangesPageIsCappedInBytes() async throws {
        let store = try await Self.store()
        let sizes = [900, 1_000, 100, 200, 300, 1_000, 50]
        for (index, size) in sizes.enumerated() {
            let mutation = Mutation(
                item: ItemID(high: 5, low: UInt64(index)),
                baseRevision: 0,
                payload: Array(repeating: UInt8(index), count: size)
            )
            #expect(try await store.push(mutation, account: Self.account) == .accepted(revision: 1))
        }
        var pages: [[Int]] = []
        var cursor: UInt64 = 0
        while true {
            let page = try await store.changes(account: Self.account, since: cursor, limit: 100, maxBytes: 1_000)
            if page.items.isEmpty { break }
            #expect(page.items.count == 1 || page.items.map(\.payload.count).reduce(0, +) <= 1_000)
            pages.append(page.items.map(\.payload.count))
            cursor = page.sequence
        }
        #expect(pages == [[900], [1_000], [100, 200, 300], [1_000], [50]])
        // An item larger than the cap still gets through, alone.
        let big = try await store.changes(account: Self.account, since: 0, limit: 100, maxBytes: 10)
        #expect(big.items.map(\.payload.count) == [900])
        #expect(big.sequence == 1)
    }

    /// The largest item must fit in a changes page.
    @Test func theItemCapStaysBelowThePageCap() throws {
        var configuration = SyncServerConfiguration()
        try configuration.validate()
        configuration.maxItemBytes = configuration.changesMaxBytes
        #expect(throws: SyncServerError(.invalidRequest, "")) { try configuration.validate() }
    }

    /// The approver is checked inside the write: a revoked approver (or one of another account)
    /// adds nothing.
    @Test func aRevokedApproverAddsNoDevice() async throws {
        let store = try await Self.store()
        var generator = SeededRandomNumberGenerator(seed: 14)
        let phone = TestDeviceKey(&generator)
        let device = EnrolledDevice(
            id: phone.id,
            account: Self.account,
            publicKey: phone.publicKey,
            name: "p",
            created: Date()
        )
        #expect(try await store.revoke(Self.firstDevice, of: Self.account, at: Date()))
        await #expect(throws: SyncServerError(.forbidden, "")) {
            try await store.addDevice(device, approvedBy: Self.firstDevice)
        }
        #expect(try await store.device(phone.id) == nil)
    }
}
