import ArgumentParser
import Foundation
import KeyhavenApp
import UpgradeHTTP
import Vault

/// Upgrades left pending by an earlier run (a crash, a lost answer).
///
/// Settling them contacts services, so it happens only in commands that do network work for
/// upgrades (`upgrade`, `serve`), never from read-only commands or under `--no-network`. Other vault
/// commands only mention that something is pending.
enum Reconciler {
    /// What ``notice(_:)`` says of `count` pending upgrades.
    static func pendingNote(_ count: Int) -> String {
        "keyhaven: note: \(count) upgrade(s) are unconfirmed; both passwords are kept. "
            + "`keyhaven upgrade --reconcile` asks the service."
    }

    /// Asks the services about every pending upgrade and reports each result. Returns how many are
    /// still unconfirmed; throws (exit 1) when the journal cannot be read.
    @discardableResult
    static func run(
        _ vault: Vault,
        environment: any UpgradeEnvironment = HTTPUpgradeEnvironment()
    ) async throws
        -> (pending: Int, left: Int)
    {
        let service = UpgradeService(vault: vault, environment: environment, host: TerminalHost())
        let reconciliations: [UpgradeService.Reconciliation]
        do {
            reconciliations = try await service.reconcile()
        } catch {
            throw Output.failure("the upgrade journal cannot be read: \(error.message)")
        }
        var left = 0
        for reconciliation in reconciliations {
            let entry = reconciliation.entry
            switch reconciliation.result {
            case .upgraded(_, let substituted):
                Output.error(
                    "keyhaven: finished the interrupted upgrade on \(entry.service): the new password is saved"
                        + (substituted ? " (the one the service chose)" : "")
                )
            case .failed(let reason, _):
                Output.error(
                    "keyhaven: the interrupted upgrade on \(entry.service) did not happen (\(reason)); the password is unchanged"
                )
            case .pending(let reason):
                left += 1
                Output.error(
                    "keyhaven: an upgrade on \(entry.service) is still unconfirmed (\(reason)); both passwords are kept "
                        + "and Keyhaven will ask again (`keyhaven show \(entry.credentialID.short) --reveal` lists them)"
                )
            }
        }
        return (reconciliations.count, left)
    }
}
