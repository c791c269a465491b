import AccountModification
import Foundation
import KeyhavenApp
import Synchronization
import Vault
import _KeyhavenSupport

/// One one-tap upgrade started from the app: its progress, the service's page when it asks the
/// person to confirm, a cancel flag, and the result.
final class UpgradeRun: Sendable {
    enum Phase: String, Sendable {
        case running
        /// The service showed a page for the person (a step-up).
        case waitingForPerson = "waiting-for-person"
        case done
    }

    struct Snapshot: Sendable, Encodable {
        var id: String
        /// `strong-password` or `passkey`.
        var target: String
        var credential: String
        var service: String
        var user: String
        var phase: String
        var interfaceURL: String?
        var cancelRequested: Bool
        /// `upgraded`, `failed` or `pending` once done.
        var outcome: String?
        var message: String?
    }

    let id: String
    let credential: CredentialID
    let service: String
    let user: String
    let toPasskey: Bool
    let state: Mutex<Snapshot>

    init(id: String, credential: CredentialID, service: String, user: String, toPasskey: Bool = false) {
        self.id = id
        self.credential = credential
        self.service = service
        self.user = user
        self.toPasskey = toPasskey
        state = Mutex(
            Snapshot(
                id: id,
                target: toPasskey ? "passkey" : "strong-password",
                credential: credential.rawValue,
                service: service,
                user: user,
                phase: Phase.running.rawValue,
                cancelRequested: false
            )
        )
    }

    var snapshot: Snapshot { state.withLock { $0 } }
    var isCancelled: Bool { state.withLock { $0.cancelRequested } }

    func cancel() { state.withLock { $0.cancelRequested = true } }

    func finish(_ result: UpgradeResult) {
        state.withLock { snapshot in
            snapshot.phase = Phase.done.rawValue
            switch result {
            case .upgraded where toPasskey:
                snapshot.outcome = "upgraded"
                snapshot.message =
                    "Upgraded: the account signs in with a passkey kept in Keyhaven; if the service retired the password, it is kept in the history."
            case .upgraded(_, let substituted):
                snapshot.outcome = "upgraded"
                snapshot.message =
                    substituted
                    ? "Upgraded: the service chose the new password itself; the vault holds it and keeps the old one in the history."
                    : "Upgraded: the account has a new strong password; the old one is kept in the history."
            case .failed(let reason, _):
                snapshot.outcome = "failed"
                snapshot.message =
                    snapshot.cancelRequested
                    ? "Cancelled: nothing changed; the account keeps its password."
                    : "Not upgraded: \(reason). Nothing changed; the account keeps its password."
            case .pending(let reason):
                snapshot.outcome = "pending"
                snapshot.message =
                    "Not confirmed yet: \(reason). Keyhaven keeps both passwords and asks the service again on the next upgrade."
            }
        }
    }
}

/// The upgrade runs the app knows (kept for the process's life; a run holds no secret).
final class UpgradeRuns: Sendable {
    let runs = Mutex<[String: UpgradeRun]>([:])

    func add(_ run: UpgradeRun) { runs.withLock { $0[run.id] = run } }
    func run(_ id: String) -> UpgradeRun? { runs.withLock { $0[id] } }
    /// Runs not finished, for an item's page.
    func active(for credential: CredentialID) -> [UpgradeRun] {
        runs.withLock { runs in
            runs.values.filter { $0.credential == credential && $0.snapshot.phase != UpgradeRun.Phase.done.rawValue }
        }
    }
}

/// The service's pages during an upgrade: shown to the person as a link on the progress page.
struct WebUpgradeHost: ModificationHost {
    let run: UpgradeRun

    func presentInterface(_ url: String) async {
        run.state.withLock {
            $0.interfaceURL = url
            $0.phase = UpgradeRun.Phase.waitingForPerson.rawValue
        }
    }

    func obtainSignInAuthorization(_ request: SignInRequest) async -> SignInAuthorization {
        SignInAuthorization(error: "sign_in_not_configured")
    }
}

extension WebApp {
    /// Starts a one-tap upgrade of `credential` to a strong password (or a passkey) on its service;
    /// returns the run at once (the upgrade goes on in the background, on a thread of its own).
    func startUpgrade(_ credential: Credential, vault: Vault, toPasskey: Bool = false) throws -> UpgradeRun {
        guard credential.password != nil else {
            throw WebAppError(.badRequest, "This account has no password to upgrade.")
        }
        guard
            let service = credential.services.lazy.compactMap({ ServiceOrigin(service: $0.identifier)?.serialized })
                .first
        else {
            throw WebAppError(.badRequest, "This credential names no website to upgrade on.")
        }
        // One upgrade per account at a time: a second click shows the one already running.
        if let running = runs.active(for: credential.id).first { return running }
        let run = UpgradeRun(
            id: newID(),
            credential: credential.id,
            service: service,
            user: credential.user,
            toPasskey: toPasskey
        )
        runs.add(run)
        let upgrades = UpgradeService(
            vault: vault,
            environment: services.upgradeEnvironment,
            host: WebUpgradeHost(run: run),
            deadline: configuration.upgradeDeadline,
            now: configuration.now
        )
        // The upgrade reads and writes the vault synchronously: on the session's thread (the one rule
        // for blocking work), never the cooperative pool.
        Task(executorPreference: session.taskExecutor) {
            // Interrupted upgrades are settled first, as `keyhaven upgrade` does.
            _ = try? await upgrades.reconcile()
            let result =
                toPasskey
                ? await upgrades.upgradeToPasskey(credential.id, service: service) { run.isCancelled }
                : await upgrades.upgradeToStrongPassword(credential.id, service: service) { run.isCancelled }
            run.finish(result)
            try? await self.vaultChanged()
        }
        return run
    }
}
