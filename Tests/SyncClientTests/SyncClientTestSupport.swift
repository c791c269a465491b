import Crypto
import Foundation
import Hummingbird
import HummingbirdTesting
import SyncClient
import SyncServer
import SyncServerHTTP
import Synchronization
import VaultSync

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

/// Runs `body` with the real sync server on a temporary SQLite file, served on a loopback port;
/// `body` gets the server's URL. The file is removed afterwards.
func withLiveSyncServer<T: Sendable>(
    clock: SharedClock,
    _ body: @escaping @Sendable (String) async throws -> T
) async throws -> T {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("keyhaven-sync-client-\(UUID())")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let store = try SQLiteSyncStore(path: directory.appendingPathComponent("sync.sqlite").path)
    var configuration = SyncServerConfiguration()
    configuration.now = { clock.now }
    let service = SyncService(store: store, configuration: configuration)
    let app = Application(router: SyncHTTPServer(service: service).router())
    return try await app.test(.live) { client in
        guard let port = client.port else { throw ClientTestFailure("the live test server has no port") }
        return try await body("http://127.0.0.1:\(port)")
    }
}

/// One device: its key, its client and its session on a sealed replica (the vault key shared by
/// the person's devices).
struct TestDevice: Sendable {
    let key: SyncDeviceKey
    let client: SyncHTTPClient
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
}

/// A laptop that created an account and a phone it approved.
struct TwoDevices: Sendable {
    var laptop: TestDevice
    var phone: TestDevice
    let account: String

    init(server: String, clock: SharedClock) async throws {
        var random = SystemRandomNumberGenerator()
        let sealer = ItemSealer(vaultKey: SymmetricKey(size: .bits256), vault: VaultID(using: &random))
        laptop = try TestDevice(server: server, number: 1, sealer: sealer, clock: clock)
        phone = try TestDevice(server: server, number: 2, sealer: sealer, clock: clock)
        account = try await laptop.client.createAccount(name: "laptop").account
        let approval = try laptop.key.approval(of: phone.key.publicKey, account: account)
        _ = try await phone.client.enrol(account: account, name: "phone", approver: laptop.key.id, approval: approval)
    }
}
