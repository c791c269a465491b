/// The provider's tables as typed rows: each record's `CodingKeys` are its table's columns, the
/// one place a column's name is spelt for reading. Queries select ``SQLRecord/columns`` and decode
/// with ``SQLConnection/fetchOne(_:_:_:)``; a misspelt or unselected column fails loudly
/// (``SQLRowDecoder``). The schema itself is ``IdentitySchema``.
protocol SQLRecord: Codable, Sendable {
    associatedtype CodingKeys: CodingKey, CaseIterable
    static var table: String { get }
}

extension SQLRecord {
    /// Every column, comma-separated, for `SELECT` and `RETURNING`.
    static var columns: String { CodingKeys.allCases.map(\.stringValue).joined(separator: ", ") }
    /// `SELECT <columns> FROM <table>`; append the `WHERE` clause.
    static var select: String { "SELECT \(columns) FROM \(table)" }
}

/// `teams`.
struct TeamRecord: SQLRecord {
    static let table = "teams"
    var id: String
    var name: String
    var created: Int64

    enum CodingKeys: String, CodingKey, CaseIterable {
        case id, name, created
    }
}

/// `team_keys`: the public halves of the keys a team signs `client_secret`s with.
struct TeamKeyRecord: SQLRecord {
    static let table = "team_keys"
    var teamId: String
    var keyId: String
    var publicPEM: String
    var created: Int64
    var revoked: Int64?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case teamId = "team_id"
        case keyId = "key_id"
        case publicPEM = "public_pem"
        case created, revoked
    }
}

/// `clients`; `redirect_uris` is a JSON array.
struct ClientRecord: SQLRecord {
    static let table = "clients"
    var id: String
    var teamId: String
    var name: String
    var redirectURIs: String
    var notificationURL: String?
    var created: Int64

    enum CodingKeys: String, CodingKey, CaseIterable {
        case id
        case teamId = "team_id"
        case name
        case redirectURIs = "redirect_uris"
        case notificationURL = "notification_url"
        case created
    }
}

/// `users`.
struct UserRecord: SQLRecord {
    static let table = "users"
    var id: String
    var email: String
    var firstName: String?
    var lastName: String?
    var passwordHash: String
    var totpSecret: String?
    var totpLastStep: Int64?
    var created: Int64

    enum CodingKeys: String, CodingKey, CaseIterable {
        case id, email
        case firstName = "first_name"
        case lastName = "last_name"
        case passwordHash = "password_hash"
        case totpSecret = "totp_secret"
        case totpLastStep = "totp_last_step"
        case created
    }
}

/// `subjects`: a person's `sub` (and relay address) for one team.
struct SubjectRecord: SQLRecord {
    static let table = "subjects"
    var userId: String
    var teamId: String
    var sub: String
    var relayEmail: String?
    var created: Int64

    enum CodingKeys: String, CodingKey, CaseIterable {
        case userId = "user_id"
        case teamId = "team_id"
        case sub
        case relayEmail = "relay_email"
        case created
    }
}

/// `consents`.
struct ConsentRecord: SQLRecord {
    static let table = "consents"
    var userId: String
    var clientId: String
    var state: String
    var shareEmail: Bool
    var relayForwarding: Bool
    var nameDelivered: Bool
    var created: Int64
    var updated: Int64

    enum CodingKeys: String, CodingKey, CaseIterable {
        case userId = "user_id"
        case clientId = "client_id"
        case state
        case shareEmail = "share_email"
        case relayForwarding = "relay_forwarding"
        case nameDelivered = "name_delivered"
        case created, updated
    }
}

/// `codes`: authorization codes, by hash.
struct CodeRecord: SQLRecord {
    static let table = "codes"
    var hash: String
    var clientId: String
    var userId: String
    var redirectURI: String?
    var scope: String
    var nonce: String?
    var authTime: Int64
    var realUserStatus: Int64
    var expires: Int64
    var used: Int64?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case hash
        case clientId = "client_id"
        case userId = "user_id"
        case redirectURI = "redirect_uri"
        case scope, nonce
        case authTime = "auth_time"
        case realUserStatus = "real_user_status"
        case expires, used
    }
}

/// `grants`: what a redeemed code granted; the refresh token by hash.
struct GrantRecord: SQLRecord {
    static let table = "grants"
    var id: String
    var refreshHash: String
    var clientId: String
    var userId: String
    var codeHash: String?
    var scope: String
    var authTime: Int64
    var realUserStatus: Int64
    var created: Int64
    var revoked: Int64?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case id
        case refreshHash = "refresh_hash"
        case clientId = "client_id"
        case userId = "user_id"
        case codeHash = "code_hash"
        case scope
        case authTime = "auth_time"
        case realUserStatus = "real_user_status"
        case created, revoked
    }
}

/// `migration_tokens`: single-use `user.migration` access tokens, by hash.
struct MigrationTokenRecord: SQLRecord {
    static let table = "migration_tokens"
    var hash: String
    var teamId: String
    var clientId: String
    var expires: Int64
    var used: Int64?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case hash
        case teamId = "team_id"
        case clientId = "client_id"
        case expires, used
    }
}

/// `signing_keys`: the provider's RS256 keys.
struct SigningKeyRecord: SQLRecord {
    static let table = "signing_keys"
    var kid: String
    var privatePEM: String
    var created: Int64
    var retired: Int64?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case kid
        case privatePEM = "private_pem"
        case created, retired
    }
}

/// `sessions`: browser sessions on the provider's pages, by hash of the cookie.
struct SessionRecord: SQLRecord {
    static let table = "sessions"
    var hash: String
    var userId: String
    var authTime: Int64
    var secondFactor: Bool
    var expires: Int64

    enum CodingKeys: String, CodingKey, CaseIterable {
        case hash
        case userId = "user_id"
        case authTime = "auth_time"
        case secondFactor = "second_factor"
        case expires
    }
}

/// `device_tokens`: Keyhaven installations signed in, by hash of the token.
struct DeviceTokenRecord: SQLRecord {
    static let table = "device_tokens"
    var hash: String
    var userId: String
    var name: String
    var authTime: Int64
    var secondFactor: Bool
    var created: Int64
    var revoked: Int64?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case hash
        case userId = "user_id"
        case name
        case authTime = "auth_time"
        case secondFactor = "second_factor"
        case created, revoked
    }
}

/// `sessions` and `device_tokens` store a sign-in the same way; this reads either.
struct SignInRecord: SQLRecord {
    static let table = "sessions"
    var userId: String
    var authTime: Int64
    var secondFactor: Bool

    enum CodingKeys: String, CodingKey, CaseIterable {
        case userId = "user_id"
        case authTime = "auth_time"
        case secondFactor = "second_factor"
    }

    var authentication: Authentication {
        Authentication(userId: userId, authTime: authTime, secondFactor: secondFactor)
    }
}

/// `transfers`: a person's `sub` moving with an app to another team.
struct TransferRecord: SQLRecord {
    static let table = "transfers"
    var transferSub: String
    var userId: String
    var fromTeam: String
    var toTeam: String
    var oldSub: String
    var created: Int64
    var exchanged: Int64?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case transferSub = "transfer_sub"
        case userId = "user_id"
        case fromTeam = "from_team"
        case toTeam = "to_team"
        case oldSub = "old_sub"
        case created, exchanged
    }
}

/// `outbox`: server-to-server notifications owed.
struct OutboxRecord: SQLRecord {
    static let table = "outbox"
    var id: String
    var clientId: String
    var url: String
    var event: String
    var eventType: String
    var created: Int64
    var attempts: Int64
    var nextAttempt: Int64
    var delivered: Int64?
    var lastError: String?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case id
        case clientId = "client_id"
        case url, event
        case eventType = "event_type"
        case created, attempts
        case nextAttempt = "next_attempt"
        case delivered
        case lastError = "last_error"
    }
}

/// `sign_in_attempts`: one throttle counter (an account or a client address, HMAC-keyed).
struct SignInAttemptRecord: SQLRecord {
    static let table = "sign_in_attempts"
    var throttleKey: String
    var failures: Int64
    var lockedUntil: Int64
    var forgetAfter: Int64

    enum CodingKeys: String, CodingKey, CaseIterable {
        case throttleKey = "throttle_key"
        case failures
        case lockedUntil = "locked_until"
        case forgetAfter = "forget_after"
    }
}
