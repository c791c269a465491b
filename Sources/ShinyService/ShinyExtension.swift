import AccountModification
import AccountModificationKit
import Foundation
import PasswordRules

/// shiny's account-modification extension: what a service developer would write.
///
/// - Identifies the account by its current credential (or, for in-app requests, the session token
///   in `userInfo["sessionToken"]`).
/// - Accounts with TOTP need the person: without interaction it answers `userInteractionRequired`;
///   with interaction it prepares a step-up page where the person enters a code.
/// - New passwords must satisfy shiny's rules; otherwise the request fails with the reason.
struct ShinyExtension: AccountModificationExtension {
    let store: ShinyStore
    let throttle: ShinyThrottle
    let rules: PasswordRules
    let stepUps: StepUps
    let signIn: ShinySignIn
    let passkeys: ShinyPasskeys
    /// Test hook: the password the service actually sets (it reports it back).
    let substitute: (@Sendable (String) -> String)?

    /// The account a request is for. A current password counts against the account's and the
    /// address's guessing limits, like a sign-in (this endpoint is no unthrottled password oracle).
    func identify(_ context: ModificationContext) throws -> Result<ShinyStore.User, ModificationError> {
        let request = context.request
        if let credential = request.existingCredential {
            let keys = throttle.keys(account: credential.user, address: context.clientAddress)
            do throws(ShinyThrottle.Locked) {
                try throttle.charge(keys)
            } catch {
                return .failure(.init(code: .failed, localizedFailureReason: error.message))
            }
            let (user, _) = try store.verify(name: credential.user, password: credential.password)
            guard let user else {
                return .failure(
                    .init(code: .failed, localizedFailureReason: "The current user name or password is wrong.")
                )
            }
            // The password was right: not a wrong guess (the step-up asks for the code, and counts it).
            throttle.refund(keys, succeeded: user.totpSecret == nil)
            return .success(user)
        }
        if let token = request.userInfo?["sessionToken"], let user = try store.user(sessionToken: token) {
            return .success(user)
        }
        return .failure(
            .init(code: .failed, localizedFailureReason: "Sign in to shiny first: no valid credential or session.")
        )
    }

    func check(_ newPassword: String?) -> ModificationError? {
        guard let newPassword else { return .init(code: .failed, localizedFailureReason: "No new password was given.") }
        let report = rules.validate(newPassword)
        guard report.isValid else {
            return .init(code: .failed, localizedFailureReason: "shiny cannot use this password: \(report).")
        }
        return nil
    }

    func apply(_ password: String, user: ShinyStore.User, context: ModificationContext) async {
        let actual = substitute?(password) ?? password
        do {
            try store.setPassword(actual, for: user.id)
            try store.endSessions(for: user.id)
        } catch {
            return await context.cancelRequest(
                withError: .init(code: .failed, localizedFailureReason: "shiny could not save the password.")
            )
        }
        await context.completeChangePasswordRequest(
            updatedCredential: actual == password ? nil : PasswordCredential(user: user.name, password: actual)
        )
    }

    func changePasswordWithoutUserInteraction(_ context: ModificationContext) async {
        let request = context.request
        let identified: Result<ShinyStore.User, ModificationError>
        do { identified = try identify(context) } catch {
            return await context.cancelRequest(
                withError: .init(code: .failed, localizedFailureReason: "shiny is unavailable.")
            )
        }
        switch identified {
        case .failure(let error):
            await context.cancelRequest(withError: error)
        case .success(let user):
            if let problem = check(request.newPassword) {
                return await context.cancelRequest(withError: problem)
            }
            if user.totpSecret != nil {
                // A second factor protects this account: the person must confirm.
                return await context.cancelRequest(withError: .init(code: .userInteractionRequired))
            }
            await apply(request.newPassword!, user: user, context: context)
        }
    }

    func prepareInterfaceToChangePassword(_ context: ModificationContext) async -> String? {
        let request = context.request
        guard let identified = try? identify(context) else {
            await context.cancelRequest(
                withError: .init(code: .failed, localizedFailureReason: "shiny is unavailable.")
            )
            return nil
        }
        switch identified {
        case .failure(let error):
            await context.cancelRequest(withError: error)
            return nil
        case .success(let user):
            if let problem = check(request.newPassword) {
                await context.cancelRequest(withError: problem)
                return nil
            }
            guard user.totpSecret != nil else {
                // No second factor: the credential is all there is to confirm, and it was given. A
                // page asking for an authenticator code the person cannot have would only strand them.
                await apply(request.newPassword!, user: user, context: context)
                return nil
            }
            await stepUps.open(request.requestId, user: user, action: .changePassword(request.newPassword!))
            return "/account-modification/step-up/\(request.requestId)"
        }
    }

    /// convert-to-passkey: the current password identifies the account; shiny asks Keyhaven for a
    /// passkey, verifies and links it, and retires the password (the account signs in with its
    /// passkeys from then on). An account with an authenticator code converts on shiny's own page
    /// only: the password alone must not replace a second factor.
    func convertAccountToPasskeyWithoutUserInteraction(_ context: ModificationContext) async {
        func fail(_ reason: String) async {
            await context.cancelRequest(withError: .init(code: .failed, localizedFailureReason: reason))
        }
        guard passkeys.available else {
            return await fail("shiny's address cannot hold passkeys (https or localhost).")
        }
        let user: ShinyStore.User
        do {
            switch try identify(context) {
            case .failure(let error): return await context.cancelRequest(withError: error)
            case .success(let found): user = found
            }
        } catch {
            return await fail("shiny is unavailable.")
        }
        guard user.totpSecret == nil else {
            return await fail("This account uses an authenticator code: add a passkey on shiny's account page.")
        }
        let registration: PasskeyRegistration
        do {
            registration = try await context.getPasskeyRegistration(options: try passkeys.creationOptions(for: user))
        } catch is CancellationError {
            return
        } catch {
            return await fail("shiny could not prepare the passkey.")
        }
        guard let credential = registration.credential else {
            return await fail("Keyhaven made no passkey (\(registration.error ?? "no reason given")).")
        }
        do {
            _ = try passkeys.register(credential, for: user)
            try store.retirePassword(for: user.id)
            try store.endSessions(for: user.id)
        } catch let error as ShinyAPIError {
            return await fail("shiny refused the passkey: \(error.problem.message).")
        } catch {
            return await fail("shiny could not save the passkey.")
        }
        await context.completeUpgradeToPasskey(passwordRetired: true)
    }

    func cancelRequest(_ context: ModificationContext) async {
        await stepUps.close(context.request.requestId)
        await stepUps.noteCancelled(context.request.requestId)
    }
}

/// Step-ups waiting for the person's code.
actor StepUps {
    enum Action: Sendable {
        case changePassword(String)
        case convertToSignIn
    }

    struct Pending: Sendable {
        var user: ShinyStore.User
        var action: Action
        var attempts = 0
    }

    private var pending: [String: Pending] = [:]
    /// Request ids cancelled through the protocol (observable in tests and the demo).
    private(set) var cancelled: [String] = []

    func open(_ id: String, user: ShinyStore.User, action: Action) {
        pending[id] = Pending(user: user, action: action)
    }

    func get(_ id: String) -> Pending? { pending[id] }

    func close(_ id: String) { pending[id] = nil }

    func failedAttempt(_ id: String) -> Int {
        pending[id]?.attempts += 1
        return pending[id]?.attempts ?? 0
    }

    func noteCancelled(_ id: String) { cancelled.append(id) }
}
