import ArgumentParser
import Foundation
import Passkeys
import Vault
import _KeyhavenSupport

extension Keyhaven {
    struct Passkey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "passkey",
            abstract: "The vault's passkeys: list, show, remove.",
            discussion: """
                Passkeys are kept sealed in the vault like passwords (their sites and user handles too). \
                A passkey is named by its id (the first characters, at least 4, of the id `list` prints). \
                The private key is never printed; `keyhaven export --format cxf` carries it to another \
                manager.

                Examples:
                  keyhaven passkey list
                  keyhaven passkey list --site github.com --json
                  keyhaven passkey show 3f2a9c1e
                  keyhaven passkey rm 3f2a9c1e
                """,
            subcommands: [List.self, Show.self, Remove.self],
            defaultSubcommand: List.self
        )

        @ParentCommand var root: Keyhaven

        /// One passkey as `list --json` and `show --json` print it (no private key).
        struct Summary: Encodable {
            var id: String
            var rpId: String
            var userName: String
            var userDisplayName: String
            var userHandle: String
            var credentialId: String
            var algorithm: String
            var signCount: UInt32
            var backupEligible: Bool
            var backedUp: Bool
            var created: Date
            var lastUsed: Date?
            /// Hidden by the site's signals: kept, not offered.
            var hidden: Bool

            init(_ passkey: PasskeyCredential, id: String) {
                self.id = id
                rpId = passkey.rpID
                userName = passkey.userName
                userDisplayName = passkey.userDisplayName
                userHandle = Base64URL.encode(passkey.userHandle)
                credentialId = Base64URL.encode(passkey.credentialID)
                algorithm =
                    switch COSEKey.Algorithm(rawValue: passkey.algorithm) {
                    case .es256: "ES256"
                    case .eddsa: "EdDSA"
                    case nil: String(passkey.algorithm)
                    }
                signCount = passkey.signCount
                backupEligible = passkey.backupEligible
                backedUp = passkey.backedUp
                created = passkey.created
                lastUsed = passkey.lastUsed
                hidden = passkey.hidden
            }
        }

        /// The passkey whose id starts with `prefix` (4+ characters), or a failure saying why not.
        static func find(_ prefix: String, in vault: Vault) throws -> (String, PasskeyCredential) {
            guard prefix.count >= 4 else {
                throw Output.failure("give at least 4 characters of the passkey's id", exitCode: 64)
            }
            let all = try Output.reporting { try vault.passkeys() }.map { (vault.passkeyID($0), $0) }
            let matches = all.filter { $0.0.hasPrefix(prefix.lowercased()) }
            guard let first = matches.first else {
                throw Output.failure("no passkey with id \(prefix): `keyhaven passkey list` shows them")
            }
            guard matches.count == 1 else {
                throw Output.failure("\(prefix) names \(matches.count) passkeys; give more of the id")
            }
            return first
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "List passkeys (all, or one site's).")
            @OptionGroup var options: VaultOptions
            @ParentCommand var passkey: Passkey
            @Option(
                name: .long,
                help: ArgumentHelp("Only this relying party (its RP ID, e.g. github.com).", valueName: "site")
            )
            var site: String?
            @Flag(name: .long, help: "Print JSON: [{id, rpId, userName, credentialId, algorithm, signCount, …}].")
            var json = false

            func run() async throws {
                try await withUnlockedVault(try await options.openSession(global: passkey.root.vault)) { vault in
                    let passkeys = try Output.reporting { try vault.passkeys(rpID: site?.lowercased()) }
                    let summaries = passkeys.map { Summary($0, id: vault.passkeyID($0)) }
                    if json {
                        print(try Output.json(summaries))
                        return
                    }
                    guard !summaries.isEmpty else {
                        print(site.map { "No passkeys for \($0)." } ?? "No passkeys yet.")
                        return
                    }
                    let formatter = ISO8601DateFormatter()
                    formatter.formatOptions = [.withFullDate]
                    for summary in summaries {
                        let user = summary.userName.isEmpty ? "(no user name)" : summary.userName
                        let used = summary.lastUsed.map { "last used " + formatter.string(from: $0) } ?? "never used"
                        let hidden = summary.hidden ? "  (hidden: the site no longer knows it)" : ""
                        print(
                            "\(summary.id.prefix(8))  \(summary.rpId)  \(user)  \(summary.algorithm)  created \(formatter.string(from: summary.created)), \(used)\(hidden)"
                        )
                    }
                }
            }
        }

        struct Show: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Show one passkey (never its private key).")
            @OptionGroup var options: VaultOptions
            @ParentCommand var passkey: Passkey
            @Argument(help: "The passkey's id (its first characters).") var id: String
            @Flag(name: .long, help: "Print JSON.") var json = false

            func run() async throws {
                try await withUnlockedVault(try await options.openSession(global: passkey.root.vault)) { vault in
                    let (rowID, found) = try Passkey.find(id, in: vault)
                    let summary = Summary(found, id: rowID)
                    if json {
                        print(try Output.json(summary))
                        return
                    }
                    let formatter = ISO8601DateFormatter()
                    print("id:            \(summary.id)")
                    print("site (RP ID):  \(summary.rpId)")
                    print(
                        "user:          \(summary.userName)\(summary.userDisplayName.isEmpty ? "" : " (\(summary.userDisplayName))")"
                    )
                    print("user handle:   \(summary.userHandle)")
                    print("credential id: \(summary.credentialId)")
                    print("algorithm:     \(summary.algorithm)")
                    print("sign count:    \(summary.signCount)")
                    print(
                        "backed up:     \(summary.backedUp ? "yes" : "no") (eligible: \(summary.backupEligible ? "yes" : "no"))"
                    )
                    print("created:       \(formatter.string(from: summary.created))")
                    print("last used:     \(summary.lastUsed.map { formatter.string(from: $0) } ?? "never")")
                    if summary.hidden {
                        print("hidden:        yes — the site said it no longer knows this passkey; kept, not offered")
                    }
                }
            }
        }

        struct Remove: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "rm",
                abstract: "Remove a passkey from the vault (the site keeps its copy of the public key)."
            )
            @OptionGroup var options: VaultOptions
            @ParentCommand var passkey: Passkey
            @Argument(help: "The passkey's id (its first characters).") var id: String

            func run() async throws {
                try await withUnlockedVault(try await options.openSession(global: passkey.root.vault)) { vault in
                    let (rowID, found) = try Passkey.find(id, in: vault)
                    _ = try Output.reporting { try vault.removePasskey(id: rowID) }
                    print(
                        "Removed the passkey for \(found.userName.isEmpty ? found.rpID : "\(found.userName) on \(found.rpID)"); "
                            + "sign in to \(found.rpID) another way and remove it there too."
                    )
                }
            }
        }
    }
}
