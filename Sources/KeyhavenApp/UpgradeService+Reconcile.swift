import AccountModification
public import Vault

extension UpgradeService {
    /// What happened to one pending upgrade when reconciling.
    public struct Reconciliation: Sendable, Equatable {
        public var entry: UpgradeJournalEntry
        public var result: UpgradeResult
    }

    /// Asks the service about every pending upgrade and applies what it says: completed → the new
    /// password; failed or never received → the old one stays; still open → cancelled, then as it
    /// answers; unreachable → still pending (both passwords kept).
    ///
    /// Contacts services: callers run it only when the person asked for network work (never from a
    /// read-only command, never under `--no-network`). Throws when the journal cannot be read — a
    /// damaged journal is never reported as "nothing pending".
    public func reconcile() async throws(VaultError) -> [Reconciliation] {
        let entries = try vault.pendingUpgrades()
        var results: [Reconciliation] = []
        for entry in entries {
            results.append(Reconciliation(entry: entry, result: await reconcile(entry)))
        }
        return results
    }

    func reconcile(_ entry: UpgradeJournalEntry) async -> UpgradeResult {
        let transport = environment.transport(endpoint: entry.endpoint)
        var response: ModificationResponse
        do {
            response = try await transport.status(requestId: entry.requestId)
            if !response.isSettled {
                response = try await transport.cancel(requestId: entry.requestId)
            }
        } catch let error as ModificationTransportError where error.code == .unknownRequest {
            // The service has no record of the request: most likely it never arrived, so the old
            // password stays. A service that keeps its records only in memory may also have
            // restarted after applying it: keep the generated password in the history so it is
            // never lost.
            do {
                try vault.abandonUpgrade(entry, keepingNewPassword: true)
                return .failed(
                    reason: "the service has no record of the request; if the old password no longer works, "
                        + "the generated one is in the history",
                    code: nil
                )
            } catch {
                return .pending(reason: error.message)
            }
        } catch {
            return .pending(reason: Self.message(error))
        }
        let outcome: ModificationFlow.Outcome
        switch response.status {
        case .completed where entry.kind == .passkey:
            outcome = .passkeyLinked(passwordRetired: response.passwordRetired ?? false)
        case .completed:
            outcome = .completed(updatedCredential: response.updatedCredential)
        case .failed, .userInteractionRequired:
            outcome = .failed(response.error ?? ModificationError(code: .failed))
        default:
            outcome = .indeterminate(reason: "the service did not settle the request")
        }
        return apply(outcome, to: entry)
    }
}
