import Crypto
import Foundation
import KeyhavenApp
import KeyhavenTesting
import SyncClient
import Testing
import Vault
import VaultSync
import VaultSyncBridge

@testable import KeyhavenSync

/// The device's sync state is kept in the vault file, sealed: it comes back whole after the vault
/// is closed and opened again, and none of its secrets is in the file in the clear.
@Suite(.offCooperativePool)
struct SyncDeviceStateTests {
    static let marker = "device-name-marker-7b1f"

    static func state(adopting credential: Credential) throws -> SyncDeviceState {
        var random = SystemRandomNumberGenerator()
        var replica = SyncReplica(device: DeviceID(using: &random))
        try replica.adopt(
            SyncedCredential(content: credential.content, created: credential.created),
            as: ItemID(credential.id),
            now: 1_800_000_000_000
        )
        _ = replica.nextMutation()  // in flight: its payload must survive too
        return SyncDeviceState(
            server: "http://127.0.0.1:8095",
            account: String(repeating: "ab", count: 16),
            deviceName: marker,
            deviceKey: SyncDeviceKey(),
            vaultKey: SymmetricKey(size: .bits256),
            vaultID: VaultID(using: &random),
            replica: replica,
            lastSync: Date(timeIntervalSince1970: 1_800_000_123.5)
        )
    }

    /// Every occurrence of `needle` in the vault's files (the database and its write-ahead log).
    static func hits(_ needle: [UInt8], in test: TestVault) throws -> Int {
        var count = 0
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: test.url.path + suffix) {
            let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: test.url.path + suffix)))
            guard bytes.count >= needle.count else { continue }
            for start in 0...(bytes.count - needle.count) where bytes[start] == needle[0] {
                if Array(bytes[start..<start + needle.count]) == needle { count += 1 }
            }
        }
        return count
    }

    @Test func theStateRoundTripsThroughTheVaultFileWithNoSecretInTheClear() throws {
        let test = try TestVault()
        let password = "pw-marker-5c0ffee-in-a-record"
        let id = try test.vault.add(CredentialContent(title: "Mail", user: "ada", password: password))
        let state = try Self.state(adopting: try test.vault.credential(id))
        try test.vault.syncTransaction { try state.save($0) }
        try test.vault.close()

        let reopened = try test.reopen()
        let loaded = try #require(try reopened.syncTransaction { try SyncDeviceState.load($0) })
        #expect(loaded.server == state.server)
        #expect(loaded.account == state.account)
        #expect(loaded.deviceName == state.deviceName)
        #expect(loaded.deviceKey.publicKey == state.deviceKey.publicKey)
        #expect(loaded.deviceKey.id == state.deviceKey.id)
        #expect(loaded.vaultKey == state.vaultKey)
        #expect(loaded.vaultID == state.vaultID)
        #expect(loaded.replica == state.replica)
        #expect(loaded.lastSync == state.lastSync)
        #expect(loaded.status.pending == 1)
        try reopened.close()

        let privateKey = Array(state.deviceKey.privateKey.rawRepresentation)
        let syncKey = state.vaultKey.withUnsafeBytes { Array($0) }
        #expect(try Self.hits(privateKey, in: test) == 0, "the device's private key is in the vault file")
        #expect(try Self.hits(syncKey, in: test) == 0, "the sync vault key is in the vault file")
        #expect(try Self.hits(Array(Self.marker.utf8), in: test) == 0, "the device name is in the clear")
        #expect(try Self.hits(Array(password.utf8), in: test) == 0, "a password of the replica is in the clear")
        #expect(try Self.hits(Array("KHRP".utf8), in: test) == 0, "the replica is in the clear")
        // The scan works: the part names are in the clear, as the schema says.
        #expect(try Self.hits(Array("replica".utf8), in: test) > 0)
    }

    @Test func aDevicePartWithAKeyThisKeyhavenDoesNotKnowIsRefused() throws {
        let test = try TestVault()
        let id = try test.vault.add(CredentialContent(title: "Mail", user: "ada"))
        try test.vault.syncTransaction { try Self.state(adopting: try test.vault.credential(id)).save($0) }
        let parts = try test.vault.syncSnapshot { [try $0.state("device"), try $0.state("replica")] }
        let (known, replica) = (try #require(parts[0]), try #require(parts[1]))
        _ = try SyncDeviceState.decode(device: known, replica: replica)
        var object = try #require(try JSONSerialization.jsonObject(with: known) as? [String: Any])
        object["recoveryKey"] = "from a newer Keyhaven"
        let extended = try JSONSerialization.data(withJSONObject: object)
        #expect(throws: SyncError.self) { try SyncDeviceState.decode(device: extended, replica: replica) }
    }

    @Test func aVaultMadeBeforeSyncGetsTheTableAndKeepsItsIntegrity() throws {
        let test = try TestVault()
        let id = try test.vault.add(CredentialContent(title: "Old", user: "bob", password: "x"))
        try test.vault.close()
        // The vault as an earlier Keyhaven left it: no sync table, no record of its migration.
        let sqlite = Process()
        sqlite.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        sqlite.arguments = [
            test.url.path, "DROP TABLE syncState; DELETE FROM grdb_migrations WHERE identifier = 'v8-sync-state';",
        ]
        try sqlite.run()
        sqlite.waitUntilExit()
        try #require(sqlite.terminationStatus == 0, "sqlite3 could not make the earlier vault")

        let vault = try test.reopen()
        #expect(try vault.syncTransaction { try SyncDeviceState.load($0) } == nil)
        let state = try Self.state(adopting: try vault.credential(id))
        try vault.syncTransaction { try state.save($0) }
        try vault.close()
        let again = try test.reopen()
        #expect(try again.syncTransaction { try SyncDeviceState.load($0) }?.replica == state.replica)
        // `passwd` re-seals the state under the new vault key.
        try again.changeMasterPassword(to: "another", kdf: .random(logN: TestVault.fastKDFLogN), allowInsecureKDF: true)
        try again.close()
        let rekeyed = try Vault.open(at: test.url, masterPassword: "another", allowInsecureKDF: true)
        #expect(try rekeyed.syncTransaction { try SyncDeviceState.load($0) }?.deviceKey.id == state.deviceKey.id)
    }
}
