import ArgumentParser
import Foundation
import Vault

/// A vault subcommand: options, the global `--vault`, and opening.
protocol VaultCommand: AsyncParsableCommand {
    var options: VaultOptions { get }
    var root: Keyhaven { get }
}

extension VaultCommand {
    var vaultURL: URL { options.url(global: root.vault) }

    /// Opens the vault. Contacts nothing: upgrades a previous run left pending are only mentioned
    /// (`upgrade` and `serve` settle them).
    func openVault() async throws -> Vault {
        let vault = try options.open(global: root.vault)
        Reconciler.notice(vault)
        return vault
    }

    /// The credentials the command works on: the running agent's unlocked session for this vault
    /// (typed requests over its socket; no master password is asked), else the vault opened here
    /// (``openVault()``). With `--password-stdin` the vault is always opened here: the person gave
    /// the master password for it.
    func openStore() async throws -> any CredentialStore {
        if !options.passwordStdin, let agent = try AgentClient.store(for: vaultURL) {
            agent.noticePendingUpgrades()
            return agent
        }
        return LocalCredentialStore(vault: try await openVault())
    }

    /// Runs `body`, reporting vault errors with their exit code.
    func reporting<T>(_ body: () throws -> T) throws -> T {
        try Output.reporting(body)
    }

    /// ``reporting(_:)`` for asynchronous work.
    func reportingAsync<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch {
            throw Output.failure(from: error, Output.vaultFailure)
        }
    }
}
