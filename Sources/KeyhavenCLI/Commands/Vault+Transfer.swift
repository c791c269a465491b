import ArgumentParser
import Foundation
import KeyhavenApp
import Vault
import _KeyhavenSupport

extension Keyhaven {
    struct Import: VaultCommand {
        static let configuration = CommandConfiguration(
            abstract: "Import passwords exported from another password manager.",
            discussion: """
                The format is detected from the file's header: Chrome/Edge, Firefox, Safari/Apple \
                Passwords, Bitwarden (CSV and unencrypted JSON), 1Password 8, KeePassXC, LastPass, \
                FIDO CXF 1.0 (with its passkeys), and Keyhaven's own CSV. Exact duplicates are merged; \
                rows that cannot be read and items that are not logins (notes, cards) are reported with \
                their line or position; everything else is imported in one transaction. \
                --dry-run shows the same report without writing anything. Files over 64 MiB are \
                refused.

                Examples:
                  keyhaven import ~/Downloads/Chrome\\ Passwords.csv --dry-run
                  keyhaven import bitwarden_export.json --json
                """
        )
        @OptionGroup var options: VaultOptions
        @ParentCommand var root: Keyhaven
        @Argument(help: "The export file.") var file: String
        @Option(
            name: .long,
            help: ArgumentHelp(
                "Force a format: \(ImportFormat.allCases.map(\.rawValue).joined(separator: ", ")).",
                valueName: "format"
            )
        )
        var format: String?
        @Flag(name: .long, help: "Print the report as JSON.") var json = false
        @Flag(name: .long, help: "Show what would be imported, merged and skipped; write nothing.")
        var dryRun = false

        func run() async throws {
            var forced: ImportFormat?
            if let format {
                guard let parsed = ImportFormat(name: format) else {
                    throw ValidationError(
                        "unknown format \(format); use one of \(ImportFormat.allCases.map(\.rawValue).joined(separator: ", "))"
                    )
                }
                forced = parsed
            }
            let parsed = try reporting {
                try ImportService.read(contentsOf: URL(fileURLWithPath: CommandIO.current.path(file)), format: forced)
            }
            let report = try await openStore().importItems(parsed, dryRun: dryRun)
            if json {
                print(try Output.json(report))
                return
            }
            let count = "\(report.imported) credential\(report.imported == 1 ? "" : "s")"
            print(
                (dryRun ? "Would import \(count) from \(file) " : "Imported \(count) from \(file) ")
                    + "(\(report.format.rawValue)); \(report.duplicatesMerged) duplicate"
                    + "\(report.duplicatesMerged == 1 ? "" : "s") merged; \(report.skipped.count) skipped."
                    + (report.passkeys > 0
                        ? " \(report.passkeys) passkey\(report.passkeys == 1 ? "" : "s") \(dryRun ? "would be " : "")added."
                        : "")
                    + (dryRun ? " Nothing was written (--dry-run)." : "")
            )
            for problem in report.skipped {
                print("  skipped \(problem)")
            }
            for problem in report.warnings {
                print("  warning \(problem)")
            }
        }
    }

    struct Export: VaultCommand {
        static let configuration = CommandConfiguration(
            abstract: "Export the vault (unencrypted!).",
            discussion: """
                csv: Chrome's columns plus totp, folder and other_urls; bitwarden-json: Bitwarden's \
                unencrypted JSON, with password history and passkeys; cxf: FIDO Credential Exchange \
                Format 1.0, with passkeys; keepass-xml: KeePass 2 XML (keepassxc-cli import reads it), \
                passkeys as KeePassXC's passkey entries. Each re-imports into the same credentials and \
                keys. Files are created readable by you only, and never overwritten.
                """
        )
        @OptionGroup var options: VaultOptions
        @ParentCommand var root: Keyhaven
        @Option(
            name: .long,
            help: ArgumentHelp(
                "csv, bitwarden-json, cxf or keepass-xml (passkeys in all but csv).",
                valueName: "format"
            )
        )
        var format: String
        @Option(name: .long, help: "Write to this file instead of standard output.") var output: String?

        func run() async throws {
            guard let exportFormat = ExportFormat(rawValue: format) else {
                throw ValidationError("--format must be csv, bitwarden-json, cxf or keepass-xml")
            }
            let output = output.map { CommandIO.current.path($0) }
            if let output, FileManager.default.fileExists(atPath: output) {
                throw Output.failure("\(output) already exists; choose another name")
            }
            let store = try await openStore()
            let listing = try await store.list()
            let history =
                exportFormat == .bitwardenJSON ? try await store.histories(listing.credentials.map(\.id)) : [:]
            // Private keys cross the agent's socket only for a format that carries them.
            let passkeys = try await store.passkeys(withKeys: Exporter.carriesPasskeys(exportFormat)).map(\.passkey)
            if !passkeys.isEmpty && !Exporter.carriesPasskeys(exportFormat) {
                Output.error(
                    "keyhaven: note: \(passkeys.count) passkey\(passkeys.count == 1 ? "" : "s") not exported: only --format cxf, bitwarden-json and keepass-xml carry passkeys"
                )
            }
            let data = try reporting {
                try Exporter.export(listing.credentials, history: history, passkeys: passkeys, format: exportFormat)
            }
            if let output {
                // Created 0600 with O_EXCL|O_NOFOLLOW: never another's file or a planted link.
                do {
                    try PrivateFile.create(at: URL(fileURLWithPath: output), contents: data)
                } catch {
                    throw Output.failure(
                        error.code == .exists ? "\(output) already exists; choose another name" : error.message
                    )
                }
                Output.error(
                    "keyhaven: exported \(listing.credentials.count) credentials to \(output) — it is NOT encrypted; delete it when done"
                )
            } else {
                CommandIO.current.writeOutput(data)
            }
            Output.unreadable(listing.failures, note: " (not exported)")
            if !listing.failures.isEmpty { throw ExitCode(1) }
        }
    }

    struct ChangeMasterPassword: VaultCommand {
        static let configuration = CommandConfiguration(
            commandName: "passwd",
            abstract: "Change the master password and re-key the vault.",
            discussion: """
                Re-keys the vault: a new random vault key, wrapped under the new password (fresh salt, \
                calibrated scrypt, at least N=2^17, r=8, p=1 unless --insecure-kdf); every credential, \
                password-history entry, pending upgrade and provider session is re-sealed under it in \
                one transaction (a crash leaves the old vault intact). Someone who learned the old \
                password and kept a copy of the file can read that copy, but nothing written from now \
                on. The new password must score at least 3 of 4 with zxcvbn unless \
                --force-weak-password. It comes from $KEYHAVEN_NEW_PASSWORD, the second line of \
                standard input with --password-stdin, or a prompt.
                """
        )
        @OptionGroup var options: VaultOptions
        @ParentCommand var root: Keyhaven
        @OptionGroup var newMasterPassword: NewMasterPasswordOptions

        func run() async throws {
            let chosen = try newMasterPassword.kdf(insecure: options.insecureKDF)
            let session = try await openSession()
            let newPassword: String
            if options.passwordStdin {
                guard let line = Terminal.standardInputLine(), !line.isEmpty else {
                    throw Output.failure("--password-stdin: the second line (the new password) is missing")
                }
                newPassword = line
            } else if let fromEnvironment = CommandIO.current.environment["KEYHAVEN_NEW_PASSWORD"],
                !fromEnvironment.isEmpty
            {
                newPassword = fromEnvironment
            } else {
                newPassword = try Terminal.askSecret("New master password: ", confirm: true)
            }
            try newMasterPassword.check(newPassword)
            let kdf = chosen ?? .calibrated()
            let insecure = options.insecureKDF
            try await reportingAsync {
                try await session.withVault {
                    try $0.changeMasterPassword(to: newPassword, kdf: kdf, allowInsecureKDF: insecure)
                }
            }
            print(
                "Master password changed; the vault was re-keyed (copies from before cannot read what is written now)."
            )
        }
    }
}
