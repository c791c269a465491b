import ArgumentParser
import Foundation

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

    /// One JSON document on one line (keys sorted, slashes unescaped).
    static func jsonLine(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
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
