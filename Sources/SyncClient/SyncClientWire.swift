import VaultSync
import _KeyhavenSupport

// The JSON is VaultSync's (Wire/SyncWireJSON.swift), the very types the server writes and reads;
// here only the readings into the client's values.

extension DeviceJSON {
    /// The device, when its public key is an Ed25519 key (32 bytes of base64url) whose id is the
    /// one given (``VaultSync/DeviceSignatures/deviceID(publicKey:)``) and its approver (if any) a
    /// device id; else the answer is not a sync server's (`badAnswer`).
    func device(_ doing: String) throws(SyncClientError) -> SyncDevice {
        guard let key = Base64URL.decode(publicKey), key.count == DeviceSignatures.publicKeyLength,
            DeviceSignatures.deviceID(publicKey: key) == id,
            approvedBy.map({
                $0.utf8.count == 32 && $0.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
            })
                ?? true
        else { throw SyncHTTPClient.badAnswer(doing) }
        return SyncDevice(
            id: id,
            account: account,
            name: name,
            publicKey: key,
            created: created,
            revoked: revoked,
            approvedBy: approvedBy
        )
    }
}

extension ItemJSON {
    func serverItem(_ doing: String) throws(SyncClientError) -> ServerItem {
        guard let item = serverItem else { throw SyncHTTPClient.badAnswer(doing) }
        return item
    }
}
