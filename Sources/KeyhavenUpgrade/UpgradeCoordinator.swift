public import AccountModification
import Foundation
import PasswordRules
public import Vault

/// What Keyhaven needs from the outside world to upgrade accounts (HTTP in production).
public protocol UpgradeEnvironment: Sendable {
    /// The service's manifest; throws a message for the person.
    func manifest(for service: String) async throws -> AccountModificationManifest
    /// A transport to a protocol endpoint.
    func transport(endpoint: String) -> any ModificationTransport
    /// Whether an error from `status` means the service never recorded the request.
    func isUnknownRequest(_ error: any Error) -> Bool
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

/// Upgrades accounts through the account-modification protocol without ever losing a password:
/// the generated password is journaled (and synced) before the service is asked; the answer is
/// applied in one transaction with the journal's removal; an unanswered request stays journaled and
/// is reconciled at the next start by asking the service.
public struct UpgradeCoordinator: Sendable {
    public let vault: Vault
    public let environment: any UpgradeEnvironment
    public let host: any ModificationHost
    public var pollInterval: Duration
    public var deadline: Duration

    public init(
        vault: Vault,
        environment: any UpgradeEnvironment,
        host: any ModificationHost,
        pollInterval: Duration = .milliseconds(500),
        deadline: Duration = .seconds(600)
    ) {
        self.vault = vault
        self.environment = environment
        self.host = host
        self.pollInterval = pollInterval
        self.deadline = deadline
    }

    /// A password for the service: its manifest's requirements, else Apple's quirk rule for the
    /// domain, else Apple's format.
    public static func generatePassword(manifest: AccountModificationManifest, service: String) throws -> String {
        try ServicePasswordRules(requirements: manifest.passwordGenerationRequirements, domains: [service]).generate()
    }

    /// Changes `credential`'s password on `service` to a new strong one.
    public func upgradeToStrongPassword(
        _ credentialID: CredentialID,
        service: String,
        allowInteraction: Bool = true,
        cancelled: @escaping @Sendable () -> Bool = { false }
    ) async -> UpgradeResult {
        FaultPoint.start.hit()
        let credential: Credential
        do {
            credential = try vault.credential(credentialID)
        } catch {
            return .failed(reason: error.message, code: nil)
        }
        guard let oldPassword = credential.password else {
            return .failed(reason: "this account has no password (it signs in with Keyhaven)", code: nil)
        }
        let manifest: AccountModificationManifest
        let newPassword: String
        do {
            manifest = try await environment.manifest(for: service)
            guard manifest.supportsStrongPasswordChange else {
                return .failed(reason: "\(service) does not offer automatic password changes", code: nil)
            }
            newPassword = try Self.generatePassword(manifest: manifest, service: service)
        } catch {
            return .failed(reason: "\(error)", code: nil)
        }
        FaultPoint.afterGenerate.hit()
        let entry = UpgradeJournalEntry(
            credentialID: credentialID,
            kind: .strongPassword,
            user: credential.user,
            service: service,
            endpoint: manifest.endpoint,
            requestId: UUID().uuidString.lowercased(),
            oldPassword: oldPassword,
            newPassword: newPassword,
            started: Date()
        )
        do {
            try vault.beginUpgrade(entry)
        } catch {
            return .failed(reason: error.message, code: nil)
        }
        FaultPoint.afterJournal.hit()
        let flow = ModificationFlow(
            kind: .changePassword(newPassword: newPassword),
            requestId: entry.requestId,
            serviceIdentifier: service,
            existingCredential: PasswordCredential(user: credential.user, password: oldPassword),
            allowInteraction: allowInteraction
        )
        let outcome = await runner(entry.endpoint).run(flow, cancelled: cancelled)
        FaultPoint.afterResponse.hit()
        let result = apply(outcome, to: entry)
        FaultPoint.afterCommit.hit()
        return result
    }

    func runner(_ endpoint: String) -> ModificationRunner {
        ModificationRunner(
            transport: environment.transport(endpoint: endpoint),
            host: host,
            pollInterval: pollInterval,
            deadline: deadline
        )
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
                    linked: Date()
                )
                try vault.completeUpgrade(entry, password: nil, signIn: link)
                return .upgraded(credential: entry.credentialID, substituted: false)
            case .completed(let updated):
                let password = updated?.password ?? entry.newPassword
                try vault.completeUpgrade(entry, password: password)
                return .upgraded(credential: entry.credentialID, substituted: password != entry.newPassword)
            case .failed(let error):
                try vault.abandonUpgrade(entry)
                return .failed(reason: error.localizedFailureReason ?? Self.describe(error.code), code: error.code)
            case .indeterminate(let reason):
                return .pending(reason: reason)
            }
        } catch {
            return .pending(reason: "the vault could not record the result (\(error)); it will be reconciled")
        }
    }

    static func describe(_ code: ModificationErrorCode) -> String {
        switch code {
        case .failed: return "the service could not change the password"
        case .userCanceled: return "cancelled"
        case .userInteractionRequired: return "the service needs you to confirm on its page"
        }
    }

    // MARK: In-app requests

    /// An app's request (no password: the service identifies the account from `userInfo`). On
    /// success the matching credential is updated, or created when the vault has none.
    public func inAppRequest(_ request: InAppRequest) async -> InAppResult {
        let requestId = UUID().uuidString.lowercased()
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
        let existing = (try? vault.credentials(forService: request.serviceIdentifier).credentials)?
            .first { $0.user == request.user }
        let manifest: AccountModificationManifest
        let newPassword: String
        do {
            manifest = try await environment.manifest(for: request.serviceIdentifier)
            guard manifest.supportsStrongPasswordChange else {
                return failure("\(request.serviceIdentifier) does not offer automatic password changes")
            }
            newPassword = try Self.generatePassword(manifest: manifest, service: request.serviceIdentifier)
        } catch {
            return failure("\(error)")
        }
        let entry = UpgradeJournalEntry(
            credentialID: existing?.id ?? CredentialID(),
            kind: .strongPassword,
            user: request.user,
            service: request.serviceIdentifier,
            endpoint: manifest.endpoint,
            requestId: requestId,
            oldPassword: existing?.password,
            newPassword: newPassword,
            started: Date()
        )
        do {
            try vault.beginUpgrade(entry)
        } catch {
            return failure(error.message)
        }
        let flow = ModificationFlow(
            kind: .changePassword(newPassword: newPassword),
            requestId: requestId,
            serviceIdentifier: request.serviceIdentifier,
            existingCredential: nil,
            userInfo: request.userInfo,
            allowInteraction: true
        )
        let outcome = await runner(entry.endpoint).run(flow)
        switch apply(outcome, to: entry) {
        case .upgraded:
            return InAppResult(requestId: requestId, status: .completed, credentialUpdated: true)
        case .failed(let reason, let code):
            return failure(reason, code ?? .failed)
        case .pending(let reason):
            return failure("the service did not confirm (\(reason)); Keyhaven will ask it again")
        }
    }

    // MARK: Reconciliation

    /// What happened to one pending upgrade when reconciling.
    public struct Reconciliation: Sendable, Equatable {
        public var entry: UpgradeJournalEntry
        public var result: UpgradeResult
    }

    /// Asks the service about every pending upgrade and applies what it says: completed → the new
    /// password; failed or never received → the old one stays; still open → cancelled, then as it
    /// answers; unreachable → still pending (both passwords kept).
    public func reconcile() async -> [Reconciliation] {
        let entries: [UpgradeJournalEntry]
        do {
            entries = try vault.pendingUpgrades()
        } catch {
            return []
        }
        var results: [Reconciliation] = []
        for entry in entries {
            let transport = environment.transport(endpoint: entry.endpoint)
            var response: ModificationResponse
            do {
                response = try await transport.status(requestId: entry.requestId)
                if !response.isFinal && response.status != .userInteractionRequired {
                    response = try await transport.cancel(requestId: entry.requestId)
                }
            } catch  where environment.isUnknownRequest(error) {
                // The service has no record of the request: most likely it never arrived, so the old
                // password stays. A service that keeps its records only in memory may also have
                // restarted after applying it: keep the generated password in the history so it is
                // never lost.
                do {
                    try vault.abandonUpgrade(entry, keepingNewPassword: true)
                    results.append(
                        Reconciliation(
                            entry: entry,
                            result: .failed(
                                reason:
                                    "the service has no record of the request; if the old password no longer works, "
                                    + "the generated one is in the history",
                                code: nil
                            )
                        )
                    )
                } catch {
                    results.append(Reconciliation(entry: entry, result: .pending(reason: error.message)))
                }
                continue
            } catch {
                results.append(Reconciliation(entry: entry, result: .pending(reason: "\(error)")))
                continue
            }
            let outcome: ModificationFlow.Outcome
            switch response.status {
            case .completed:
                outcome = .completed(updatedCredential: response.updatedCredential)
            case .failed, .userInteractionRequired:
                outcome = .failed(response.error ?? ModificationError(code: .failed))
            default:
                outcome = .indeterminate(reason: "the service did not settle the request")
            }
            results.append(Reconciliation(entry: entry, result: apply(outcome, to: entry)))
        }
        return results
    }
}
