import ArgumentParser
import Foundation
import KeyhavenApp
import Vault

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Options every vault command takes: where the vault is and how to get the master password.
struct VaultOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The vault file (default: $KEYHAVEN_VAULT, else $XDG_DATA_HOME/keyhaven/vault.sqlite).",
            valueName: "path"
        )
    )
    var vault: String?

    @Flag(
        name: .long,
        help: "Read the master password from the first line of standard input (else $KEYHAVEN_PASSWORD, else a prompt)."
    )
    var passwordStdin = false

    @Flag(
        name: .customLong("insecure-kdf"),
        help: """
            Allow scrypt parameters below Keyhaven's floor (N=2^17, r=8, p=1) when creating, re-keying \
            or opening a vault (tests only; also $KEYHAVEN_INSECURE_KDF=1).
            """
    )
    var insecureKDFFlag = false

    /// `--insecure-kdf` or `$KEYHAVEN_INSECURE_KDF=1`.
    var insecureKDF: Bool {
        insecureKDFFlag || CommandIO.current.environment["KEYHAVEN_INSECURE_KDF"] == "1"
    }

    /// The vault path: this option, the global `--vault`, `$KEYHAVEN_VAULT`, or the XDG default.
    func url(global: String? = nil) -> URL {
        Self.url(path: vault ?? global)
    }

    /// The vault path: `path`, `$KEYHAVEN_VAULT`, or the XDG default (for commands without these options).
    static func url(path: String?) -> URL {
        let environment = CommandIO.current.environment
        if let path = path ?? environment["KEYHAVEN_VAULT"], !path.isEmpty {
            return URL(fileURLWithPath: (path as NSString).expandingTildeInPath)
        }
        let data =
            environment["XDG_DATA_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? (NSHomeDirectory() as NSString).appendingPathComponent(".local/share")
        return URL(fileURLWithPath: data).appendingPathComponent("keyhaven/vault.sqlite")
    }

    /// The master password: stdin (with `--password-stdin`), `$KEYHAVEN_PASSWORD`, or a prompt.
    func masterPassword(confirm: Bool = false) throws -> String {
        if passwordStdin {
            guard let line = Terminal.standardInputLine(), !line.isEmpty else {
                throw Output.failure("--password-stdin: standard input has no password line")
            }
            return line
        }
        if let password = CommandIO.current.environment["KEYHAVEN_PASSWORD"], !password.isEmpty {
            return password
        }
        return try Terminal.askSecret("Master password: ", confirm: confirm)
    }

    /// Unlocks the vault in a ``KeyhavenSession`` of this process (the CLI without an agent): as
    /// for the agent and the web app, the session opens the vault and owns it, and the command
    /// works through it. Failures become clear messages and exit codes (2: wrong password). The
    /// session never locks by itself: the command ends first (``KeyhavenSession/lock()``).
    func openSession(global: String? = nil) async throws -> KeyhavenSession {
        let session = KeyhavenSession(
            .init(vaultURL: url(global: global), idleLock: .infinity, allowInsecureKDF: insecureKDF)
        )
        let password = try masterPassword()
        do {
            try await session.unlockVault(masterPassword: password)
        } catch {
            throw Output.vaultFailure(error)
        }
        for warning in try await session.withVault({ $0.fileWarnings }) {
            Output.error("keyhaven: warning: \(warning)")
        }
        return session
    }
}

/// Reading secrets and lines without echo or buffering surprises.
enum Terminal {
    /// One line of standard input, read byte by byte so that later reads see the rest.
    static func standardInputLine() -> String? {
        CommandIO.current.readLine()
    }

    /// Asks a question on the terminal (echo on); nil when there is no terminal.
    static func ask(_ prompt: String) -> String? {
        guard CommandIO.current.isProcess, let tty = FileHandle(forUpdatingAtPath: "/dev/tty") else { return nil }
        defer { try? tty.close() }
        tty.write(Data(prompt.utf8))
        var bytes: [UInt8] = []
        while let byte = try? tty.read(upToCount: 1), let first = byte.first, first != UInt8(ascii: "\n") {
            bytes.append(first)
        }
        return String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespaces)
    }

    /// Asks on the terminal with echo off; `confirm` asks twice.
    static func askSecret(_ prompt: String, confirm: Bool = false) throws -> String {
        let tty = CommandIO.current.isProcess ? open("/dev/tty", O_RDWR) : -1
        guard tty >= 0 else {
            throw Output.failure(
                "no terminal to ask for the password: set KEYHAVEN_PASSWORD or use --password-stdin"
            )
        }
        defer { close(tty) }
        func ask(_ text: String) -> String {
            _ = text.withCString { write(tty, $0, strlen($0)) }
            var saved = termios()
            tcgetattr(tty, &saved)
            var silent = saved
            silent.c_lflag &= ~tcflag_t(ECHO)
            tcsetattr(tty, TCSAFLUSH, &silent)
            defer {
                tcsetattr(tty, TCSAFLUSH, &saved)
                _ = write(tty, "\n", 1)
            }
            var bytes: [UInt8] = []
            var byte: UInt8 = 0
            while read(tty, &byte, 1) == 1 && byte != UInt8(ascii: "\n") {
                bytes.append(byte)
            }
            return String(decoding: bytes, as: UTF8.self)
        }
        let first = ask(prompt)
        guard !first.isEmpty else { throw Output.failure("an empty password is not allowed") }
        if confirm {
            guard ask("Repeat to confirm: ") == first else {
                throw Output.failure("the passwords do not match")
            }
        }
        return first
    }
}
