public import Foundation

/// `keyhaven sync status`: whether sync is on, with whom, and what waits.
public struct SyncStatus: Hashable, Sendable, Codable {
    public var enabled: Bool
    public var server: String?
    public var account: String?
    /// This device's id on the server (from its public key).
    public var deviceID: String?
    public var deviceName: String?
    /// Items with changes the server has not confirmed.
    public var pending: Int
    /// Items with a conflict mark (a value that lost to a concurrent write, kept in history).
    public var conflicts: Int
    /// When the last sync that reached the server ended (the session's clock).
    public var lastSync: Date?

    /// Sync on with `server`, as `account`'s device `deviceID` named `deviceName`.
    public init(
        server: String,
        account: String,
        deviceID: String,
        deviceName: String,
        pending: Int,
        conflicts: Int,
        lastSync: Date?
    ) {
        (self.enabled, self.server, self.account, self.deviceID) = (true, server, account, deviceID)
        (self.deviceName, self.pending, self.conflicts, self.lastSync) = (deviceName, pending, conflicts, lastSync)
    }

    private init() {
        (enabled, pending, conflicts) = (false, 0, 0)
    }

    /// Sync is off.
    public static let disabled = SyncStatus()
}

/// What one sync did (`keyhaven sync now`).
public struct SyncReport: Hashable, Sendable, Codable {
    /// Items the server now holds as this device does.
    public var pushed = 0
    /// Items changed on the server that were merged here.
    public var pulled = 0
    /// Credentials written into this vault: new, changed, moved to and back from recently deleted.
    public var created = 0
    public var updated = 0
    public var deleted = 0
    public var restored = 0
    /// Items the server refused (they stay pending; the reasons are in `rejections`).
    public var rejections: [String] = []
    public var status: SyncStatus

    public init(status: SyncStatus) {
        self.status = status
    }
}

/// One device of the sync account (`keyhaven device list`).
public struct SyncDeviceEntry: Hashable, Sendable, Codable {
    /// The device's id on the server (from its public key).
    public var id: String
    public var name: String
    /// When it was enrolled (the server's clock).
    public var created: Date
    /// The device that approved it; absent for the account's first device.
    public var approvedBy: String?
    /// When it was revoked; absent while it may sync.
    public var revoked: Date?
    /// Whether it is the device answering (this vault's).
    public var current: Bool

    public init(id: String, name: String, created: Date, approvedBy: String?, revoked: Date?, current: Bool) {
        (self.id, self.name, self.created, self.approvedBy, self.revoked, self.current) = (
            id, name, created, approvedBy, revoked, current
        )
    }
}

/// What `keyhaven device approve` did: the device it let in.
public struct SyncApproval: Hashable, Sendable, Codable {
    /// The new device's id (from its public key) and the name it gave itself.
    public var deviceID: String
    public var deviceName: String
    public var account: String

    public init(deviceID: String, deviceName: String, account: String) {
        (self.deviceID, self.deviceName, self.account) = (deviceID, deviceName, account)
    }
}
