public import AccountModification
import Foundation
public import _KeyhavenSupport

/// One request as the extension sees it, and the ways to finish it
/// (`ASAccountAuthenticationModificationExtensionContext`).
public final class ModificationContext: Sendable {
    /// What Keyhaven asked for.
    public struct Request: Sendable, Hashable {
        public enum Kind: String, Sendable, Hashable {
            case changePassword = "change-password"
            case convertToSignIn = "convert-to-sign-in"
            case convertToPasskey = "convert-to-passkey"
        }

        public var kind: Kind
        public var requestId: String
        public var serviceIdentifier: String
        public var existingCredential: PasswordCredential?
        /// The password Keyhaven generated (password changes).
        public var newPassword: String?
        public var userInfo: [String: String]?
        public var interaction: Interaction
    }

    public let request: Request
    /// The address the request came from (the connection's peer, when the router's context is a
    /// `RemoteAddressRequestContext`): for the service's guessing limits on `existingCredential`.
    public let clientAddress: String?
    let record: RequestRecord
    let clientId: String?

    init(request: Request, record: RequestRecord, clientId: String?, clientAddress: String? = nil) {
        self.request = request
        self.record = record
        self.clientId = clientId
        self.clientAddress = clientAddress
    }

    /// The password change is done. Pass the credential actually set when it differs from
    /// `request.newPassword` (Keyhaven stores what you report).
    public func completeChangePasswordRequest(updatedCredential: PasswordCredential?) async {
        await record.finish(
            .init(requestId: request.requestId, status: .completed, updatedCredential: updatedCredential)
        )
    }

    /// The upgrade to sign-in is done: the account is linked and its password no longer signs in.
    public func completeUpgradeToSignIn() async {
        await record.finish(.init(requestId: request.requestId, status: .completed))
    }

    /// The account now signs in with the passkey Keyhaven made (``getPasskeyRegistration(options:)``);
    /// `passwordRetired`: its password no longer works.
    public func completeUpgradeToPasskey(passwordRetired: Bool) async {
        await record.finish(.init(requestId: request.requestId, status: .completed, passwordRetired: passwordRetired))
    }

    /// Ends the request without a change. `.userInteractionRequired` from a `…WithoutUserInteraction`
    /// method makes Keyhaven ask again with an interface allowed.
    public func cancelRequest(withError error: ModificationError) async {
        if error.code == .userInteractionRequired && request.interaction == .none {
            await record.finish(.init(requestId: request.requestId, status: .userInteractionRequired, error: error))
        } else {
            await record.finish(.init(requestId: request.requestId, status: .failed, error: error))
        }
    }

    /// Asks Keyhaven for a sign-in authorization carrying `state` and `nonce`, and waits for it.
    /// - Throws: `CancellationError` when the request is cancelled while waiting.
    public func getSignInUpgradeAuthorization(state: String, nonce: String) async throws -> SignInAuthorization {
        try await record.awaitAuthorization(SignInRequest(state: state, nonce: nonce, clientId: clientId))
    }

    /// Asks Keyhaven for a passkey made for `options` (the service's
    /// `PublicKeyCredentialCreationOptionsJSON`, with a challenge it keeps), and waits for it: the
    /// `RegistrationResponseJSON` to verify with the relying-party kit, or Keyhaven's reason for
    /// making none (`error`).
    /// - Throws: `CancellationError` when the request is cancelled while waiting.
    public func getPasskeyRegistration(options: JSONValue) async throws -> PasskeyRegistration {
        try await record.awaitPasskey(options)
    }

    /// Whether the request is still open (not completed, failed or cancelled).
    public var isOpen: Bool {
        get async { await !record.isFinal }
    }
}

/// The kit's bookkeeping for one request: its current answer, who waits for a change, and the
/// authorization hand-off.
actor RequestRecord {
    let requestId: String
    /// What identifies the request's content (to tell a retry from a conflicting request).
    var fingerprint: ModificationContext.Request
    private(set) var response: ModificationResponse
    private(set) var version = 0
    private var waiters: [(version: Int, continuation: CheckedContinuation<Void, Never>)] = []
    private var authorizationWaiter: CheckedContinuation<SignInAuthorization, any Error>?
    private var passkeyWaiter: CheckedContinuation<PasskeyRegistration, any Error>?
    var context: ModificationContext?
    /// Where answers are kept durably (if the service gave one).
    let ledger: (any ModificationLedger)?
    /// Told when the answer settles (a finished record may make room).
    private weak var book: RequestBook?

    init(_ request: ModificationContext.Request, ledger: (any ModificationLedger)? = nil, book: RequestBook? = nil) {
        requestId = request.requestId
        fingerprint = request
        self.ledger = ledger
        self.book = book
        response = ModificationResponse(requestId: request.requestId, status: .pending)
    }

    var isFinal: Bool { response.isSettled }

    /// Saves the current answer in the ledger (before anyone is told it).
    func saveToLedger() {
        ledger?.save(ModificationLedgerEntry(response: response, request: fingerprint.ledgerSummary))
    }

    func set(_ response: ModificationResponse) {
        guard !isFinal else { return }
        self.response = response
        saveToLedger()
        if response.isSettled { book?.settled(self) }
        version += 1
        let ready = waiters
        waiters.removeAll()
        for waiter in ready { waiter.continuation.resume() }
    }

    func finish(_ response: ModificationResponse) {
        set(response)
        authorizationWaiter.take()?.resume(throwing: CancellationError())
        passkeyWaiter.take()?.resume(throwing: CancellationError())
    }

    /// Waits until the response changes from what `version` saw, or `timeout` passes.
    func waitForChange(after version: Int, timeout: Duration) async {
        guard self.version == version && !isFinal else { return }
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            await self?.wake()
        }
        await withCheckedContinuation { continuation in
            waiters.append((version, continuation))
        }
        timer.cancel()
    }

    private func wake() {
        let ready = waiters
        waiters.removeAll()
        for waiter in ready { waiter.continuation.resume() }
    }

    func awaitAuthorization(_ request: SignInRequest) async throws -> SignInAuthorization {
        guard !isFinal else { throw CancellationError() }
        set(ModificationResponse(requestId: requestId, status: .needsSignInAuthorization, signInRequest: request))
        return try await withCheckedThrowingContinuation { continuation in
            authorizationWaiter = continuation
        }
    }

    func awaitPasskey(_ options: JSONValue) async throws -> PasskeyRegistration {
        guard !isFinal else { throw CancellationError() }
        set(
            ModificationResponse(
                requestId: requestId,
                status: .needsPasskeyRegistration,
                passkeyCreationOptions: options
            )
        )
        return try await withCheckedThrowingContinuation { continuation in
            passkeyWaiter = continuation
        }
    }

    /// Hands Keyhaven's passkey to the waiting extension. False when nothing waits for one.
    func deliver(_ registration: PasskeyRegistration) -> Bool { hand(registration, to: &passkeyWaiter) }

    /// Hands Keyhaven's authorization to the waiting extension. False when nothing waits for one.
    func deliver(_ authorization: SignInAuthorization) -> Bool { hand(authorization, to: &authorizationWaiter) }

    /// Resumes (and forgets) `waiter` with `value`, the request pending again; false when nothing
    /// waits.
    private func hand<T: Sendable>(_ value: T, to waiter: inout CheckedContinuation<T, any Error>?) -> Bool {
        guard let continuation = waiter.take() else { return false }
        set(ModificationResponse(requestId: requestId, status: .pending))
        continuation.resume(returning: value)
        return true
    }
}
