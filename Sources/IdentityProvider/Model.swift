import Foundation

/// A developer team (Apple's 10-character Team ID).
public struct Team: Hashable, Sendable, Codable {
    public var id: String
    public var name: String
}

/// A service that signs people in (Apple's Services ID or App ID).
public struct Client: Hashable, Sendable, Codable {
    public var id: String
    public var teamId: String
    public var name: String
    public var redirectURIs: [String]
    public var notificationURL: String?

    init(_ row: SQLRow) {
        id = row.text("id") ?? ""
        teamId = row.text("team_id") ?? ""
        name = row.text("name") ?? ""
        redirectURIs =
            (try? JSONDecoder().decode([String].self, from: Data((row.text("redirect_uris") ?? "[]").utf8))) ?? []
        notificationURL = row.text("notification_url")
    }

    public init(id: String, teamId: String, name: String, redirectURIs: [String], notificationURL: String?) {
        self.id = id
        self.teamId = teamId
        self.name = name
        self.redirectURIs = redirectURIs
        self.notificationURL = notificationURL
    }
}

/// A person with an account at the provider.
public struct User: Hashable, Sendable {
    public var id: String
    public var email: String
    public var firstName: String?
    public var lastName: String?
    var passwordHash: String
    var totpSecret: String?

    public var hasSecondFactor: Bool { totpSecret != nil }

    init(_ row: SQLRow) {
        id = row.text("id") ?? ""
        email = row.text("email") ?? ""
        firstName = row.text("first_name")
        lastName = row.text("last_name")
        passwordHash = row.text("password_hash") ?? ""
        totpSecret = row.text("totp_secret")
    }
}

/// What a person agreed to for one service.
public struct Consent: Hashable, Sendable, Codable {
    public enum State: String, Sendable, Codable {
        case authorized
        case revoked
    }

    public var userId: String
    public var clientId: String
    public var state: State
    public var shareEmail: Bool
    public var relayForwarding: Bool
    public var nameDelivered: Bool

    init(_ row: SQLRow) {
        userId = row.text("user_id") ?? ""
        clientId = row.text("client_id") ?? ""
        state = State(rawValue: row.text("state") ?? "") ?? .revoked
        shareEmail = row.bool("share_email")
        relayForwarding = row.bool("relay_forwarding")
        nameDelivered = row.bool("name_delivered")
    }
}

/// A signed-in person: a browser session on the provider's pages, or a Keyhaven device.
public struct Authentication: Hashable, Sendable {
    public var userId: String
    /// When the person entered their password (seconds).
    public var authTime: Int64
    /// Whether a one-time code was also checked.
    public var secondFactor: Bool

    public init(userId: String, authTime: Int64, secondFactor: Bool) {
        self.userId = userId
        self.authTime = authTime
        self.secondFactor = secondFactor
    }
    /// From a `sessions` or `device_tokens` row (both store the sign-in the same way).
    init?(_ row: SQLRow) {
        guard let userId = row.text("user_id") else { return nil }
        self.init(userId: userId, authTime: row.integer("auth_time") ?? 0, secondFactor: row.bool("second_factor"))
    }
}

/// `ASAuthorizationAppleIDProvider.CredentialState`.
public enum CredentialState: String, Sendable, Codable, Hashable {
    case authorized
    case revoked
    case notFound
    case transferred
}

/// One service as the person's account page lists it.
public struct ConnectedService: Hashable, Sendable, Codable {
    public var clientId: String
    public var name: String
    public var state: Consent.State
    /// The address the service sees.
    public var email: String?
    public var hidesEmail: Bool
    public var relayForwarding: Bool
}
