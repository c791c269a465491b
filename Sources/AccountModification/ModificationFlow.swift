public import _KeyhavenSupport

/// The host side of one account modification, as a plain state machine: no I/O, no clocks. Feed it
/// what happened (an answer, the person's cancel, a transport failure), and it says what to do next.
///
/// Flow (Apple's `ASAccountAuthenticationModificationController` behaviour):
///
/// 1. send the request without interaction (`…WithoutUserInteraction`);
/// 2. `userInteractionRequired` → send it again with interaction allowed (`prepareInterfaceTo…`);
/// 3. `presentInterface` → show the URL to the person and poll until a final answer;
/// 4. `needsSignInAuthorization` (conversions) → obtain an authorization with the service's state and
///    nonce for the client its manifest names, post it, continue (a request for any other client id
///    ends the flow: a service never gets an authorization for another service's client);
/// 5. `completed` / `failed` → finish. A cancel by the person is sent to the service; its answer
///    decides the outcome (a service that completed first wins: its new password must be kept).
public struct ModificationFlow: Sendable {
    public enum Kind: Hashable, Sendable {
        case changePassword(newPassword: String)
        /// A switch to sign-in with the client the service's manifest names (`signIn.clientId`): the
        /// only client an authorization is obtained for.
        case convertToSignIn(clientId: String)
        /// A switch to a passkey Keyhaven creates for the service's options.
        case convertToPasskey
    }

    /// A request to the service.
    public enum Request: Hashable, Sendable {
        case changePassword(ChangePasswordRequest)
        case convertToSignIn(ConvertToSignInRequest)
        case convertToPasskey(ConvertToPasskeyRequest)
    }

    public enum Action: Hashable, Sendable {
        /// Send this request.
        case send(Request)
        /// Show this URL to the person, then poll.
        case presentInterface(String)
        /// Wait the polling interval, then ask for the request's status.
        case poll
        /// Ask the service to cancel (`cancelRequest()`).
        case cancel
        /// Obtain an authorization from the identity provider for this state and nonce.
        case obtainSignInAuthorization(SignInRequest)
        /// Post the authorization (or its error) to the service.
        case sendAuthorization(SignInAuthorization)
        /// Create a passkey for these creation options (the host journals it before it is sent).
        case createPasskey(JSONValue)
        /// Post the passkey (or why none was made) to the service.
        case sendPasskeyRegistration(PasskeyRegistration)
        /// Done.
        case finish(Outcome)
    }

    public enum Outcome: Hashable, Sendable {
        /// The service completed. For a password change, the credential it reports (it may differ
        /// from what was sent: store that one); `nil` means the password that was sent.
        case completed(updatedCredential: PasswordCredential?)
        /// The service linked the passkey Keyhaven made (convert-to-passkey); `passwordRetired`
        /// says whether the account's password stopped working.
        case passkeyLinked(passwordRetired: Bool)
        /// The service did not change anything.
        case failed(ModificationError)
        /// The service may or may not have applied the change (the connection failed after the
        /// request was sent). The journal entry stays pending until the service can be asked.
        case indeterminate(reason: String)
    }

    enum State: Hashable, Sendable {
        case initial
        case awaitingAnswer(Interaction)
        case presenting
        case awaitingAuthorization
        case sendingAuthorization
        case awaitingPasskey
        case sendingPasskey
        case canceling
        case finished
    }

    public let kind: Kind
    public let requestId: String
    public let serviceIdentifier: String
    public let existingCredential: PasswordCredential?
    public let userInfo: [String: String]?
    /// Whether the person can be shown an interface (false for headless runs).
    public let allowInteraction: Bool
    private(set) var state: State = .initial
    /// Whether a committing request has been sent (so a lost connection is indeterminate).
    private(set) var requestSent = false
    /// Whether a sign-in authorization (not an error) was handed to the service: a conversion
    /// completes only after one was (security review Low #17).
    private(set) var authorizationHandedOver = false
    /// Whether a passkey (not an error) was handed to the service: a conversion to a passkey
    /// completes only after one was.
    private(set) var passkeyHandedOver = false

    public init(
        kind: Kind,
        requestId: String,
        serviceIdentifier: String,
        existingCredential: PasswordCredential?,
        userInfo: [String: String]? = nil,
        allowInteraction: Bool = true
    ) {
        self.kind = kind
        self.requestId = requestId
        self.serviceIdentifier = serviceIdentifier
        self.existingCredential = existingCredential
        self.userInfo = userInfo
        self.allowInteraction = allowInteraction
    }

    public var isFinished: Bool { state == .finished }

    func request(_ interaction: Interaction) -> Request {
        switch kind {
        case .changePassword(let newPassword):
            return .changePassword(
                ChangePasswordRequest(
                    requestId: requestId,
                    serviceIdentifier: serviceIdentifier,
                    existingCredential: existingCredential,
                    newPassword: newPassword,
                    userInfo: userInfo,
                    interaction: interaction
                )
            )
        case .convertToSignIn, .convertToPasskey:
            let body = ConvertAccountRequest(
                requestId: requestId,
                serviceIdentifier: serviceIdentifier,
                existingCredential: existingCredential,
                userInfo: userInfo,
                interaction: interaction
            )
            if case .convertToSignIn = kind { return .convertToSignIn(body) }
            return .convertToPasskey(body)
        }
    }

    /// The first action.
    public mutating func start() -> Action {
        precondition(state == .initial, "start() once")
        state = .awaitingAnswer(.none)
        requestSent = true
        return .send(request(.none))
    }

    private mutating func finish(_ outcome: Outcome) -> Action {
        state = .finished
        return .finish(outcome)
    }

    /// Whether `url` may be shown to the person as the service's page: an absolute `https` URL (or
    /// `http` on loopback) on the same origin as the service, with no spaces or control characters.
    public static func isPresentable(_ url: String, for serviceIdentifier: String) -> Bool {
        guard let service = ServiceOrigin(service: serviceIdentifier), service.isPotentiallyTrustworthy,
            service.isSameOrigin(as: url),
            url.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7F && !(0x80...0x9F).contains($0.value) })
        else { return false }
        return true
    }

    private mutating func protocolViolation(_ what: String) -> Action {
        finish(
            .failed(
                ModificationError(code: .failed, localizedFailureReason: "the service answered unexpectedly: \(what)")
            )
        )
    }

    /// The service answered (a request, a poll, a cancel or an authorization).
    public mutating func handle(_ response: ModificationResponse) -> Action {
        guard state != .finished else { return .finish(.failed(ModificationError(code: .failed))) }
        guard response.requestId == requestId else {
            return protocolViolation("an answer for another request")
        }
        switch response.status {
        case .completed:
            if case .convertToSignIn = kind, !authorizationHandedOver {
                // A conversion completes only after an authorization (not an error) was handed over:
                // otherwise the record would lose its password for a sign-in that does not exist.
                return protocolViolation("a conversion completed without a sign-in authorization")
            }
            if case .convertToPasskey = kind {
                // Only a passkey Keyhaven handed over (and journaled) can have been linked.
                guard passkeyHandedOver else {
                    return protocolViolation("a conversion completed without a passkey")
                }
                return finish(.passkeyLinked(passwordRetired: response.passwordRetired ?? false))
            }
            return finish(.completed(updatedCredential: response.updatedCredential))
        case .failed:
            let error = response.error ?? ModificationError(code: .failed)
            if state == .canceling {
                return finish(
                    .failed(
                        ModificationError(code: .userCanceled, localizedFailureReason: error.localizedFailureReason)
                    )
                )
            }
            if error.code == .userInteractionRequired {
                return interactionRequired()
            }
            return finish(.failed(error))
        case .userInteractionRequired:
            if state == .canceling {
                return finish(.failed(ModificationError(code: .userCanceled)))
            }
            return interactionRequired()
        case .presentInterface:
            guard let url = response.interfaceURL, !url.isEmpty else {
                return protocolViolation("presentInterface without an interfaceURL")
            }
            // Only a page on the service's own origin, over https (http on loopback), ever reaches
            // the person's browser (security review High #3): not `file:`, not another site, not
            // text that a browser would read as a command-line option.
            guard Self.isPresentable(url, for: serviceIdentifier) else {
                return protocolViolation("an interfaceURL that is not an https page of the service itself")
            }
            switch state {
            case .awaitingAnswer(.allowed):
                state = .presenting
                return .presentInterface(url)
            case .presenting, .sendingAuthorization, .sendingPasskey:
                state = .presenting
                return .poll
            case .canceling:
                return .poll
            default:
                return protocolViolation("presentInterface for a request sent without interaction")
            }
        case .pending:
            return .poll
        case .needsSignInAuthorization:
            guard case .convertToSignIn(let clientId) = kind else {
                return protocolViolation("a sign-in authorization requested for a password change")
            }
            guard var signIn = response.signInRequest else {
                return protocolViolation("needsSignInAuthorization without state and nonce")
            }
            // Security review High #1: the client id comes from the manifest Keyhaven read from the
            // service's own origin, never from this answer. A service asking for another client's
            // authorization is refused outright; nothing is asked of the provider.
            if let asked = signIn.clientId, asked != clientId {
                return finish(
                    .failed(
                        ModificationError(
                            code: .failed,
                            localizedFailureReason:
                                "the service asked for a sign-in authorization for another client (\(asked)) than "
                                + "its manifest names (\(clientId)); refused"
                        )
                    )
                )
            }
            signIn.clientId = clientId
            if state == .canceling || state == .awaitingAuthorization || state == .sendingAuthorization {
                return .poll
            }
            state = .awaitingAuthorization
            return .obtainSignInAuthorization(signIn)
        case .needsPasskeyRegistration:
            guard case .convertToPasskey = kind else {
                return protocolViolation("a passkey asked for in another request")
            }
            guard let options = response.passkeyCreationOptions, options.object != nil else {
                return protocolViolation("needsPasskeyRegistration without creation options")
            }
            if state == .canceling || state == .awaitingPasskey || state == .sendingPasskey {
                return .poll
            }
            state = .awaitingPasskey
            return .createPasskey(options)
        }
    }

    private mutating func interactionRequired() -> Action {
        guard case .awaitingAnswer(.none) = state else {
            return protocolViolation("userInteractionRequired although interaction was allowed")
        }
        guard allowInteraction else {
            return finish(
                .failed(
                    ModificationError(
                        code: .userInteractionRequired,
                        localizedFailureReason: "the service needs you to confirm on its page"
                    )
                )
            )
        }
        state = .awaitingAnswer(.allowed)
        return .send(request(.allowed))
    }

    /// The identity provider answered (or the person declined: `authorization.error`).
    public mutating func authorizationObtained(_ authorization: SignInAuthorization) -> Action {
        guard state == .awaitingAuthorization else { return protocolViolation("an authorization out of turn") }
        state = .sendingAuthorization
        authorizationHandedOver = authorization.error == nil && authorization.user?.isEmpty == false
        return .sendAuthorization(authorization)
    }

    /// The host made the passkey (journaled it) — or could not: `registration.error`.
    public mutating func passkeyCreated(_ registration: PasskeyRegistration) -> Action {
        guard state == .awaitingPasskey else { return protocolViolation("a passkey out of turn") }
        state = .sendingPasskey
        passkeyHandedOver = registration.error == nil && registration.credential != nil
        return .sendPasskeyRegistration(registration)
    }

    /// The person pressed Cancel (or Ctrl-C), or the runner's deadline passed.
    public mutating func cancel() -> Action {
        switch state {
        case .initial:
            return finish(.failed(ModificationError(code: .userCanceled)))
        case .finished:
            return .finish(.failed(ModificationError(code: .userCanceled)))
        case .canceling:
            return .poll
        default:
            state = .canceling
            return .cancel
        }
    }

    /// The service could not be reached or answered something that is not the protocol.
    /// `delivered` is false when the request certainly did not reach it (connection refused).
    public mutating func transportFailed(_ reason: String, delivered: Bool) -> Action {
        if !delivered && state == .awaitingAnswer(.none) {
            return finish(.failed(ModificationError(code: .failed, localizedFailureReason: reason)))
        }
        return finish(.indeterminate(reason: reason))
    }
}
