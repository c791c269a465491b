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

/// A clock the server, the session and the simulated phone share, moved by hand.
final class TestClock: Sendable {
    private let current = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
    var now: Date { current.withLock { $0 } }
    var milliseconds: UInt64 { UInt64(now.timeIntervalSince1970 * 1000) }
    func advance(_ seconds: TimeInterval) { current.withLock { $0 += seconds } }
}

struct NoPort: Error {}

/// Runs `body` with the real sync server (SQLite in a temporary folder) on a loopback port.
func withSyncServer<T: Sendable>(
    clock: TestClock,
    _ body: @escaping @Sendable (String) async throws -> T
) async throws -> T {
    let folder = try TemporaryDirectory.make()
    defer { try? FileManager.default.removeItem(at: folder) }
    let store = try SQLiteSyncStore(path: folder.appendingPathComponent("sync.sqlite").path)
    var configuration = SyncServerConfiguration()
    configuration.now = { clock.now }
    let service = SyncService(store: store, configuration: configuration)
    let app = Application(router: SyncHTTPServer(service: service).router())
    return try await app.test(.live) { client in
        guard let port = client.port else { throw NoPort() }
        // The origin devices sign for (threat S4), known once the port is.
        service.serving(at: ServiceOrigin(scheme: .http, host: "127.0.0.1", port: port)!)
        return try await body("http://127.0.0.1:\(port)")
    }
}

/// A session of `test`'s vault, unlocked, on the shared clock.
func unlockedSession(_ test: TestVault, clock: TestClock) async throws -> KeyhavenSession {
    let session = KeyhavenSession(
        .init(vaultURL: test.url, idleLock: .infinity, allowInsecureKDF: true, now: { clock.now })
    )
    try await session.unlock(masterPassword: test.masterPassword)
    return session
}

/// The laptop: a session of `test`'s vault, unlocked, with sync turned on against `server` (the
/// first device, which creates the account).
func syncingLaptop(_ test: TestVault, server: String, clock: TestClock) async throws -> KeyhavenSession {
    let session = try await unlockedSession(test, clock: clock)
    _ = try await session.enableSync(server: server, deviceName: "laptop")
    return session
}

extension KeyhavenSession {
    /// The sync state saved in the vault (test-only access: the keys included).
    func savedSyncState() async throws -> SyncDeviceState? {
        try withVault { vault in try vault.syncTransaction { try SyncDeviceState.load($0) } }
    }

    /// Replaces the saved sync state (a test pointing the device at another server).
    func saveSyncState(_ state: SyncDeviceState) async throws {
        try withVault { vault in try vault.syncTransaction { try state.save($0) } }
    }

    /// How many times each part of the sync state was saved (device, replica).
    func syncStateGeneration() async throws -> [Int64?] {
        try withVault { vault in try vault.syncSnapshot { try SyncDeviceState.generation($0) } }
    }

    /// The `SyncError` `syncNow()` throws, nil when it succeeds.
    func syncNowError() async -> SyncError? {
        do {
            _ = try await syncNow()
            return nil
        } catch {
            return error
        }
    }
}

/// A second device of the same person, simulated in the test: approved by the session's device,
/// sealing with the same sync vault key (what approval will hand over).
struct Phone: Sendable {
    var session: SyncSession<SealedPayloads<SystemRandomNumberGenerator>>

    init(joining laptop: KeyhavenSession, server: String, clock: TestClock) async throws {
        let state = try #require(try await laptop.savedSyncState())
        let key = SyncDeviceKey()
        let client = try SyncHTTPClient(server: server, key: key, timeout: .seconds(5), now: { clock.now })
        let approver = try SyncHTTPClient(
            server: server,
            key: state.deviceKey,
            account: state.account,
            timeout: .seconds(5),
            now: { clock.now }
        )
        _ = try await client.enrol(
            account: state.account,
            name: "phone",
            approver: state.deviceKey.id,
            approval: try await approver.approval(of: key.publicKey)
        )
        session = SyncSession(
            replica: SyncReplica(device: DeviceID(0x0F0F_0F0F)),
            codec: SealedPayloads(sealer: state.sealer, generator: SystemRandomNumberGenerator()),
            client: client,
            now: { clock.milliseconds }
        )
    }
}
