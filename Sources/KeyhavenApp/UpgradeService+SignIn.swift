public import AccountModification
import Foundation
import Passkeys
import Vault
import _KeyhavenSupport

/// Obtains sign-in authorizations from an identity provider on the person's behalf (Keyhaven's
/// device API in production), after showing them the consent step.
public protocol SignInAuthority: Sendable {
    /// The provider this authority speaks for (its issuer).
    var issuer: String { get }
    /// An authorization for `request` (the service's state and nonce, and the client id its
    /// manifest names), or one whose `error` says why not (`user_cancelled_authorize` when the
    /// person declined). `user` carries the account's `sub`.
    ///
    /// `service` is the service being upgraded, as the person named it: the authority shows it to
    /// the person and tells the provider its origin, which must be one the client is registered for.
    func authorize(_ request: SignInRequest, service: String) async -> SignInAuthorization
}

/// Gets the authorization from the authority and journals the account it links to before the
/// service sees it; everything else goes to the person's host.
///
/// Only for `clientId`, the client the service's manifest names: ``ModificationFlow`` already
/// refuses a request for another, and this host refuses it again before the authority is asked.
struct JournalingHost: ModificationHost {
    let base: any ModificationHost
    let authority: any SignInAuthority
    let vault: Vault
    let entry: UpgradeJournalEntry
    let service: String
    let clientId: String

    func presentInterface(_ url: String) async { await base.presentInterface(url) }

    func obtainSignInAuthorization(_ request: SignInRequest) async -> SignInAuthorization {
        guard request.clientId == clientId else { return SignInAuthorization(error: "invalid_client") }
        let authorization = await authority.authorize(request, service: service)
        guard authorization.error == nil, let subject = authorization.user else { return authorization }
        var updated = entry
        updated.signInIssuer = authority.issuer
        updated.signInSubject = subject
        do {
            try vault.updateUpgrade(updated)
        } catch {
            return SignInAuthorization(error: "the vault could not record the authorization")
        }
        return authorization
    }
}

/// Makes the passkey the service asked for (Keyhaven's authenticator, for the service's origin) and
/// journals it before the service sees it: whatever happens next, the passkey is not lost.
struct PasskeyJournalingHost: ModificationHost {
    let base: any ModificationHost
    let vault: Vault
    let entry: UpgradeJournalEntry
    let service: String
    let now: @Sendable () -> Date

    func presentInterface(_ url: String) async { await base.presentInterface(url) }

    func obtainSignInAuthorization(_ request: SignInRequest) async -> SignInAuthorization {
        SignInAuthorization(error: "invalid_request")
    }

    func createPasskey(_ options: JSONValue) async -> PasskeyRegistration {
        guard let origin = ServiceOrigin(service: service)?.serialized else {
            return PasskeyRegistration(error: "the service has no origin")
        }
        let made: (credential: PasskeyCredential, response: JSONValue)
        do {
            let request = try CreationRequest(json: options)
            let rpID = try Authenticator.rpID(request.rpID, origin: origin)
            // The person unlocked the vault to run this upgrade: that is the user verification.
            made = try Authenticator(now: now).register(
                request,
                origin: origin,
                existing: try vault.passkeys(rpID: rpID),
                userVerified: true
            )
        } catch let error as PasskeyError {
            return PasskeyRegistration(error: error.message)
        } catch {
            return PasskeyRegistration(error: "the vault's passkeys could not be read")
        }
        var updated = entry
        updated.passkey = made.credential
        do {
            try vault.updateUpgrade(updated)
        } catch {
            return PasskeyRegistration(error: "the vault could not record the passkey")
        }
        FaultPoint.afterPasskeyJournal.hit()
        return PasskeyRegistration(credential: made.response)
    }
}
