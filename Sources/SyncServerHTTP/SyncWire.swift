import SyncServer
import VaultSync

// The JSON of `keyhaven sync serve` is VaultSync's (Wire/SyncWireJSON.swift), shared with the
// device's client; here only what needs the server's types.

extension DeviceJSON {
    init(_ device: EnrolledDevice) {
        self.init(
            id: device.id,
            account: device.account,
            name: device.name,
            publicKey: device.publicKey,
            created: device.created,
            revoked: device.revoked,
            approvedBy: device.approvedBy
        )
    }
}
