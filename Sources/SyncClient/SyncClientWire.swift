import VaultSync
import _KeyhavenSupport

// The JSON is VaultSync's (Wire/SyncWireJSON.swift), the very types the server writes and reads;
// here only the readings into the client's values.

extension DeviceJSON {
    var device: SyncDevice {
        SyncDevice(
            id: id,
            account: account,
            name: name,
            publicKey: Base64URL.decode(publicKey) ?? [],
            created: created,
            revoked: revoked
        )
    }
}

extension ItemJSON {
    func serverItem(_ doing: String) throws(SyncClientError) -> ServerItem {
        guard let item = serverItem else { throw SyncHTTPClient.badAnswer(doing) }
        return item
    }
}
