import Foundation
import SyncServer
import VaultSync
import _KeyhavenSupport

// The JSON of `keyhaven sync serve` (docs/openapi/sync.yaml). Keys and signatures, challenges and
// payloads are base64url without padding; item ids are 32 hex digits.

struct CreateAccountRequest: Decodable {
    var publicKey: String
    var name: String
    var proof: String
}

struct AddDeviceRequest: Decodable {
    var account: String
    var publicKey: String
    var name: String
    var approver: String
    var approval: String
    var proof: String
}

struct ChallengeRequest: Decodable {
    var device: String
}

struct ChallengeResponse: Encodable {
    var challenge: String
    var expires: Date
}

struct TokenRequest: Decodable {
    var device: String
    var challenge: String
    var signature: String
}

struct TokenResponse: Encodable {
    var token: String
    var tokenType = "Bearer"
    var expires: Date
    var device: String
    var account: String
}

struct DeviceJSON: Encodable {
    var id: String
    var account: String
    var name: String
    var publicKey: String
    var created: Date
    var revoked: Date?
    var approvedBy: String?

    init(_ device: EnrolledDevice) {
        id = device.id
        account = device.account
        name = device.name
        publicKey = Base64URL.encode(device.publicKey)
        created = device.created
        revoked = device.revoked
        approvedBy = device.approvedBy
    }
}

struct DeviceListResponse: Encodable {
    var devices: [DeviceJSON]
}

struct PushRequest: Decodable {
    var item: String
    var baseRevision: UInt64
    var payload: String
}

struct ItemJSON: Encodable {
    var item: String
    var revision: UInt64
    var sequence: UInt64
    var payload: String

    init(_ item: ServerItem) {
        self.item = item.item.description
        revision = item.revision
        sequence = item.sequence
        payload = Base64URL.encode(item.payload)
    }
}

/// One push answer: `accepted` with the revision, `stale` with the current item (HTTP 409),
/// `rejected` with a reason (HTTP 422).
struct PushResponseJSON: Encodable {
    var result: String
    var revision: UInt64?
    var current: ItemJSON?
    var reason: String?
}

struct ChangesResponse: Encodable {
    var items: [ItemJSON]
    var sequence: UInt64
}

struct ErrorJSON: Encodable {
    var error: String
    var message: String
}
