import Crypto
import Foundation
import _KeyhavenSupport

/// A boolean claim that Apple has sent both as a JSON boolean and as the string `"true"`/`"false"`.
/// Decoding accepts both; encoding writes a boolean unless `asString` (a compatibility test switch).
public struct BoolClaim: Codable, Hashable, Sendable {
    public var value: Bool
    public var asString: Bool

    public init(_ value: Bool, asString: Bool = false) {
        self.value = value
        self.asString = asString
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let bool = try? container.decode(Bool.self) {
            self.init(bool)
        } else {
            switch try container.decode(String.self) {
            case "true": self.init(true, asString: true)
            case "false": self.init(false, asString: true)
            default:
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a boolean")
            }
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if asString { try container.encode(value ? "true" : "false") } else { try container.encode(value) }
    }
}

/// The identity token's claims, named as Sign in with Apple names them.
public struct IdentityTokenClaims: Codable, Hashable, Sendable {
    public var iss: String
    public var sub: String
    public var aud: String
    public var iat: Int64
    public var exp: Int64
    public var nonce: String?
    public var nonce_supported: Bool?
    public var c_hash: String?
    public var at_hash: String?
    public var email: String?
    public var email_verified: BoolClaim?
    public var is_private_email: BoolClaim?
    public var auth_time: Int64?
    /// 0 unsupported, 1 unknown, 2 likely real.
    public var real_user_status: Int?
    public var transfer_sub: String?

    public init(
        iss: String,
        sub: String,
        aud: String,
        iat: Int64,
        exp: Int64,
        nonce: String? = nil,
        nonce_supported: Bool? = nil,
        c_hash: String? = nil,
        at_hash: String? = nil,
        email: String? = nil,
        email_verified: BoolClaim? = nil,
        is_private_email: BoolClaim? = nil,
        auth_time: Int64? = nil,
        real_user_status: Int? = nil,
        transfer_sub: String? = nil
    ) {
        self.iss = iss
        self.sub = sub
        self.aud = aud
        self.iat = iat
        self.exp = exp
        self.nonce = nonce
        self.nonce_supported = nonce_supported
        self.c_hash = c_hash
        self.at_hash = at_hash
        self.email = email
        self.email_verified = email_verified
        self.is_private_email = is_private_email
        self.auth_time = auth_time
        self.real_user_status = real_user_status
        self.transfer_sub = transfer_sub
    }

    /// `at_hash`/`c_hash`: base64url of the left half of SHA-256 of the ASCII value (OIDC Core §3.1.3.6).
    public static func halfHash(_ value: String) -> String {
        Base64URL.encode(Array(SHA256.hash(data: Array(value.utf8))).prefix(16))
    }
}

/// A `client_secret`: an ES256 JWT the service signs with its team's key.
public struct ClientSecretClaims: Codable, Hashable, Sendable {
    /// The team id.
    public var iss: String
    public var iat: Int64
    public var exp: Int64
    /// The provider's issuer.
    public var aud: String
    /// The client id.
    public var sub: String

    public init(iss: String, iat: Int64, exp: Int64, aud: String, sub: String) {
        self.iss = iss
        self.iat = iat
        self.exp = exp
        self.aud = aud
        self.sub = sub
    }

    /// Apple's limit on a client secret's lifetime: six months.
    public static let maximumLifetime: Int64 = 15_777_000
}

/// The JWS in a server-to-server notification `{"payload": "<JWS>"}`.
public struct NotificationClaims: Codable, Hashable, Sendable {
    public var iss: String
    public var aud: String
    public var iat: Int64
    public var exp: Int64
    public var jti: String
    /// A JSON *string* holding one ``NotificationEvent``.
    public var events: String

    public init(iss: String, aud: String, iat: Int64, exp: Int64, jti: String, events: String) {
        self.iss = iss
        self.aud = aud
        self.iat = iat
        self.exp = exp
        self.jti = jti
        self.events = events
    }
}

/// One event of a notification.
public struct NotificationEvent: Codable, Hashable, Sendable {
    public enum Kind: String, Codable, Hashable, Sendable, CaseIterable {
        case emailDisabled = "email-disabled"
        case emailEnabled = "email-enabled"
        case consentRevoked = "consent-revoked"
        case accountDelete = "account-delete"

        /// Also accepts `account-deleted`, the spelling one rendering of Apple's documentation uses.
        public init?(wireValue: String) {
            if wireValue == "account-deleted" { self = .accountDelete } else { self.init(rawValue: wireValue) }
        }
    }

    public var type: String
    public var sub: String
    /// Milliseconds since 1970.
    public var event_time: Int64
    public var email: String?
    /// A string (`"true"`), as Apple's notifications carry it.
    public var is_private_email: BoolClaim?

    public init(type: Kind, sub: String, eventTime: Int64, email: String? = nil, isPrivateEmail: Bool? = nil) {
        self.type = type.rawValue
        self.sub = sub
        self.event_time = eventTime
        self.email = email
        self.is_private_email = isPrivateEmail.map { BoolClaim($0, asString: true) }
    }

    public var kind: Kind? { Kind(wireValue: type) }
}
