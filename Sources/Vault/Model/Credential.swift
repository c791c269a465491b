public import Foundation

/// A saved account: where it is used, the user name, and the secret.
///
/// Its editable fields are its ``content``'s, read and written as its own (`credential.user`,
/// `credential.password = …`) through `@dynamicMemberLookup`, so they are declared once, in
/// ``CredentialContent``.
@dynamicMemberLookup
public struct Credential: Hashable, Sendable, Codable, Identifiable {
    public var id: CredentialID
    /// The editable content, without identity and dates.
    public var content: CredentialContent
    public var created: Date
    public var modified: Date
    /// When it was moved to "recently deleted" (it is purged 30 days later).
    public var deleted: Date?

    /// A field of ``content``, as the credential's own.
    public subscript<Value>(dynamicMember field: WritableKeyPath<CredentialContent, Value>) -> Value {
        get { content[keyPath: field] }
        set { content[keyPath: field] = newValue }
    }

    /// The first domain of the credential's services (what reports show as "the service").
    public var primaryDomain: String? {
        content.services.lazy.compactMap { $0.host ?? $0.androidPackage }.first
    }
}

/// A credential's content: everything but identity and dates. Also what imports produce.
public struct CredentialContent: Hashable, Sendable, Codable {
    public var title: String
    public var services: [ServiceIdentifier]
    public var user: String
    /// `nil` once the account was upgraded to "Sign in with Keyhaven": the record stays, the
    /// password moves to history.
    public var password: String?
    public var notes: String
    /// A TOTP secret: base32, or an `otpauth://` URI.
    public var totp: String?
    /// A `/`-separated folder path.
    public var folder: String?
    /// Set when the account signs in with an identity provider instead of a password.
    public var signIn: SignInLink?

    public init(
        title: String = "",
        services: [ServiceIdentifier] = [],
        user: String = "",
        password: String? = nil,
        notes: String = "",
        totp: String? = nil,
        folder: String? = nil,
        signIn: SignInLink? = nil
    ) {
        self.title = title
        self.services = services
        self.user = user
        self.password = password
        self.notes = notes
        self.totp = totp
        self.folder = folder
        self.signIn = signIn
    }

    /// A title for display: the given one, else the first service's host, else its identifier.
    public var displayTitle: String {
        if !title.isEmpty { return title }
        if let first = services.first { return first.host ?? first.androidPackage ?? first.identifier }
        return user
    }
}

/// The identity-provider account a credential was upgraded to.
public struct SignInLink: Hashable, Sendable, Codable {
    /// The provider's issuer URL.
    public var issuer: String
    /// The account's subject at the provider (stable per user and team).
    public var subject: String
    public var linked: Date

    public init(issuer: String, subject: String, linked: Date) {
        self.issuer = issuer
        self.subject = subject
        self.linked = linked
    }
}

/// A password a credential used before, with the time it was replaced. History is never dropped
/// while the credential exists.
public struct PasswordHistoryEntry: Hashable, Sendable, Codable {
    public var password: String
    public var replaced: Date

    public init(password: String, replaced: Date) {
        self.password = password
        self.replaced = replaced
    }
}
