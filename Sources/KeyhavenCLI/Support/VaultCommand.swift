import ArgumentParser
import Foundation
import KeyhavenApp
import Vault

/// A vault subcommand: options, the global `--vault`, and opening.
protocol VaultCommand: AsyncParsableCommand {
    var options: VaultOptions { get }
    var root: Keyhaven { get }
}

extension VaultCommand {
    var vaultURL: URL { options.url(global: root.vault) }

    /// Unlocks the vault in a session of this process (``VaultOptions/openSession(global:)``).
    /// Contacts nothing: upgrades a previous run left pending are only mentioned (`upgrade` and
    /// `serve` settle them).
    func openSession() async throws -> KeyhavenSession {
        let session = try await options.openSession(global: root.vault)
        await LocalCredentialStore(session: session).noticePendingUpgrades()
        return session
    }

    /// The credentials the command works on: the running agent's unlocked session for this vault
    /// (typed requests over its socket; no master password is asked), else a session of this
    /// process (``openSession()``), asked the same typed requests. With `--password-stdin` the
    /// vault is always unlocked here: the person gave the master password for it.
    func openStore() async throws -> any CredentialStore {
        if !options.passwordStdin, let agent = try AgentClient.store(for: vaultURL) {
            await agent.noticePendingUpgrades()
            return agent
        }
        return LocalCredentialStore(session: try await openSession())
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

/// Runs `body` with `session`'s vault for work that reads and writes it between network calls
/// (upgrades, the local API, a sign-in): as in the web app, that work runs as a task preferring
/// the session's executor, so its synchronous vault calls take the session's thread. The session
/// locks (and closes the vault) when `body` ends.
func withUnlockedVault<T>(
    _ session: KeyhavenSession,
    _ body: (Vault) async throws -> T
) async throws -> T {
    let vault = try await session.withVault { $0 }
    do {
        let result = try await withTaskExecutorPreference(session.taskExecutor) { try await body(vault) }
        await session.lock()
        return result
    } catch {
        await session.lock()
        throw error
    }
}
