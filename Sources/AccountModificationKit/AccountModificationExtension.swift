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
    /// Keyhaven (the person) cancelled the request: discard whatever was prepared.
    func cancelRequest(_ context: ModificationContext) async
}

extension AccountModificationExtension {
    public func prepareInterfaceToChangePassword(_ context: ModificationContext) async -> String? {
        await context.cancelRequest(
            withError: .init(code: .failed, localizedFailureReason: "This service has no confirmation page.")
        )
        return nil
    }

    public func convertAccountToSignInWithoutUserInteraction(_ context: ModificationContext) async {
        await context.cancelRequest(
            withError: .init(code: .failed, localizedFailureReason: "This service does not support sign-in upgrades.")
        )
    }

    public func prepareInterfaceToConvertAccountToSignIn(_ context: ModificationContext) async -> String? {
        await context.cancelRequest(
            withError: .init(code: .failed, localizedFailureReason: "This service has no confirmation page.")
        )
        return nil
    }

    public func cancelRequest(_ context: ModificationContext) async {}
}

/// Durable storage of request answers, so a service that restarts can still tell Keyhaven what
/// happened to a request (`GET requests/{id}`). Without one, answers live in memory only and a
/// restart forgets them (Keyhaven then keeps both passwords and tells the person).
///
/// The kit saves every answer, starting with `pending` before the extension runs. Keep the saving
/// cheap and synchronous; a database the service already has is the natural place.
public protocol ModificationLedger: Sendable {
    func save(_ response: ModificationResponse)
    func load(_ requestId: String) -> ModificationResponse?
}
