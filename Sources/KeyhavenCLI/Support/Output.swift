import ArgumentParser
import Foundation
import Vault

/// Terminal output helpers shared by the commands.
enum Output {
    /// Writes `text` and a newline to standard error.
    static func error(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    /// Prints `keyhaven: error: message` on standard error and returns the exit code to throw.
    static func failure(_ message: String, exitCode: Int32 = 1) -> ExitCode {
        error("keyhaven: error: \(message)")
        return ExitCode(exitCode)
    }

    /// Reports a vault error and returns the exit code: 2 for a wrong master password, else 1.
    static func vaultFailure(_ error: any Error) -> ExitCode {
        guard let error = error as? VaultError else {
            return failure("\(error)")
        }
        return failure(error.message, exitCode: error.code == .wrongPassword ? 2 : 1)
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
        AnySequence {
            AnyIterator {
                guard var line = readLine(strippingNewline: true) else { return nil }
                if line.hasSuffix("\r") { line.removeLast() }
                return line
            }
        }
    }
}
