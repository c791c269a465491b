package import Foundation
package import _KeyhavenSupport

// The JSON of `keyhaven sync serve` (docs/openapi/sync.yaml), shared by the server
// (SyncServerHTTP) and the device's client (SyncClient) so that the two cannot drift. Keys and
// signatures, challenges and payloads are base64url without padding; item ids are 32 hex digits.
// Package access: plain values, no I/O.

// `origin` in the signed requests: the server the device signed for (``DeviceSignatures``), so that
// a server can tell a signature for another server (a relay) from a bad one.

package struct CreateAccountRequest: Codable {
    package var publicKey: String
    package var name: String
    package var origin: String
    package var proof: String

    package init(publicKey: [UInt8], name: String, origin: ServiceOrigin, proof: [UInt8]) {
        (self.publicKey, self.name, self.proof) = (Base64URL.encode(publicKey), name, Base64URL.encode(proof))
        self.origin = origin.serialized
    }
}

package struct AddDeviceRequest: Codable {
    package var account: String
    package var publicKey: String
    package var name: String
    package var approver: String
    package var origin: String
    package var approval: String
    package var proof: String

    /// `approval` is `approver`'s signature, `proof` the new key's own (``DeviceSignatures``), both
    /// for `origin`.
    package init(
        account: String,
        publicKey: [UInt8],
        name: String,
        approver: String,
        origin: ServiceOrigin,
        approval: [UInt8],
        proof: [UInt8]
    ) {
        (self.account, self.name, self.approver, self.origin) = (account, name, approver, origin.serialized)
        self.publicKey = Base64URL.encode(publicKey)
        (self.approval, self.proof) = (Base64URL.encode(approval), Base64URL.encode(proof))
    }
}

package struct ChallengeRequest: Codable {
    package var device: String

    package init(device: String) {
        self.device = device
    }
}

package struct ChallengeResponse: Codable {
    package var challenge: String
    package var expires: Date

    package init(challenge: [UInt8], expires: Date) {
        (self.challenge, self.expires) = (Base64URL.encode(challenge), expires)
    }
}

package struct TokenRequest: Codable {
    package var device: String
    package var challenge: String
    package var origin: String
    package var signature: String

    package init(device: String, challenge: [UInt8], origin: ServiceOrigin, signature: [UInt8]) {
        (self.device, self.challenge, self.signature) = (
            device, Base64URL.encode(challenge), Base64URL.encode(signature)
        )
        self.origin = origin.serialized
    }
}

package struct TokenResponse: Codable {
    package var token: String
    package var tokenType = "Bearer"
    package var expires: Date
    package var device: String
    package var account: String

    package init(token: String, expires: Date, device: String, account: String) {
        (self.token, self.expires, self.device, self.account) = (token, expires, device, account)
    }
}

package struct DeviceJSON: Codable {
    package var id: String
    package var account: String
    package var name: String
    package var publicKey: String
    package var created: Date
    package var revoked: Date?
    /// The enrolled device that approved this one (none for an account's first device).
    package var approvedBy: String?

    package init(
        id: String,
        account: String,
        name: String,
        publicKey: [UInt8],
        created: Date,
        revoked: Date?,
        approvedBy: String?
    ) {
        (self.id, self.account, self.name) = (id, account, name)
        self.publicKey = Base64URL.encode(publicKey)
        (self.created, self.revoked, self.approvedBy) = (created, revoked, approvedBy)
    }
}

package struct DeviceListResponse: Codable {
    package var devices: [DeviceJSON]

    package init(devices: [DeviceJSON]) {
        self.devices = devices
    }
}

package struct PushRequest: Codable {
    package var item: String
    package var baseRevision: UInt64
    package var payload: String

    package init(_ mutation: Mutation) {
        item = mutation.item.description
        baseRevision = mutation.baseRevision
        payload = Base64URL.encode(mutation.payload)
    }
}

package struct ItemJSON: Codable {
    package var item: String
    package var revision: UInt64
    package var sequence: UInt64
    package var payload: String

    package init(_ item: ServerItem) {
        self.item = item.item.description
        revision = item.revision
        sequence = item.sequence
        payload = Base64URL.encode(item.payload)
    }

    /// The item, or nil when its id or payload is not in the wire's encoding.
    package var serverItem: ServerItem? {
        guard let id = ItemID(hex: item), let bytes = Base64URL.decode(payload) else { return nil }
        return ServerItem(item: id, revision: revision, payload: bytes, sequence: sequence)
    }
}

/// One push answer: `accepted` with the revision, `stale` with the current item (HTTP 409),
/// `rejected` with a reason (HTTP 422).
package struct PushResponseJSON: Codable {
    package var result: String
    package var revision: UInt64?
    package var current: ItemJSON?
    package var reason: String?

    package init(result: String, revision: UInt64? = nil, current: ItemJSON? = nil, reason: String? = nil) {
        (self.result, self.revision, self.current, self.reason) = (result, revision, current, reason)
    }
}

package struct ChangesResponse: Codable {
    package var items: [ItemJSON]
    package var sequence: UInt64

    package init(items: [ItemJSON], sequence: UInt64) {
        (self.items, self.sequence) = (items, sequence)
    }
}

package struct ErrorJSON: Codable {
    package var error: String
    package var message: String

    package init(error: String, message: String) {
        (self.error, self.message) = (error, message)
    }
}

// Joining (`keyhaven sync join`, `keyhaven device approve`): keys, tags and grants base64url.

/// `POST /v1/join-requests` (open, as account creation): the new device's request.
package struct JoinRequestJSON: Codable {
    package var origin: String
    package var lookup: String
    package var publicKey: String
    package var agreementKey: String
    package var name: String
    package var tag: String

    package init(_ fields: JoinRequestFields, tag: [UInt8]) {
        (origin, lookup, name) = (fields.origin.serialized, fields.lookup, fields.name)
        (publicKey, agreementKey) = (Base64URL.encode(fields.publicKey), Base64URL.encode(fields.agreementKey))
        self.tag = Base64URL.encode(tag)
    }
}

/// A pending join request as the server answers it (`201` to its creation, `GET
/// /v1/join-requests/{lookup}` to an enrolled device).
package struct PendingJoinJSON: Codable {
    package var lookup: String
    package var publicKey: String
    package var agreementKey: String
    package var name: String
    package var tag: String
    package var expires: Date

    package init(
        lookup: String,
        publicKey: [UInt8],
        agreementKey: [UInt8],
        name: String,
        tag: [UInt8],
        expires: Date
    ) {
        (self.lookup, self.name, self.expires) = (lookup, name, expires)
        (self.publicKey, self.agreementKey) = (Base64URL.encode(publicKey), Base64URL.encode(agreementKey))
        self.tag = Base64URL.encode(tag)
    }
}

/// `POST /v1/join-requests/{lookup}/grant`: the grant sealed for the new device.
package struct JoinGrantJSON: Codable {
    package var grant: String

    package init(grant: [UInt8]) {
        self.grant = Base64URL.encode(grant)
    }
}

/// `GET /v1/join-requests/{lookup}/grant`: `approved` false while the request waits; else the grant.
package struct JoinGrantStateJSON: Codable {
    package var approved: Bool
    package var grant: String?

    package init(grant: [UInt8]?) {
        approved = grant != nil
        self.grant = grant.map(Base64URL.encode)
    }
}
