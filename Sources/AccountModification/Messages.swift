public import _KeyhavenSupport

// The account-modification protocol's messages (docs/openapi/account-modification.yaml is the
// contract). A service publishes a manifest; Keyhaven asks it to change a password or to convert the
// account to "Sign in with Keyhaven", and follows the answers: completed, failed, user interaction
// required, present an interface (step-up), or needs a sign-in authorization.

/// `GET /.well-known/account-modification`: what a service supports and where.
/// (The Info.plist keys of an Account Authentication Modification extension.)
public struct AccountModificationManifest: Codable, Hashable, Sendable {
    /// Base URL of the protocol's endpoints (`{endpoint}/change-password`, …).
    public var endpoint: String
    public var supportsStrongPasswordChange: Bool
    public var supportsUpgradeToSignIn: Bool
    /// Password rules (Apple's language) generated passwords must satisfy.
    public var passwordGenerationRequirements: String?
    /// The identity provider and client id to use for the upgrade to sign-in.
    public var signIn: SignInConfiguration?
    /// Keyhaven's extension of the protocol: the service turns an account's password sign-in into
    /// a passkey (`{endpoint}/convert-to-passkey`). Absent in older manifests (no).
    public var supportsUpgradeToPasskey: Bool?

    public init(
        endpoint: String,
        supportsStrongPasswordChange: Bool,
        supportsUpgradeToSignIn: Bool,
        passwordGenerationRequirements: String? = nil,
        signIn: SignInConfiguration? = nil,
        supportsUpgradeToPasskey: Bool? = nil
    ) {
        self.endpoint = endpoint
        self.supportsStrongPasswordChange = supportsStrongPasswordChange
        self.supportsUpgradeToSignIn = supportsUpgradeToSignIn
        self.passwordGenerationRequirements = passwordGenerationRequirements
        self.signIn = signIn
        self.supportsUpgradeToPasskey = supportsUpgradeToPasskey
    }
}

public struct SignInConfiguration: Codable, Hashable, Sendable {
    public var issuer: String
    public var clientId: String

    public init(issuer: String, clientId: String) {
        self.issuer = issuer
        self.clientId = clientId
    }
}

/// A user name and password (`ASPasswordCredential`).
public struct PasswordCredential: Codable, Hashable, Sendable, CustomStringConvertible {
    public var user: String
    public var password: String

    public init(user: String, password: String) {
        self.user = user
        self.password = password
    }

    /// Never shows the password.
    public var description: String { "PasswordCredential(user: \(user), password: ••••)" }
}

/// Whether the service may show the person an interface for this request.
public enum Interaction: String, Codable, Hashable, Sendable {
    /// `…WithoutUserInteraction`: the service must finish alone or say it needs the person.
    case none
    /// `prepareInterfaceTo…`: the service may answer `presentInterface`.
    case allowed
}

/// `POST {endpoint}/change-password`.
public struct ChangePasswordRequest: Codable, Hashable, Sendable {
    /// Chosen by Keyhaven; identifies the request in later calls (status, cancel).
    public var requestId: String
    /// The domain or URL of the account (`ASCredentialServiceIdentifier`).
    public var serviceIdentifier: String
    /// The current credential; `nil` for in-app requests, which carry `userInfo` instead.
    public var existingCredential: PasswordCredential?
    public var newPassword: String
    /// What the app passed along (in-app requests), e.g. a session token.
    public var userInfo: [String: String]?
    public var interaction: Interaction

    public init(
        requestId: String,
        serviceIdentifier: String,
        existingCredential: PasswordCredential?,
        newPassword: String,
        userInfo: [String: String]?,
        interaction: Interaction
    ) {
        self.requestId = requestId
        self.serviceIdentifier = serviceIdentifier
        self.existingCredential = existingCredential
        self.newPassword = newPassword
        self.userInfo = userInfo
        self.interaction = interaction
    }
}

/// `POST {endpoint}/convert-to-sign-in` and `POST {endpoint}/convert-to-passkey`: the account
/// should stop signing in with its password — through the identity provider of the manifest's
/// `signIn`, or with a passkey Keyhaven creates. The same fields; the path says which.
public struct ConvertAccountRequest: Codable, Hashable, Sendable {
    public var requestId: String
    public var serviceIdentifier: String
    public var existingCredential: PasswordCredential?
    public var userInfo: [String: String]?
    public var interaction: Interaction

    public init(
        requestId: String,
        serviceIdentifier: String,
        existingCredential: PasswordCredential?,
        userInfo: [String: String]?,
        interaction: Interaction
    ) {
        self.requestId = requestId
        self.serviceIdentifier = serviceIdentifier
        self.existingCredential = existingCredential
        self.userInfo = userInfo
        self.interaction = interaction
    }
}

/// `POST {endpoint}/convert-to-sign-in`.
public typealias ConvertToSignInRequest = ConvertAccountRequest

/// `POST {endpoint}/convert-to-passkey`: the account should sign in with a passkey Keyhaven creates.
/// The service answers `needsPasskeyRegistration` with its WebAuthn creation options; Keyhaven
/// creates the passkey (journaled before it is sent) and posts it; the service verifies and links it,
/// and says whether the password still works (`passwordRetired`).
public typealias ConvertToPasskeyRequest = ConvertAccountRequest

/// `POST {endpoint}/requests/{id}/passkey-registration`: the passkey Keyhaven created for the
/// service's options (`RegistrationResponseJSON`), or why none was (`error`).
public struct PasskeyRegistration: Codable, Hashable, Sendable {
    public var credential: JSONValue?
    public var error: String?

    public init(credential: JSONValue? = nil, error: String? = nil) {
        self.credential = credential
        self.error = error
    }
}

/// `POST {endpoint}/requests/{id}/sign-in-authorization`: what the identity provider issued (or why
/// not), handed to the service.
public struct SignInAuthorization: Codable, Hashable, Sendable {
    public var user: String?
    public var identityToken: String?
    public var authorizationCode: String?
    public var state: String?
    public var email: String?
    public var fullName: String?
    /// Set instead of the rest when no authorization could be obtained (`user_cancelled_authorize`…).
    public var error: String?

    public init(
        user: String? = nil,
        identityToken: String? = nil,
        authorizationCode: String? = nil,
        state: String? = nil,
        email: String? = nil,
        fullName: String? = nil,
        error: String? = nil
    ) {
        self.user = user
        self.identityToken = identityToken
        self.authorizationCode = authorizationCode
        self.state = state
        self.email = email
        self.fullName = fullName
        self.error = error
    }
}

/// `ASExtensionError`'s three codes.
public enum ModificationErrorCode: String, Codable, Hashable, Sendable, CaseIterable {
    case failed
    case userCanceled
    case userInteractionRequired
}

/// Why a request did not complete (`cancelRequest(withError:)` with
/// `ASExtensionLocalizedFailureReasonErrorKey`).
public struct ModificationError: Codable, Hashable, Sendable, Error, CustomStringConvertible {
    public var code: ModificationErrorCode
    /// A reason to show the person, in the service's words.
    public var localizedFailureReason: String?

    public init(code: ModificationErrorCode, localizedFailureReason: String? = nil) {
        self.code = code
        self.localizedFailureReason = localizedFailureReason
    }

    public var description: String {
        localizedFailureReason.map { "\(code.rawValue): \($0)" } ?? code.rawValue
    }
}

/// Every answer of the service (to a request, a status poll, a cancel, an authorization).
public struct ModificationResponse: Codable, Hashable, Sendable {
    public enum Status: String, Codable, Hashable, Sendable, CaseIterable {
        /// Done. A password change may carry the credential actually set.
        case completed
        /// Not done, with an error (`failed`, `userCanceled`, `userInteractionRequired`).
        case failed
        /// The service needs the person: ask again with `interaction: allowed`.
        case userInteractionRequired
        /// Open `interfaceURL` for the person and poll until a final answer.
        case presentInterface
        /// Still working (while the person uses the interface).
        case pending
        /// Obtain a sign-in authorization with `signInRequest` and post it.
        case needsSignInAuthorization
        /// Create a passkey with `passkeyCreationOptions` and post it (convert-to-passkey).
        case needsPasskeyRegistration
    }

    public var requestId: String
    public var status: Status
    public var updatedCredential: PasswordCredential?
    public var error: ModificationError?
    public var interfaceURL: String?
    public var signInRequest: SignInRequest?
    /// `needsPasskeyRegistration`: the service's `PublicKeyCredentialCreationOptionsJSON`.
    public var passkeyCreationOptions: JSONValue?
    /// A completed convert-to-passkey: whether the account's password stopped working.
    public var passwordRetired: Bool?

    public init(
        requestId: String,
        status: Status,
        updatedCredential: PasswordCredential? = nil,
        error: ModificationError? = nil,
        interfaceURL: String? = nil,
        signInRequest: SignInRequest? = nil,
        passkeyCreationOptions: JSONValue? = nil,
        passwordRetired: Bool? = nil
    ) {
        self.requestId = requestId
        self.status = status
        self.updatedCredential = updatedCredential
        self.error = error
        self.interfaceURL = interfaceURL
        self.signInRequest = signInRequest
        self.passkeyCreationOptions = passkeyCreationOptions
        self.passwordRetired = passwordRetired
    }

    /// Whether the outcome is known: `completed` or `failed` (the flow ends here).
    public var isFinal: Bool { status == .completed || status == .failed }

    /// Whether the request will not change any more: final, or `userInteractionRequired` (the
    /// request ended; Keyhaven may start a new one with an interface allowed). The kit keeps such
    /// answers as they are; reconciliation cancels only requests that are not settled.
    public var isSettled: Bool { isFinal || status == .userInteractionRequired }
}

/// The state and nonce the service wants in the identity token
/// (`getSignInWithAppleUpgradeAuthorization(state:nonce:)`).
public struct SignInRequest: Codable, Hashable, Sendable {
    public var state: String
    public var nonce: String
    /// The service's client id at the identity provider.
    public var clientId: String?

    public init(state: String, nonce: String, clientId: String? = nil) {
        self.state = state
        self.nonce = nonce
        self.clientId = clientId
    }
}

/// `{"error": "invalid_request", "message": …}` for malformed calls (HTTP 4xx).
public struct ProtocolErrorBody: Codable, Hashable, Sendable {
    public var error: String
    public var message: String

    public init(error: String, message: String) {
        self.error = error
        self.message = message
    }
}

/// `POST /v1/requests` on Keyhaven's loopback API (`keyhaven serve`): an app asks Keyhaven to
/// upgrade the signed-in account (`ASAccountAuthenticationModificationController` with a
/// replace-password or upgrade-to-sign-in request). No password is sent: the service identifies the
/// account from `userInfo` (e.g. a session token).
public struct InAppRequest: Codable, Hashable, Sendable {
    public enum Kind: String, Codable, Hashable, Sendable {
        case changePassword = "change-password"
        case convertToSignIn = "convert-to-sign-in"
    }

    public var type: Kind
    public var user: String
    public var serviceIdentifier: String
    public var userInfo: [String: String]?

    public init(type: Kind, user: String, serviceIdentifier: String, userInfo: [String: String]?) {
        self.type = type
        self.user = user
        self.serviceIdentifier = serviceIdentifier
        self.userInfo = userInfo
    }
}

/// The answer to an app: what happened, and whether Keyhaven's vault was updated.
public struct InAppResult: Codable, Hashable, Sendable {
    public enum Status: String, Codable, Hashable, Sendable {
        case completed
        case failed
    }

    public var requestId: String
    public var status: Status
    public var error: ModificationError?
    public var credentialUpdated: Bool

    public init(requestId: String, status: Status, error: ModificationError? = nil, credentialUpdated: Bool) {
        self.requestId = requestId
        self.status = status
        self.error = error
        self.credentialUpdated = credentialUpdated
    }
}
