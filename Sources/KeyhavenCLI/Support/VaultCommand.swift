import ArgumentParser
import Foundation
import Vault

/// A vault subcommand: options, the global `--vault`, and opening.
protocol VaultCommand: AsyncParsableCommand, ParsableCommandWithVault {
    var options: VaultOptions { get }
    var root: Keyhaven { get }
}

extension VaultCommand {
    var vaultURL: URL { options.url(global: root.vault) }

    /// A command the agent may run for the CLI (``AgentClient/forwarded``), unless the password
    /// is to come from standard input.
    var forwardable: Bool {
        AgentClient.forwarded.contains(Self._commandName) && !options.passwordStdin
    }
    var vaultFileURL: URL { vaultURL }
    static var commandName: String { _commandName }

    /// Opens the vault. Contacts nothing: upgrades a previous run left pending are only mentioned
    /// (`upgrade` and `serve` settle them).
    func openVault() async throws -> Vault {
        let vault = try options.open(global: root.vault)
        Reconciler.notice(vault)
        return vault
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
