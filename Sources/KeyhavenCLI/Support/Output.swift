import ArgumentParser
import Foundation
import Vault
import _KeyhavenSupport

/// Why a command failed, for the person, and its exit status (1 failure, 2 authentication, 64
/// usage). Thrown by commands; printed once by ``Keyhaven/runMain()``.
public struct CommandFailure: Error, CustomStringConvertible {
    public var message: String
    public var exitCode: Int32

    public var description: String { message }
}

/// Terminal output helpers shared by the commands.
enum Output {
    /// Writes `text` and a newline to standard error, control characters neutralised
    /// (``TerminalText``): messages often carry what a service or a file said.
    static func error(_ text: String) {
        CommandIO.current.writeError(Data((TerminalText.neutralised(text) + "\n").utf8))
    }

    /// A failure to throw: printed once (`keyhaven: error: message`) by ``Keyhaven/runMain()``, where
    /// it is handled — never when it is made, so a failure that is caught prints nothing.
    static func failure(_ message: String, exitCode: Int32 = 1) -> CommandFailure {
        CommandFailure(message: message, exitCode: exitCode)
    }

    /// `error` ready to rethrow: an exit code or a failure already made passes through as it is;
    /// anything else becomes `make(error)`.
    static func failure(from error: any Error, _ make: (any Error) -> CommandFailure) -> any Error {
        error is ExitCode || error is CommandFailure ? error : make(error)
    }

    /// A vault error as a failure: exit code 2 for a wrong master password, else 1.
    static func vaultFailure(_ error: any Error) -> CommandFailure {
        guard let error = error as? VaultError else {
            return failure("\(error)")
        }
        return failure(error.message, exitCode: error.code == .wrongPassword ? 2 : 1)
    }

    /// Runs `body`, reporting vault errors with their exit code (for commands that are not
    /// ``VaultCommand``s, such as `passkey`'s subcommands).
    static func reporting<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch {
            throw failure(from: error, vaultFailure)
        }
    }

    /// Reports each record a listing could not read (`keyhaven: error: message`, `note` after it);
    /// the others were shown.
    static func unreadable<Domain>(_ failures: [KeyhavenError<Domain>], note: String = "") {
        for failure in failures {
            error("keyhaven: error: \(failure.message)\(note)")
        }
    }

    /// Pretty-printed JSON with sorted keys.
    static func json(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes, .prettyPrinted]
        encoder.dateEncodingStrategy = .iso8601
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// One JSON document on one line (keys sorted, slashes unescaped).
    static func jsonLine(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// Lines of standard input, without their line ending (`\n` or `\r\n`).
    static func standardInputLines() -> AnySequence<String> {
        CommandIO.current.lines()
    }
}
