public import ArgumentParser
import Foundation

/// The `keyhaven` command: account security for everyone.
public struct Keyhaven: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "keyhaven",
        abstract: "Account security you can host yourself: audit, generate and upgrade passwords.",
        discussion: """
            Keyhaven finds reused, easily guessed and breached passwords and fixes them: a new strong \
            password, or a switch to "Sign in with Keyhaven", wherever the service supports it.
            """,
        version: KeyhavenVersion.current,
        groupedSubcommands: [
            CommandGroup(name: "Passwords", subcommands: [Generate.self, Rules.self, Strength.self, Breach.self]),
            CommandGroup(
                name: "Vault",
                subcommands: [
                    Init.self, Add.self, List.self, Show.self, Copy.self, OneTimeCode.self, Search.self, Edit.self,
                    Remove.self, Restore.self, Passkey.self, Import.self, Export.self, ChangeMasterPassword.self,
                    ClearClipboard.self,
                ]
            ),
            CommandGroup(name: "Security", subcommands: [Audit.self, Upgrade.self, Serve.self, Demo.self]),
            CommandGroup(
                name: "Agent and AutoFill",
                subcommands: [UI.self, Agent.self, Unlock.self, Lock.self, Browser.self, BrowserHost.self]
            ),
            CommandGroup(name: "Sign in with Keyhaven", subcommands: [Idp.self]),
            CommandGroup(name: "Sync", subcommands: [Sync.self, Device.self]),
        ]
    )

    @Option(
        name: .long,
        help: ArgumentHelp("The vault file for vault commands (see `keyhaven help init`).", valueName: "path")
    )
    var vault: String?

    public init() {}
}

/// The version printed by `keyhaven --version`.
public enum KeyhavenVersion {
    public static let current = "0.1.0"
}

extension Keyhaven {
    /// Parses and runs `arguments` in-process with `io`'s environment and standard input, writing
    /// to `io`, as the `keyhaven` executable would (a failure is printed once to `io`'s standard
    /// error, help and `--version` to its standard output); returns the exit status.
    ///
    /// The command runs in the caller's process: commands that serve (`serve`, `idp serve`) or
    /// install signal handlers (`upgrade`) are meant for the executable.
    public static func run(_ arguments: [String], io: CommandIO) async -> Int32 {
        await CommandIO.$current.withValue(io) {
            do {
                try await parseAndRun(arguments)
                return 0
            } catch let failure as CommandFailure {
                Output.error("keyhaven: error: \(failure.message)")
                return failure.exitCode
            } catch {
                let status = exitCode(for: error)
                let message = fullMessage(for: error)
                if status == .success {
                    if !message.isEmpty { print(message) }
                } else {
                    Output.error(message)
                }
                return status.rawValue
            }
        }
    }

    /// The asynchronous entry point, for the executable's `main.swift`: parses, runs, and prints a
    /// failure once (`keyhaven: error: …`) with its exit status.
    public static func runMain(_ arguments: [String]? = nil) async {
        do {
            try await parseAndRun(arguments)
        } catch let failure as CommandFailure {
            Output.error("keyhaven: error: \(failure.message)")
            Self.exit(withError: ExitCode(failure.exitCode))
        } catch {
            Self.exit(withError: error)
        }
    }

    /// Parses `arguments` (nil: the process's) and runs the command they name.
    static func parseAndRun(_ arguments: [String]?) async throws {
        var command = try parseAsRoot(arguments)
        if var asynchronous = command as? any AsyncParsableCommand {
            try await asynchronous.run()
        } else {
            try command.run()
        }
    }
}
