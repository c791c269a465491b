import Foundation
import _KeyhavenSupport

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

    init(_ record: ClientRecord) {
        id = record.id
        teamId = record.teamId
        name = record.name
        redirectURIs = (try? JSONDecoder().decode([String].self, from: Data(record.redirectURIs.utf8))) ?? []
        notificationURL = record.notificationURL
    }

    public init(id: String, teamId: String, name: String, redirectURIs: [String], notificationURL: String?) {
        self.id = id
        self.teamId = teamId
        self.name = name
        self.redirectURIs = redirectURIs
        self.notificationURL = notificationURL
    }

    /// The web origins the service is registered under: those of its redirect URIs (Apple's
    /// "Domains and Subdomains" and "Return URLs" of a Services ID). A native authorization for the
    /// client is issued only to Keyhaven upgrading an account on one of them.
    var origins: Set<ServiceOrigin> { Set(redirectURIs.compactMap(ServiceOrigin.of(url:))) }

    /// Whether `origin` (an origin or a URL) is one of ``origins``.
    public func isRegistered(origin: String) -> Bool {
        ServiceOrigin.of(url: origin).map(origins.contains) ?? false
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

    init(_ record: UserRecord) {
        id = record.id
        email = record.email
        firstName = record.firstName
        lastName = record.lastName
        passwordHash = record.passwordHash
        totpSecret = record.totpSecret
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

    init(_ record: ConsentRecord) {
        userId = record.userId
        clientId = record.clientId
        state = State(rawValue: record.state) ?? .revoked
        shareEmail = record.shareEmail
        relayForwarding = record.relayForwarding
        nameDelivered = record.nameDelivered
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
