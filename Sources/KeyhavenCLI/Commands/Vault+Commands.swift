import ArgumentParser
import Foundation
import KeyhavenApp
import PasswordRules
import Vault

extension Keyhaven {
    struct Init: VaultCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create an encrypted vault.",
            discussion: """
                The vault is an SQLite file in which every secret (password, user name, URL, note, TOTP \
                secret) is sealed with AES-256-GCM under a random vault key; the vault key is wrapped \
                by a key derived from your master password with scrypt, calibrated on this machine \
                (at least N=2^17, r=8, p=1, the OWASP minimum; lower only with --insecure-kdf). The \
                master password must score at least 3 of 4 with zxcvbn (see `keyhaven strength`) \
                unless --force-weak-password. Keyhaven never overwrites an existing file.

                Examples:
                  keyhaven init
                  keyhaven --vault ~/work.sqlite init
                  keyhaven generate --words 6    # a master password to remember
                """
        )
        @OptionGroup var options: VaultOptions
        @ParentCommand var root: Keyhaven
        @OptionGroup var newPassword: NewMasterPasswordOptions

        func run() async throws {
            let url = vaultURL
            if FileManager.default.fileExists(atPath: url.path) {
                throw Output.failure("\(url.path) already exists; Keyhaven never overwrites a file")
            }
            let chosen = try newPassword.kdf(insecure: options.insecureKDF)
            let password = try options.masterPassword(confirm: true)
            try newPassword.check(password)
            let kdf = chosen ?? .calibrated()
            let session = KeyhavenSession(.init(vaultURL: url, allowInsecureKDF: options.insecureKDF))
            try await reportingAsync { try await session.create(masterPassword: password, kdf: kdf) }
            await session.lock()
            print("Created vault \(url.path) (scrypt N=2^\(kdf.logN), r=\(kdf.r), p=\(kdf.p)).")
        }
    }

    struct Add: VaultCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a credential.",
            discussion: """
                Without --password, Keyhaven asks for one on the terminal, or generates a strong one \
                (following the site's published password rules) when there is no terminal or with \
                --generate, and prints it. The service may be given as the argument or with --service \
                (repeatable, for scripts); both together add every one.

                Examples:
                  keyhaven add github.com --user alice
                  keyhaven add github.com --user alice --generate
                  keyhaven add --service example.org --service app.example.org --user bob --json
                """
        )
        @OptionGroup var options: VaultOptions
        @ParentCommand var root: Keyhaven

        @Argument(help: ArgumentHelp("The site: a domain or URL.", valueName: "service"))
        var site: String?
        @Option(
            name: .customLong("service"),
            help: ArgumentHelp("A domain or URL; repeat for several.", valueName: "service")
        )
        var serviceOptions: [String] = []

        /// The argument first, then every --service.
        var service: [String] { (site.map { [$0] } ?? []) + serviceOptions }
        @Option(name: .long, help: "The user name or e-mail.") var user: String = ""
        @Option(name: .long, help: "The password (visible to other local users while the command runs).")
        var password: String?
        @Flag(name: .long, help: "Generate a strong password.") var generate = false
        @Option(name: .long, help: "A title (default: the first service).") var title: String = ""
        @Option(name: .long, help: "Notes.") var notes: String = ""
        @Option(name: .long, help: "A TOTP secret (base32) or otpauth:// URI.") var totp: String?
        @Option(name: .long, help: "A folder path such as Work/VPN.") var folder: String?
        @Flag(name: .long, help: "Print the new credential as JSON.") var json = false

        func validate() throws {
            if service.isEmpty {
                throw ValidationError(
                    "name the site: `keyhaven add github.com --user alice` (or --service, repeatable)"
                )
            }
            try ServiceArgument.validate(service)
            if password != nil && generate {
                throw ValidationError("use either --password or --generate")
            }
        }

        func run() async throws {
            let store = try await openStore()
            var secret = password
            var generated = false
            if secret == nil && !generate && isatty(0) == 1 && !options.passwordStdin {
                secret = try? Terminal.askSecret("Password for \(service[0]) (empty to generate): ")
            }
            if secret == nil || secret == "" {
                secret = try ServicePasswordRules(requirements: nil, domains: service).generate()
                generated = true
            }
            let content = CredentialContent(
                title: title,
                services: service.map(ServiceIdentifier.init),
                user: user,
                password: secret,
                notes: notes,
                totp: totp,
                folder: folder
            )
            let id = try await store.add(content)
            if json {
                print(try Output.json(CredentialSummary(try await store.credential(id))))
            } else {
                print("Added \(id.short) (\(content.displayTitle)).")
                if generated { print("Generated password: \(secret ?? "")") }
            }
        }
    }

    struct List: VaultCommand {
        static let configuration = CommandConfiguration(
            abstract: "List credentials (never their passwords).",
            discussion: """
                --json prints an array of objects with id, title, services, user, folder and dates, \
                and each account's passkeys (same site or a parent, same user; never their keys); \
                accounts that have only passkeys come last, without a password.

                --conflicts lists only the credentials sync left with two values of a field (written \
                on two devices without one seeing the other), each conflicting field with its current \
                value, the other value and when that was written; passwords, notes and TOTP secrets \
                stay hidden without --reveal. `keyhaven sync resolve` keeps one. Its --json is an \
                array of {id, title, service, user, conflicts: [{field, option, secret, masked, \
                current, other, otherWritten}]}.

                Examples:
                  keyhaven list
                  keyhaven list --deleted
                  keyhaven list --json | jq -r '.[].services[0]'
                  keyhaven list --conflicts
                  keyhaven list --conflicts --reveal --json
                """
        )
        @OptionGroup var options: VaultOptions
        @ParentCommand var root: Keyhaven
        @Flag(name: .long, help: "Print JSON.") var json = false
        @Flag(name: .long, help: "List recently deleted credentials instead.") var deleted = false
        @Flag(name: .long, help: "List only the credentials with sync conflicts, with their conflicting fields.")
        var conflicts = false
        @Flag(name: .long, help: "With --conflicts: show the conflicting passwords, notes and TOTP secrets.")
        var reveal = false

        func validate() throws {
            if conflicts && deleted { throw ValidationError("use either --conflicts or --deleted") }
            if reveal && !conflicts {
                throw ValidationError("--reveal goes with --conflicts (`keyhaven show --reveal` shows one credential)")
            }
        }

        func run() async throws {
            let store = try await openStore()
            if conflicts {
                let items = try await store.syncConflicts(reveal: reveal)
                if json { print(try Output.json(items)) } else { ConflictListing.print(items) }
                return
            }
            let listing = try await store.list(deleted: deleted)
            if json {
                if deleted {
                    print(try Output.json(listing.credentials.map { CredentialSummary($0) }))
                } else {
                    let passkeys = try await store.passkeys().map { (id: $0.id, passkey: $0.passkey) }
                    print(try Output.json(CredentialSummary.listing(listing.credentials, passkeys: passkeys)))
                }
            } else {
                Table.print(listing.credentials)
                if !deleted, let count = try? await store.passkeys().count, count > 0 {
                    print("\(count) passkey\(count == 1 ? "" : "s"): keyhaven passkey list")
                }
            }
            Output.unreadable(listing.failures)
            if !listing.failures.isEmpty { throw ExitCode(1) }
        }
    }

    struct Show: VaultCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show one credential and its password history.",
            discussion: """
                Name the account by site (github.com, github.com/alice, a URL or its title) or by id \
                (at least 4 characters). Secrets stay hidden without --reveal.

                Examples:
                  keyhaven show github.com
                  keyhaven show github.com/alice --reveal
                  keyhaven show 3f2a9c1e --json
                """
        )
        @OptionGroup var options: VaultOptions
        @ParentCommand var root: Keyhaven
        @OptionGroup var selection: AccountSelection
        @Flag(name: .long, help: "Show the password, notes, TOTP secret and old passwords.") var reveal = false
        @Flag(name: .long, help: "Print JSON.") var json = false

        func run() async throws {
            let store = try await openStore()
            let credential = try await account(selection.account, in: store)
            let history = try await store.history(credential.id)
            if json {
                print(try Output.json(CredentialSummary(credential, reveal: reveal, history: history)))
                return
            }
            let hidden = "••••••••"
            print("id:        \(credential.id)")
            print("title:     \(credential.content.displayTitle)")
            print("services:  \(credential.services.map(\.identifier).joined(separator: ", "))")
            print("user:      \(credential.user)")
            if let signIn = credential.signIn {
                print("sign-in:   \(signIn.issuer) (no password)")
            } else {
                print("password:  \(reveal ? credential.password ?? "" : hidden)")
            }
            if !credential.notes.isEmpty { print("notes:     \(reveal ? credential.notes : hidden)") }
            if let totp = credential.totp { print("totp:      \(reveal ? totp : hidden)") }
            if let folder = credential.folder { print("folder:    \(folder)") }
            print("created:   \(credential.created.formatted(.iso8601))")
            print("modified:  \(credential.modified.formatted(.iso8601))")
            if let deleted = credential.deleted {
                print("deleted:   \(deleted.formatted(.iso8601)) (restore with keyhaven restore)")
            }
            if !history.isEmpty {
                print("history:   \(history.count) earlier password\(history.count == 1 ? "" : "s")")
                for entry in history.reversed() {
                    print("  replaced \(entry.replaced.formatted(.iso8601))\(reveal ? ": \(entry.password)" : "")")
                }
            }
        }
    }

    struct Search: VaultCommand {
        static let configuration = CommandConfiguration(
            abstract: "Find credentials by service or text.",
            discussion: """
                A domain or URL is looked up through keyed hashes, without decrypting other \
                credentials: it finds the domain, its subdomains and its parent domains. Other text \
                (or --text) matches titles, users, services, notes and folders.

                Examples:
                  keyhaven search github.com
                  keyhaven search --text work
                """
        )
        @OptionGroup var options: VaultOptions
        @ParentCommand var root: Keyhaven
        @Argument(help: "A domain, URL, or text.") var query: String
        @Flag(name: .long, help: "Match text instead of looking up a service.") var text = false
        @Flag(name: .long, help: "Print JSON.") var json = false

        func run() async throws {
            let store = try await openStore()
            let looksLikeService = !text && !query.contains(" ") && (query.contains(".") || query.contains("://"))
            let listing = try await store.search(query, text: !looksLikeService)
            if json {
                print(try Output.json(listing.credentials.map { CredentialSummary($0) }))
            } else {
                Table.print(listing.credentials)
            }
            Output.unreadable(listing.failures)
        }
    }

    struct Edit: VaultCommand {
        static let configuration = CommandConfiguration(
            abstract: "Change a credential.",
            discussion: """
                A new password moves the old one to the credential's history, with the date. Name the \
                account by site (SERVICE or SERVICE/USER) or by id.

                Examples:
                  keyhaven edit github.com --generate
                  keyhaven edit github.com/alice --user alice@example.com
                  keyhaven edit example.org --totp otpauth://totp/example?secret=JBSWY3DPEHPK3PXP
                """
        )
        @OptionGroup var options: VaultOptions
        @ParentCommand var root: Keyhaven
        @OptionGroup var selection: AccountSelection
        @Option(name: .long, help: "New user name.") var user: String?
        @Option(name: .long, help: "New password.") var password: String?
        @Flag(name: .long, help: "Generate a new strong password (printed).") var generate = false
        @Option(name: .long, help: "New title.") var title: String?
        @Option(name: .long, help: "New notes.") var notes: String?
        @Option(name: .long, help: "New TOTP secret or URI (empty removes it).") var totp: String?
        @Option(name: .long, help: "New folder (empty removes it).") var folder: String?
        @Option(name: .customLong("add-service"), help: "Add a service.") var addService: [String] = []
        @Option(name: .customLong("remove-service"), help: "Remove a service.") var removeService: [String] = []

        func validate() throws { try ServiceArgument.validate(addService) }

        func run() async throws {
            let store = try await openStore()
            let existing = try await account(selection.account, in: store)
            var newPassword = password
            if generate {
                // Generated here, where the person sees it, and sent as the new password.
                newPassword = try reporting {
                    try ServicePasswordRules(requirements: nil, domains: existing.services.map(\.identifier))
                        .generate()
                }
            }
            func field(_ value: String?) -> CredentialChanges.Field? {
                value.map { $0.isEmpty ? .remove : .set($0) }
            }
            var changes = CredentialChanges()
            (changes.user, changes.password, changes.title, changes.notes) = (user, newPassword, title, notes)
            (changes.totp, changes.folder) = (field(totp), field(folder))
            changes.addServices = addService.map(ServiceIdentifier.init)
            changes.removeServices = removeService
            let credential = try await store.update(existing.id, changes)
            print("Updated \(credential.id.short) (\(credential.content.displayTitle)).")
            if generate, let newPassword { print("Generated password: \(newPassword)") }
        }
    }

    struct Remove: VaultCommand {
        static let configuration = CommandConfiguration(
            commandName: "rm",
            abstract: "Move a credential to Recently Deleted (restorable for 30 days).",
            discussion: """
                Examples:
                  keyhaven rm old-forum.example
                  keyhaven rm github.com/work-alice
                """
        )
        @OptionGroup var options: VaultOptions
        @ParentCommand var root: Keyhaven
        @OptionGroup var selection: AccountSelection

        func run() async throws {
            let store = try await openStore()
            let resolved = try await account(selection.account, in: store).id
            try await store.remove(resolved)
            print("Moved \(resolved.short) to Recently Deleted; `keyhaven restore \(resolved.short)` brings it back.")
        }
    }

    struct Restore: VaultCommand {
        static let configuration = CommandConfiguration(abstract: "Bring back a recently deleted credential.")
        @OptionGroup var options: VaultOptions
        @ParentCommand var root: Keyhaven
        @Argument(help: "The credential id (or its first characters).") var id: String

        func run() async throws {
            let store = try await openStore()
            let resolved = try await store.resolve(id)
            try await store.restore(resolved)
            print("Restored \(resolved.short).")
        }
    }
}

/// Services typed on the command line: a domain or URL never holds a control character (a line break
/// would split it in two on export, an escape sequence would reach a terminal).
enum ServiceArgument {
    static func validate(_ services: [String]) throws {
        for service in services
        where service.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            throw ValidationError(
                "a service cannot contain control characters such as line breaks: \(service.debugDescription)"
            )
        }
    }
}
