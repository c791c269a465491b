package import Crypto
package import Foundation
import KeyhavenApp
package import SyncClient
package import Vault
package import VaultSync
import _KeyhavenSupport

/// What a device keeps to sync (docs/sync.md "On the device"), sealed in the vault in two parts:
///
/// - `device`: the server, the account, this device's name and Ed25519 private key, the sync vault
///   key and vault id (what ``VaultSync/ItemSealer`` seals items with: random, not derived from the
///   master password; a later device receives it through approval), and when it last synced;
/// - `replica`: the ``VaultSync/SyncReplica`` (records, clock, outbox with the mutation in flight,
///   known revisions, cursor) in its canonical encoding.
///
/// Both are written in the vault transaction that writes the credentials they describe
/// (``Vault/syncTransaction(_:)``), so the vault and its sync state never disagree on disk.
package struct SyncDeviceState: Sendable {
    package var server: String
    package var account: String
    package var deviceName: String
    package var deviceKey: SyncDeviceKey
    /// The key every item is sealed with for the server (shared by the person's devices).
    package var vaultKey: SymmetricKey
    package var vaultID: VaultID
    package var replica: SyncReplica
    package var lastSync: Date?

    static let devicePart = "device"
    static let replicaPart = "replica"

    /// The sealer of this device's payloads.
    var sealer: ItemSealer { ItemSealer(vaultKey: vaultKey, vault: vaultID) }

    /// The `device` part as it is sealed (version 1, every key required, nothing else accepted:
    /// ``decode(device:replica:)`` refuses a key not in ``keys``).
    private struct DevicePart: Codable {
        static let keys: Set<String> = [
            "v", "server", "account", "deviceName", "deviceKey", "vaultKey", "vaultID", "lastSync",
        ]

        var v: Int
        var server, account, deviceName: String
        var deviceKey, vaultKey, vaultID: Data
        var lastSync: Double?
    }

    /// The state saved in the vault, nil when sync is off.
    ///
    /// - Throws: ``SyncError/Code/damaged`` for a part that is missing or not in its encoding.
    package static func load(_ transaction: VaultSyncTransaction) throws -> SyncDeviceState? {
        guard var device = try transaction.state(devicePart) else { return nil }
        defer { device.resetBytes(in: 0..<device.count) }
        guard let replicaBytes = try transaction.state(replicaPart) else {
            throw SyncError(.damaged, "the sync state has lost its replica; turn sync off and on again")
        }
        return try decode(device: device, replica: replicaBytes)
    }

    static func decode(device: Data, replica: Data) throws(SyncError) -> SyncDeviceState {
        guard let object = try? JSONSerialization.jsonObject(with: device) as? [String: Any],
            Set(object.keys).isSubset(of: DevicePart.keys),
            var part = try? JSONDecoder().decode(DevicePart.self, from: device), part.v == 1,
            let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: part.deviceKey),
            part.vaultKey.count == 32, let vaultID = VaultID(bytes: Array(part.vaultID))
        else {
            throw SyncError(.damaged, "the saved sync settings cannot be read; turn sync off and on again")
        }
        defer {
            part.deviceKey.resetBytes(in: 0..<part.deviceKey.count)
            part.vaultKey.resetBytes(in: 0..<part.vaultKey.count)
        }
        let restored: SyncReplica
        do {
            restored = try SyncReplica(canonicalBytes: Array(replica))
        } catch {
            throw SyncError(.damaged, error.message)
        }
        return SyncDeviceState(
            server: part.server,
            account: part.account,
            deviceName: part.deviceName,
            deviceKey: SyncDeviceKey(key),
            vaultKey: SymmetricKey(data: part.vaultKey),
            vaultID: vaultID,
            replica: restored,
            lastSync: part.lastSync.map(Date.init(timeIntervalSince1970:))
        )
    }

    /// Which saves of the state `transaction` sees (each part's save count): a process compares
    /// it before saving to find that another process saved meanwhile.
    static func generation(_ transaction: VaultSyncTransaction) throws -> [Int64?] {
        [try transaction.stateVersion(devicePart), try transaction.stateVersion(replicaPart)]
    }

    /// Saves the `device` part (sealed by the vault) in `transaction`, and the replica when
    /// `replica` is true (re-sealing a large replica that did not change is skipped).
    package func save(_ transaction: VaultSyncTransaction, replica saveReplica: Bool = true) throws {
        var part = DevicePart(
            v: 1,
            server: server,
            account: account,
            deviceName: deviceName,
            // A copy of its own: the key's `rawRepresentation` may share the key's storage, which
            // the wipe below must never reach.
            deviceKey: Data(Array(deviceKey.privateKey.rawRepresentation)),
            vaultKey: vaultKey.withUnsafeBytes { Data($0) },
            vaultID: Data(vaultID.bytes),
            lastSync: lastSync?.timeIntervalSince1970
        )
        var encoded = try JSONEncoder().encode(part)
        part.deviceKey.resetBytes(in: 0..<part.deviceKey.count)
        part.vaultKey.resetBytes(in: 0..<part.vaultKey.count)
        defer { encoded.resetBytes(in: 0..<encoded.count) }
        try transaction.saveState(Self.devicePart, encoded)
        if saveReplica { try transaction.saveState(Self.replicaPart, Data(replica.canonicalBytes)) }
    }

    /// What `keyhaven sync status` shows of it.
    var status: SyncStatus {
        SyncStatus(
            server: server,
            account: account,
            deviceID: deviceKey.id,
            deviceName: deviceName,
            pending: replica.outbox.entries.count,
            conflicts: replica.conflicts.count,
            lastSync: lastSync
        )
    }
}
