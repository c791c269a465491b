public import ArgumentParser

/// The `keyhaven` command: account security for everyone.
@available(macOS 10.15, macCatalyst 13, iOS 13, tvOS 13, watchOS 6, *)
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
                    Init.self, Add.self, List.self, Show.self, Search.self, Edit.self, Remove.self, Restore.self,
                    Import.self, Export.self, ChangeMasterPassword.self,
                ]
            ),
            CommandGroup(name: "Security", subcommands: [Audit.self, Upgrade.self, Serve.self, Demo.self]),
            CommandGroup(name: "Sign in with Keyhaven", subcommands: [Idp.self]),
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

@available(macOS 10.15, macCatalyst 13, iOS 13, tvOS 13, watchOS 6, *)
extension Keyhaven {
    /// The asynchronous entry point, for the executable's `main.swift`.
    public static func runMain() async {
        await main()
    }
}
