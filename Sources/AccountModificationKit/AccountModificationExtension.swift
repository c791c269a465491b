public import AccountModification

/// What a service implements to let Keyhaven change passwords and upgrade accounts to "Sign in with
/// Keyhaven" — the Linux counterpart of subclassing `ASAccountAuthenticationModificationViewController`.
///
/// Each method receives a ``ModificationContext`` and finishes the request through it:
/// `completeChangePasswordRequest(updatedCredential:)`, `completeUpgradeToSignIn()`, or
/// `cancelRequest(withError:)` (with `.userInteractionRequired` from a `…WithoutUserInteraction`
/// method to ask for the person). The kit answers Keyhaven, records every request before the
/// extension runs (so a client that crashed can ask what happened), and handles polling and
/// cancellation.
///
/// ```swift
/// struct MyExtension: AccountModificationExtension {
///     func changePasswordWithoutUserInteraction(_ context: ModificationContext) async {
///         guard let user = await users.verify(context.request.existingCredential) else {
///             return await context.cancelRequest(withError: .init(code: .failed, localizedFailureReason: "Wrong password"))
///         }
///         try? await users.setPassword(context.request.newPassword!, for: user)
///         await context.completeChangePasswordRequest(updatedCredential: nil)
///     }
/// }
/// ```
public protocol AccountModificationExtension: Sendable {
    /// Change the password without showing anything; or `cancelRequest(withError:
    /// .userInteractionRequired)` to have Keyhaven ask again with an interface allowed.
    func changePasswordWithoutUserInteraction(_ context: ModificationContext) async
    /// Prepare a page where the person confirms (step-up); return its URL. Finish through the
    /// context when the person is done.
    func prepareInterfaceToChangePassword(_ context: ModificationContext) async -> String?
    /// Convert the account to sign-in without showing anything: obtain the authorization with
    /// `getSignInUpgradeAuthorization(state:nonce:)`, link the account, `completeUpgradeToSignIn()`.
    func convertAccountToSignInWithoutUserInteraction(_ context: ModificationContext) async
    func prepareInterfaceToConvertAccountToSignIn(_ context: ModificationContext) async -> String?
    /// Convert the account to a passkey without showing anything: identify the account, ask for a
    /// passkey with `getPasskeyRegistration(options:)`, verify it (the `Passkeys` kit's
    /// `PasskeyRelyingParty`), link it, `completeUpgradeToPasskey(passwordRetired:)`.
    func convertAccountToPasskeyWithoutUserInteraction(_ context: ModificationContext) async
    func prepareInterfaceToConvertAccountToPasskey(_ context: ModificationContext) async -> String?
    /// Keyhaven (the person) cancelled the request: discard whatever was prepared.
    func cancelRequest(_ context: ModificationContext) async
}

extension AccountModificationExtension {
    public func prepareInterfaceToChangePassword(_ context: ModificationContext) async -> String? {
        await Self.refuse(context, "This service has no confirmation page.")
    }

    public func convertAccountToSignInWithoutUserInteraction(_ context: ModificationContext) async {
        await Self.refuse(context, "This service does not support sign-in upgrades.")
    }

    public func prepareInterfaceToConvertAccountToSignIn(_ context: ModificationContext) async -> String? {
        await Self.refuse(context, "This service has no confirmation page.")
    }

    public func convertAccountToPasskeyWithoutUserInteraction(_ context: ModificationContext) async {
        await Self.refuse(context, "This service does not support passkey upgrades.")
    }

    public func prepareInterfaceToConvertAccountToPasskey(_ context: ModificationContext) async -> String? {
        await Self.refuse(context, "This service has no confirmation page.")
    }

    public func cancelRequest(_ context: ModificationContext) async {}
}

/// Durable storage of what the kit answered, so a service that restarts keeps its word: after a
/// restart, an identical retry of a request gets exactly the recorded answer (the extension does
/// not run again), `GET requests/{id}` answers it, and so does a cancel. Without a ledger, answers
/// live in memory only and a restart forgets them (Keyhaven then keeps both passwords and tells the
/// person).
///
/// The kit saves an entry for every request before the extension runs (`pending`) and again at
/// every change of its answer, before the answer is sent. Save durably and synchronously (a
/// database the service already has is the natural place; a failed save should be logged).
public protocol ModificationLedger: Sendable {
    /// Saves `entry`, replacing the one with the same request id.
    func save(_ entry: ModificationLedgerEntry)
    /// The entry last saved for `requestId`.
    func load(_ requestId: String) -> ModificationLedgerEntry?
}

/// What the ledger keeps of one request: its last answer, and enough of the request to tell an
/// identical retry from another request with the same id after a restart — never its secrets
/// (passwords, `userInfo`), so the ledger is no store of passwords or their hashes.
public struct ModificationLedgerEntry: Codable, Hashable, Sendable {
    /// The request as the ledger remembers it.
    public struct Request: Codable, Hashable, Sendable {
        /// `change-password`, `convert-to-sign-in` or `convert-to-passkey`.
        public var kind: String
        public var serviceIdentifier: String
        /// The account's user name, when the request named one.
        public var user: String?
        public var interaction: Interaction

        public init(kind: String, serviceIdentifier: String, user: String?, interaction: Interaction) {
            self.kind = kind
            self.serviceIdentifier = serviceIdentifier
            self.user = user
            self.interaction = interaction
        }
    }

    public var requestId: String { response.requestId }
    /// The answer last given.
    public var response: ModificationResponse
    /// Nil in entries saved before the kit recorded requests (they are matched by id alone).
    public var request: Request?

    public init(response: ModificationResponse, request: Request?) {
        self.response = response
        self.request = request
    }
}

extension ModificationContext.Request {
    /// What the ledger keeps of this request.
    var ledgerSummary: ModificationLedgerEntry.Request {
        .init(
            kind: kind.rawValue,
            serviceIdentifier: serviceIdentifier,
            user: existingCredential?.user,
            interaction: interaction
        )
    }
}

extension AccountModificationExtension {
    /// What every default above does: fails the request with `reason` (and offers no page).
    @discardableResult
    fileprivate static func refuse(_ context: ModificationContext, _ reason: String) async -> String? {
        await context.cancelRequest(withError: .init(code: .failed, localizedFailureReason: reason))
        return nil
    }
}
