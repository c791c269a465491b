import Crypto
import Foundation
import Hummingbird
import HummingbirdTesting
import SyncClient
import SyncServer
import SyncServerHTTP
import Synchronization
import Vault
import VaultSync
import VaultSyncBridge
import _KeyhavenSupport

/// A clock the server and the devices share, moved by hand.
final class SharedClock: Sendable {
    private let current = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
    var now: Date { current.withLock { $0 } }
    var milliseconds: UInt64 { UInt64(now.timeIntervalSince1970 * 1000) }
    func advance(_ seconds: TimeInterval) { current.withLock { $0 += seconds } }
}

struct ClientTestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Counts the requests a test server received, by path.
final class RequestCounter: Sendable {
    private let counts = Mutex<[String: Int]>([:])
    func add(_ path: String) { counts.withLock { $0[path, default: 0] += 1 } }
    subscript(path: String) -> Int { counts.withLock { $0[path, default: 0] } }
}

extension SyncSession {
    /// The ``SyncClientError`` `push()` throws, nil when it does not.
    mutating func pushError() async throws -> SyncClientError? {
        do {
            try await push()
            return nil
        } catch let error as SyncClientError {
            return error
        }
    }

    /// The ``SyncClientError`` `waitForChanges(wait:)` throws, nil when it does not.
    mutating func waitError(wait: Duration) async throws -> SyncClientError? {
        do {
            try await waitForChanges(wait: wait)
            return nil
        } catch let error as SyncClientError {
            return error
        }
    }
}

/// The durations an injected sleep was asked for.
final class DurationLog: Sendable {
    private let values = Mutex<[Duration]>([])
    /// Records `duration`; returns how many are recorded now.
    func add(_ duration: Duration) -> Int {
        values.withLock {
            $0.append(duration)
            return $0.count
        }
    }
    var all: [Duration] { values.withLock { $0 } }
}

/// `inner`, counting each request's path in `counter`.
struct CountingResponder<Inner: HTTPResponder>: HTTPResponder {
    let inner: Inner
    let counter: RequestCounter?

    func respond(to request: Request, context: Inner.Context) async throws -> Response {
        counter?.add(request.uri.path)
        return try await inner.respond(to: request, context: context)
    }
}

/// Runs `body` with the real sync server on a temporary SQLite file (or on `sync.sqlite` in
/// `directory`, which is kept), served on a loopback port; `body` gets the server's URL, which is
/// the server's public origin unless `configuration` names one.
func withLiveSyncServer<T: Sendable>(
    clock: SharedClock,
    directory: URL? = nil,
    counter: RequestCounter? = nil,
    configuration: SyncServerConfiguration = SyncServerConfiguration(),
    _ body: @escaping @Sendable (String) async throws -> T
) async throws -> T {
    let temporary = FileManager.default.temporaryDirectory.appendingPathComponent("keyhaven-sync-client-\(UUID())")
    let folder = directory ?? temporary
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { if directory == nil { try? FileManager.default.removeItem(at: temporary) } }
    let store = try SQLiteSyncStore(path: folder.appendingPathComponent("sync.sqlite").path)
    var configuration = configuration
    configuration.now = { clock.now }
    let service = SyncService(store: store, configuration: configuration)
    let router = SyncHTTPServer(service: service).router()
    let app = Application(responder: CountingResponder(inner: router.buildResponder(), counter: counter))
    return try await app.test(.live) { client in
        guard let port = client.port else { throw ClientTestFailure("the live test server has no port") }
        service.serving(at: ServiceOrigin(scheme: .http, host: "127.0.0.1", port: port)!)
        return try await body("http://127.0.0.1:\(port)")
    }
}

/// Copies the server's SQLite file (and its WAL) in `from` over the one in `to`: a backup, or a
/// restore from it. Only while no server runs on either.
func copyDatabase(from source: URL, to target: URL) throws {
    let files = FileManager.default
    try files.createDirectory(at: target, withIntermediateDirectories: true)
    for suffix in ["", "-wal", "-shm"] {
        try? files.removeItem(at: target.appendingPathComponent("sync.sqlite" + suffix))
    }
    for suffix in ["", "-wal"]
    where files.fileExists(atPath: source.appendingPathComponent("sync.sqlite" + suffix).path) {
        try files.copyItem(
            at: source.appendingPathComponent("sync.sqlite" + suffix),
            to: target.appendingPathComponent("sync.sqlite" + suffix)
        )
    }
}

/// One device: its key, its client and its session on a sealed replica (the vault key shared by
/// the person's devices).
struct TestDevice: Sendable {
    let key: SyncDeviceKey
    var client: SyncHTTPClient
    var session: SyncSession<SealedPayloads<SystemRandomNumberGenerator>>

    init(server: String, number: UInt64, sealer: ItemSealer, clock: SharedClock) throws {
        key = SyncDeviceKey()
        client = try SyncHTTPClient(server: server, key: key, timeout: .seconds(5), now: { clock.now })
        session = SyncSession(
            replica: SyncReplica(device: DeviceID(number)),
            codec: SealedPayloads(sealer: sealer, generator: SystemRandomNumberGenerator()),
            client: client,
            now: { clock.milliseconds }
        )
    }

    /// Takes in `content` as item `item`, a credential the vault held before it synced.
    mutating func adopt(_ content: CredentialContent, as item: ItemID, clock: SharedClock) throws {
        let created = Date(timeIntervalSince1970: 1_799_000_000)
        try session.replica.adopt(
            SyncedCredential(content: content, created: created),
            as: item,
            now: clock.milliseconds
        )
    }

    /// The same device (key, account, replica) talking to `server` (the test server's port changes
    /// each time it is started).
    mutating func reconnect(to server: String, clock: SharedClock) async throws {
        client = try SyncHTTPClient(
            server: server,
            key: key,
            account: await client.account,
            timeout: .seconds(5),
            now: { clock.now }
        )
        var moved = SyncSession(replica: session.replica, codec: session.codec, client: client, now: session.now)
        moved.sleep = session.sleep
        session = moved
    }
}

/// A laptop that created an account and a phone it approved.
struct TwoDevices: Sendable {
    var laptop: TestDevice
    var phone: TestDevice
    let account: String

    mutating func reconnect(to server: String, clock: SharedClock) async throws {
        try await laptop.reconnect(to: server, clock: clock)
        try await phone.reconnect(to: server, clock: clock)
    }

    init(server: String, clock: SharedClock) async throws {
        var random = SystemRandomNumberGenerator()
        let sealer = ItemSealer(vaultKey: SymmetricKey(size: .bits256), vault: VaultID(using: &random))
        laptop = try TestDevice(server: server, number: 1, sealer: sealer, clock: clock)
        phone = try TestDevice(server: server, number: 2, sealer: sealer, clock: clock)
        account = try await laptop.client.createAccount(name: "laptop").account
        let approval = try await laptop.client.approval(of: phone.key.publicKey)
        _ = try await phone.client.enrol(account: account, name: "phone", approver: laptop.key.id, approval: approval)
    }
}
