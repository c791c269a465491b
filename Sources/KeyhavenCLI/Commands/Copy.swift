import ArgumentParser
import Foundation
import Vault

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Keyhaven {
    struct Copy: VaultCommand {
        static let configuration = CommandConfiguration(
            abstract: "Put an account's password, user name or one-time code on the clipboard.",
            discussion: """
                Uses wl-copy (Wayland, when WAYLAND_DISPLAY is set), else xclip, else xsel. The secret \
                goes to the tool's standard input, never its command line. After --clear-after \
                seconds (45 by default; 0 never) a background keyhaven empties the clipboard, unless \
                it holds something else by then; the command itself returns at once.

                Examples:
                  keyhaven copy github.com
                  keyhaven copy github.com/alice --otp
                  keyhaven copy github.com --user --clear-after 0
                """
        )
        @OptionGroup var options: VaultOptions
        @ParentCommand var root: Keyhaven
        @OptionGroup var selection: AccountSelection
        @Flag(name: .long, help: "Copy the user name instead of the password.") var user = false
        @Flag(name: .long, help: "Copy the current one-time code instead of the password.") var otp = false
        @Option(
            name: .customLong("clear-after"),
            help: ArgumentHelp("Empty the clipboard after this many seconds (0: never).", valueName: "seconds")
        )
        var clearAfter: Int = 45

        func validate() throws {
            if user && otp { throw ValidationError("use either --user or --otp, not both") }
            if clearAfter < 0 { throw ValidationError("--clear-after must be 0 (never) or more seconds") }
        }

        func run() async throws {
            let io = CommandIO.current
            let environment = io.environment
            guard let clipboard = Clipboard.find(environment: environment) else {
                throw Output.failure(Clipboard.installAdvice)
            }
            let credential = try await account(selection.account, in: try await openStore())
            let (what, text) = try choose(from: credential)
            try clipboard.put(text, environment: environment)
            var note = "Copied the \(what) of \(credential.content.displayTitle) to the clipboard"
            if clearAfter > 0 {
                if let executable = io.executable {
                    try scheduleClearing(clipboard, digest: Clipboard.digest(Data(text.utf8)), executable: executable)
                    note += "; it is cleared in \(clearAfter) s unless it changes."
                } else {
                    note += " (not cleared: no keyhaven executable to clear it)."
                }
            } else {
                note += "."
            }
            Output.error(note)
        }

        /// What to copy, and what it is called.
        private func choose(from credential: Credential) throws -> (String, String) {
            if user {
                guard !credential.user.isEmpty else {
                    throw Output.failure(
                        "\(credential.content.displayTitle) has no user name; set one with "
                            + "`keyhaven edit \(selection.account) --user NAME`"
                    )
                }
                return ("user name", credential.user)
            }
            if otp {
                return ("one-time code", try OneTimeCodeReading.current(for: credential, named: selection.account).code)
            }
            guard let password = credential.password, !password.isEmpty else {
                let reason = credential.signIn != nil ? "signs in with Keyhaven and has no password" : "has no password"
                throw Output.failure(
                    "\(credential.content.displayTitle) \(reason); `keyhaven edit \(selection.account) --generate` makes one"
                )
            }
            return ("password", password)
        }

        /// Starts `keyhaven clear-clipboard` in the background; it is told the digest on its
        /// standard input and outlives this command.
        private func scheduleClearing(_ clipboard: Clipboard, digest: String, executable: URL) throws {
            let process = Process()
            process.executableURL = executable
            process.arguments = ["clear-clipboard", "--after", String(clearAfter), "--tool", clipboard.name]
            // Nothing it does not need: not the master password.
            process.environment = CommandIO.current.environment.filter {
                !["KEYHAVEN_PASSWORD", "KEYHAVEN_NEW_PASSWORD"].contains($0.key)
            }
            let input = Pipe()
            process.standardInput = input
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            do {
                try process.run()
            } catch {
                throw Output.failure("could not start keyhaven to clear the clipboard later: \(error)")
            }
            input.fileHandleForWriting.write(Data((digest + "\n").utf8))
            try? input.fileHandleForWriting.close()
        }
    }

    /// `keyhaven clear-clipboard`: started by `copy`, empties the clipboard after a while if it
    /// still holds what was copied (its SHA-256 read from standard input). Not for people.
    struct ClearClipboard: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "clear-clipboard",
            abstract: "Empty the clipboard later if it is unchanged (started by `copy`).",
            shouldDisplay: false
        )
        @Option(name: .long) var after: Int
        @Option(name: .long) var tool: String

        func run() throws {
            let environment = CommandIO.current.environment
            guard let digest = CommandIO.current.readLine(), !digest.isEmpty else { throw ExitCode(64) }
            guard let clipboard = Clipboard.named(tool, environment: environment) else { throw ExitCode(1) }
            _ = setsid()
            Thread.sleep(forTimeInterval: TimeInterval(after))
            guard let contents = clipboard.contents(environment: environment),
                Clipboard.holds(contents, digest: digest)
            else { return }
            clipboard.empty(environment: environment)
        }
    }
}
