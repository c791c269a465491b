public import AccountModification
import Foundation
public import Vault

/// Obtains sign-in authorizations from an identity provider on the person's behalf (Keyhaven's
/// device API in production), after showing them the consent step.
public protocol SignInAuthority: Sendable {
    /// The provider this authority speaks for (its issuer).
    var issuer: String { get }
    /// An authorization for `request` (the service's state and nonce, its client id), or one whose
    /// `error` says why not (`user_cancelled_authorize` when the person declined). `user` carries
    /// the account's `sub`.
    func authorize(_ request: SignInRequest, service: String) async -> SignInAuthorization
}

extension UpgradeCoordinator {
    /// Switches `credential`'s account on `service` to "Sign in with Keyhaven": the service asks
    /// for an authorization with its state and nonce, `authority` obtains it (consent included),
    /// the service links the account and stops accepting its password. On success the vault
    /// record loses its password (kept in the history) and is marked as signing in with the
    /// provider. Journaled like password changes: no outcome loses the password that works.
    public func upgradeToSignIn(
        _ credentialID: CredentialID,
        service: String,
        authority: any SignInAuthority,
        allowInteraction: Bool = true,
        cancelled: @escaping @Sendable () -> Bool = { false }
    ) async -> UpgradeResult {
        let credential: Credential
        do {
            credential = try vault.credential(credentialID)
        } catch {
            return .failed(reason: error.message, code: nil)
        }
        guard let password = credential.password else {
            return .failed(reason: "this account already signs in with Keyhaven", code: nil)
        }
        let manifest: AccountModificationManifest
        do {
            manifest = try await environment.manifest(for: service)
        } catch {
            return .failed(reason: "\(error)", code: nil)
        }
        guard manifest.supportsUpgradeToSignIn, let signIn = manifest.signIn else {
            return .failed(reason: "\(service) does not offer upgrades to Sign in with Keyhaven", code: nil)
        }
        guard signIn.issuer == authority.issuer else {
            return .failed(
                reason: "\(service) uses the provider \(signIn.issuer); sign in to it first (keyhaven idp login)",
                code: nil
            )
        }
        let entry = UpgradeJournalEntry(
            credentialID: credentialID,
            kind: .signIn,
            user: credential.user,
            service: service,
            endpoint: manifest.endpoint,
            requestId: UUID().uuidString.lowercased(),
            oldPassword: password,
            newPassword: nil,
            started: Date()
        )
        do {
            try vault.beginUpgrade(entry)
        } catch {
            return .failed(reason: error.message, code: nil)
        }
        let flow = ModificationFlow(
            kind: .convertToSignIn,
            requestId: entry.requestId,
            serviceIdentifier: service,
            existingCredential: PasswordCredential(user: credential.user, password: password),
            allowInteraction: allowInteraction
        )
        let journaling = JournalingHost(base: host, authority: authority, vault: vault, entry: entry, service: service)
        let runner = ModificationRunner(
            transport: environment.transport(endpoint: entry.endpoint),
            host: journaling,
            pollInterval: pollInterval,
            deadline: deadline
        )
        let outcome = await runner.run(flow, cancelled: cancelled)
        return apply(outcome, to: (try? vault.pendingUpgrades().first { $0.id == entry.id }) ?? entry)
    }
}

/// Gets the authorization from the authority and journals the account it links to before the
/// service sees it; everything else goes to the person's host.
struct JournalingHost: ModificationHost {
    let base: any ModificationHost
    let authority: any SignInAuthority
    let vault: Vault
    let entry: UpgradeJournalEntry
    let service: String

    func presentInterface(_ url: String) async { await base.presentInterface(url) }

    func obtainSignInAuthorization(_ request: SignInRequest) async -> SignInAuthorization {
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
