import Foundation
import KeyhavenHTTP
import KeyhavenUpgrade
import Vault

/// Settles upgrades left pending by an earlier run (a crash, a lost answer) when Keyhaven starts.
enum Reconciler {
    static func run(_ vault: Vault) async {
        guard let pending = try? vault.pendingUpgrades(), !pending.isEmpty else { return }
        let coordinator = UpgradeCoordinator(vault: vault, environment: HTTPUpgradeEnvironment(), host: TerminalHost())
        for reconciliation in await coordinator.reconcile() {
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
                Output.error(
                    "keyhaven: an upgrade on \(entry.service) is still unconfirmed (\(reason)); both passwords are kept "
                        + "and Keyhaven will ask again (`keyhaven show \(entry.credentialID.short) --reveal` lists them)"
                )
            }
        }
    }
}
