import Foundation
import VaultSync
import _KeyhavenSupport

// The JSON of docs/openapi/sync.yaml as the device writes and reads it. Keys, signatures,
// challenges and payloads are base64url without padding; item ids 32 hex digits.

struct CreateAccountBody: Encodable {
    var publicKey: String
    var name: String
    var proof: String
}

struct AddDeviceBody: Encodable {
    var account: String
    var publicKey: String
    var name: String
    var approver: String
    var approval: String
    var proof: String
}

struct ChallengeRequestBody: Encodable {
    var device: String
}

struct ChallengeBody: Decodable {
    var challenge: String
    var expires: Date
}

struct TokenRequestBody: Encodable {
    var device: String
    var challenge: String
    var signature: String
}

struct TokenBody: Decodable {
    var token: String
    var expires: Date
    var device: String
    var account: String
}

struct DeviceBody: Decodable {
    var id: String
    var account: String
    var name: String
    var publicKey: String
    var created: Date
    var revoked: Date?

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

struct DeviceListBody: Decodable {
    var devices: [DeviceBody]
}

struct PushBody: Encodable {
    var item: String
    var baseRevision: UInt64
    var payload: String
}

struct ItemBody: Decodable {
    var item: String
    var revision: UInt64
    var sequence: UInt64
    var payload: String

    func serverItem(_ doing: String) throws(SyncClientError) -> ServerItem {
        guard let id = ItemID(hex: item), let bytes = Base64URL.decode(payload) else {
            throw SyncHTTPClient.badAnswer(doing)
        }
        return ServerItem(item: id, revision: revision, payload: bytes, sequence: sequence)
    }
}

struct PushResultBody: Decodable {
    var result: String
    var revision: UInt64?
    var current: ItemBody?
    var reason: String?
}

struct ChangesBody: Decodable {
    var items: [ItemBody]
    var sequence: UInt64
}

struct ErrorBody: Decodable {
    var error: String
    var message: String
}
