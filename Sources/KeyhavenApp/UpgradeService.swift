public import AccountModification
public import Foundation
public import PasswordRules
public import Vault

/// What Keyhaven needs from the outside world to upgrade accounts (HTTP in production).
public protocol UpgradeEnvironment: Sendable {
    /// The service's manifest (read by the one ``ManifestReader``); throws a message for the person.
    func manifest(for service: String) async throws -> AccountModificationManifest
    /// A transport to a protocol endpoint.
    func transport(endpoint: String) -> any ModificationTransport
}

/// The result of one upgrade, for the person.
public enum UpgradeResult: Sendable, Equatable {
    /// Done: the vault holds the new password (`substituted` when the service chose another).
    case upgraded(credential: CredentialID, substituted: Bool)
    /// Nothing changed; the service's reason when it gave one.
    case failed(reason: String, code: ModificationErrorCode?)
    /// The service could not confirm; the journal keeps both passwords and the next start asks again.
    case pending(reason: String)
}

/// One upgrade to carry out: the three requests of Apple's account-modification extension, run by
/// the one pipeline of ``UpgradeService/run(_:)``.
public enum UpgradePlan: Sendable {
    /// A new strong password for a vault credential (`changePasswordWithoutUserInteraction`).
    case strongPassword(CredentialID, service: String)
    /// A switch to Sign in with Keyhaven for a vault credential
    /// (`convertAccountToSignInWithAppleWithoutUserInteraction`), authorized by `authority`.
    case signIn(CredentialID, service: String, authority: any SignInAuthority)
    /// A switch to a passkey Keyhaven makes for the service (Keyhaven's convert-to-passkey request).
    case passkey(CredentialID, service: String)
    /// An app's request for its signed-in user (no password sent; the credential is created when the
    /// vault has none).
    case inApp(InAppRequest, credential: CredentialID?, requestId: String)

    var journalKind: UpgradeJournalEntry.Kind {
        switch self {
        case .strongPassword, .inApp: .strongPassword
        case .signIn: .signIn
        case .passkey: .passkey
        }
    }

    var service: String {
        switch self {
        case .strongPassword(_, let service), .signIn(_, let service, _), .passkey(_, let service): service
        case .inApp(let request, _, _): request.serviceIdentifier
        }
    }
}

/// The use case behind `keyhaven upgrade`, the local API's in-app requests and the web app's
/// upgrades (the agent does not call it: issue 27): upgrades accounts through the account-modification protocol without ever losing a
/// password. The generated password is journaled (and synced) before the service is asked; the
/// answer is applied in one transaction with the journal's removal; an unanswered request stays
/// journaled and is settled by ``reconcile()`` — which runs only when a caller asks for it.
///
/// Time, request ids and password randomness are injected, so flows are reproducible in tests.
public struct UpgradeService: Sendable {
    public let vault: Vault
    public let environment: any UpgradeEnvironment
    public let host: any ModificationHost
    public var pollInterval: Duration
    public var deadline: Duration
    /// The clock of journal entries and sign-in links.
    public var now: @Sendable () -> Date
    /// New request ids (the journal's and the service's).
    public var newRequestID: @Sendable () -> String
    /// New passwords for the rules that apply (the system's secure generator by default).
    public var generatePassword: @Sendable (ServicePasswordRules) throws -> String

    public init(
        vault: Vault,
        environment: any UpgradeEnvironment,
        host: any ModificationHost,
        pollInterval: Duration = .milliseconds(500),
        deadline: Duration = .seconds(600),
        now: @escaping @Sendable () -> Date = { Date() },
        newRequestID: @escaping @Sendable () -> String = { UUID().uuidString.lowercased() },
        generatePassword: @escaping @Sendable (ServicePasswordRules) throws -> String = { try $0.generate() }
    ) {
        self.vault = vault
        self.environment = environment
        self.host = host
        self.pollInterval = pollInterval
        self.deadline = deadline
        self.now = now
        self.newRequestID = newRequestID
        self.generatePassword = generatePassword
    }

    /// The rules for a service's passwords: the one ``ServicePasswordRules`` decision (its
    /// manifest's requirements, else Apple's quirk rule for the domain, else Apple's format).
    public static func rules(manifest: AccountModificationManifest, service: String) -> ServicePasswordRules {
        ServicePasswordRules(requirements: manifest.passwordGenerationRequirements, domains: [service])
    }

    /// A password for the service under ``rules(manifest:service:)``.
    public static func generatePassword(manifest: AccountModificationManifest, service: String) throws -> String {
        try rules(manifest: manifest, service: service).generate()
    }

    // MARK: The pipeline

    /// Runs one plan: read the credential → read the manifest → generate → journal → run the
    /// protocol flow → apply the answer. Every plan passes the same fault points.
    public func run(
        _ plan: UpgradePlan,
        allowInteraction: Bool = true,
        cancelled: @escaping @Sendable () -> Bool = { false }
    ) async -> UpgradeResult {
        FaultPoint.start.hit()
        let service = plan.service

        // The account as the vault has it.
        let credentialID: CredentialID
        let user: String
        let oldPassword: String?
        switch plan {
        case .strongPassword(let id, _), .signIn(let id, _, _), .passkey(let id, _):
            let credential: Credential
            do {
                credential = try vault.credential(id)
            } catch {
                return .failed(reason: error.message, code: nil)
            }
            guard let password = credential.password else {
                if case .signIn = plan {
                    return .failed(reason: "this account already signs in with Keyhaven", code: nil)
                }
                return .failed(reason: "this account has no password (it signs in with Keyhaven)", code: nil)
            }
            credentialID = id
            user = credential.user
            oldPassword = password
        case .inApp(let request, let existing, _):
            credentialID = existing ?? CredentialID()
            user = request.user
            oldPassword = existing.flatMap { try? vault.credential($0).password }
        }

        // What the service offers, and the new password.
        let manifest: AccountModificationManifest
        let newPassword: String?
        var signInClientId = ""
        do {
            manifest = try await environment.manifest(for: service)
        } catch {
            return .failed(reason: Self.message(error), code: nil)
        }
        switch plan {
        case .strongPassword, .inApp:
            guard manifest.supportsStrongPasswordChange else {
                return .failed(reason: "\(service) does not offer automatic password changes", code: nil)
            }
            do {
                newPassword = try generatePassword(Self.rules(manifest: manifest, service: service))
            } catch {
                return .failed(reason: "no password can satisfy \(service)'s rules (\(Self.message(error)))", code: nil)
            }
        case .signIn(_, _, let authority):
            guard manifest.supportsUpgradeToSignIn, let signIn = manifest.signIn else {
                return .failed(reason: "\(service) does not offer upgrades to Sign in with Keyhaven", code: nil)
            }
            guard signIn.issuer == authority.issuer else {
                return .failed(
                    reason: "\(service) uses the provider \(signIn.issuer); sign in to it first (keyhaven idp login)",
                    code: nil
                )
            }
            guard !signIn.clientId.isEmpty else {
                return .failed(reason: "\(service)'s manifest names no sign-in client", code: nil)
            }
            // The only client the provider is asked to authorize: the one the manifest, read from
            // the service's own origin, names (security review High #1).
            signInClientId = signIn.clientId
            newPassword = nil
        case .passkey:
            guard manifest.supportsUpgradeToPasskey == true else {
                return .failed(reason: "\(service) does not offer upgrades to passkeys", code: nil)
            }
            newPassword = nil
        }
        FaultPoint.afterGenerate.hit()

        // The journal first: from here on no outcome loses a password.
        let requestId: String
        if case .inApp(_, _, let id) = plan { requestId = id } else { requestId = newRequestID() }
        let entry = UpgradeJournalEntry(
            credentialID: credentialID,
            kind: plan.journalKind,
            user: user,
            service: service,
            endpoint: manifest.endpoint,
            requestId: requestId,
            oldPassword: oldPassword,
            newPassword: newPassword,
            started: now()
        )
        do {
            try vault.beginUpgrade(entry)
        } catch {
            return .failed(reason: error.message, code: nil)
        }
        FaultPoint.afterJournal.hit()

        // The protocol.
        let flow: ModificationFlow
        var flowHost = host
        switch plan {
        case .strongPassword:
            flow = ModificationFlow(
                kind: .changePassword(newPassword: newPassword ?? ""),
                requestId: requestId,
                serviceIdentifier: service,
                existingCredential: PasswordCredential(user: user, password: oldPassword ?? ""),
                allowInteraction: allowInteraction
            )
        case .inApp(let request, _, _):
            flow = ModificationFlow(
                kind: .changePassword(newPassword: newPassword ?? ""),
                requestId: requestId,
                serviceIdentifier: service,
                existingCredential: nil,
                userInfo: request.userInfo,
                allowInteraction: true
            )
        case .passkey:
            flow = ModificationFlow(
                kind: .convertToPasskey,
                requestId: requestId,
                serviceIdentifier: service,
                existingCredential: PasswordCredential(user: user, password: oldPassword ?? ""),
                allowInteraction: allowInteraction
            )
            flowHost = PasskeyJournalingHost(base: host, vault: vault, entry: entry, service: service, now: now)
        case .signIn(_, _, let authority):
            flow = ModificationFlow(
                kind: .convertToSignIn(clientId: signInClientId),
                requestId: requestId,
                serviceIdentifier: service,
                existingCredential: PasswordCredential(user: user, password: oldPassword ?? ""),
                allowInteraction: allowInteraction
            )
            flowHost = JournalingHost(
                base: host,
                authority: authority,
                vault: vault,
                entry: entry,
                service: service,
                clientId: signInClientId
            )
        }
        let runner = ModificationRunner(
            transport: environment.transport(endpoint: entry.endpoint),
            host: flowHost,
            pollInterval: pollInterval,
            deadline: deadline
        )
        let outcome = await runner.run(flow, cancelled: cancelled)
        FaultPoint.afterResponse.hit()

        // The answer, applied with the journal's removal. A sign-in flow updated its entry with
        // the account it links to, a passkey flow with its passkey: apply the stored one.
        var latest = entry
        if newPassword == nil {
            do {
                latest = try vault.pendingUpgrades().first { $0.id == entry.id } ?? entry
            } catch {
                return .pending(reason: "the vault could not read the upgrade journal (\(Self.message(error)))")
            }
        }
        let result = apply(outcome, to: latest)
        FaultPoint.afterCommit.hit()
        return result
    }

    /// Applies a flow's outcome to the vault and the journal.
    func apply(_ outcome: ModificationFlow.Outcome, to entry: UpgradeJournalEntry) -> UpgradeResult {
        do {
            switch outcome {
            case .completed where entry.kind == .signIn:
                // The password leaves the record (it stays in the history); the record names the
                // provider account it now signs in with.
                let link = SignInLink(
                    issuer: entry.signInIssuer ?? "",
                    subject: entry.signInSubject ?? "",
                    linked: now()
                )
                try vault.completeUpgrade(entry, password: nil, signIn: link)
                return .upgraded(credential: entry.credentialID, substituted: false)
            case .completed(let updated):
                let password = updated?.password ?? entry.newPassword
                try vault.completeUpgrade(entry, password: password)
                return .upgraded(credential: entry.credentialID, substituted: password != entry.newPassword)
            case .passkeyLinked(let retired):
                guard entry.passkey != nil else {
                    // Nothing was journaled, so nothing was sent: the service cannot have linked a
                    // passkey of Keyhaven's. The password stays.
                    try vault.abandonUpgrade(entry)
                    return .failed(reason: "the service reported a passkey Keyhaven never made", code: .failed)
                }
                // The passkey joins the vault; a retired password leaves the record (to its history).
                try vault.completeUpgrade(entry, password: retired ? nil : entry.oldPassword)
                return .upgraded(credential: entry.credentialID, substituted: false)
            case .failed(let error):
                try vault.abandonUpgrade(entry)
                return .failed(reason: error.localizedFailureReason ?? Self.describe(error.code), code: error.code)
            case .indeterminate(let reason):
                return .pending(reason: reason)
            }
        } catch {
            return .pending(
                reason: "the vault could not record the result (\(Self.message(error))); it will be reconciled"
            )
        }
    }

    static func describe(_ code: ModificationErrorCode) -> String {
        switch code {
        case .failed: return "the service could not change the password"
        case .userCanceled: return "cancelled"
        case .userInteractionRequired: return "the service needs you to confirm on its page"
        }
    }

    /// A message for the person: a vault error's own text, else the error's description.
    static func message(_ error: any Error) -> String {
        if let error = error as? VaultError { return error.message }
        return String(describing: error)
    }

    // MARK: The three plans, by name

    /// Switches `credential`'s account on `service` to a passkey Keyhaven makes (the service's
    /// convert-to-passkey). The passkey is journaled before the service sees it; on success it
    /// joins the vault's passkeys and, when the service retired the password, the record's
    /// password moves to its history.
    public func upgradeToPasskey(
        _ credentialID: CredentialID,
        service: String,
        allowInteraction: Bool = true,
        cancelled: @escaping @Sendable () -> Bool = { false }
    ) async -> UpgradeResult {
        await run(.passkey(credentialID, service: service), allowInteraction: allowInteraction, cancelled: cancelled)
    }

    /// Changes `credential`'s password on `service` to a new strong one.
    public func upgradeToStrongPassword(
        _ credentialID: CredentialID,
        service: String,
        allowInteraction: Bool = true,
        cancelled: @escaping @Sendable () -> Bool = { false }
    ) async -> UpgradeResult {
        await run(
            .strongPassword(credentialID, service: service),
            allowInteraction: allowInteraction,
            cancelled: cancelled
        )
    }

    /// Switches `credential`'s account on `service` to "Sign in with Keyhaven": the service asks
    /// for an authorization with its state and nonce, `authority` obtains it (consent included),
    /// the service links the account and stops accepting its password. On success the vault
    /// record loses its password (kept in the history) and is marked as signing in with the
    /// provider.
    public func upgradeToSignIn(
        _ credentialID: CredentialID,
        service: String,
        authority: any SignInAuthority,
        allowInteraction: Bool = true,
        cancelled: @escaping @Sendable () -> Bool = { false }
    ) async -> UpgradeResult {
        await run(
            .signIn(credentialID, service: service, authority: authority),
            allowInteraction: allowInteraction,
            cancelled: cancelled
        )
    }

    /// An app's request (no password: the service identifies the account from `userInfo`). On
    /// success the matching credential is updated, or created when the vault has none.
    public func inAppRequest(_ request: InAppRequest) async -> InAppResult {
        let requestId = newRequestID()
        func failure(_ reason: String, _ code: ModificationErrorCode = .failed) -> InAppResult {
            InAppResult(
                requestId: requestId,
                status: .failed,
                error: ModificationError(code: code, localizedFailureReason: reason),
                credentialUpdated: false
            )
        }
        guard request.type == .changePassword else {
            return failure("upgrading to sign-in needs an identity provider (keyhaven idp login)")
        }
        let existing: CredentialID?
        do {
            // The origin the request names, exactly: a request for x.example.com never updates the
            // example.com credential.
            existing = try vault.credentials(forService: request.serviceIdentifier, accepting: .exact).credentials
                .first { $0.user == request.user }?.id
        } catch {
            return failure(error.message)
        }
        switch await run(.inApp(request, credential: existing, requestId: requestId)) {
        case .upgraded:
            return InAppResult(requestId: requestId, status: .completed, credentialUpdated: true)
        case .failed(let reason, let code):
            return failure(reason, code ?? .failed)
        case .pending(let reason):
            return failure("the service did not confirm (\(reason)); Keyhaven will ask it again")
        }
    }
}
