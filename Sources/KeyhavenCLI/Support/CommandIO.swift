public import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a command's environment, standard input and output are: the process's own (``process``),
/// or — when a command runs in-process, as tests and programs embedding the commands do — ones of
/// the caller's, with what the command writes kept (``Keyhaven/run(_:io:)``).
///
/// ```swift
/// let io = CommandIO(environment: ["KEYHAVEN_PASSWORD": "…"], standardInput: "hunter2\n")
/// let status = await Keyhaven.run(["breach", "--stdin"], io: io)
/// print(status, io.standardOutput)
/// ```
///
/// Every command reads its environment and input and writes its output through the current one;
/// an in-process run never prompts on the terminal (a command that would ask fails instead).
public final class CommandIO: @unchecked Sendable {
    /// Nil for the process's own streams.
    private let injectedEnvironment: [String: String]?
    private let clock: @Sendable () -> Date
    /// The `keyhaven` executable, for work that must outlive the command (clearing the clipboard).
    let executable: URL?
    /// Where relative paths are resolved (an agent's run for a CLI elsewhere); nil: the process's.
    let workingDirectory: String?
    private let lock = NSLock()
    // Guarded by `lock`.
    private var input: ArraySlice<String>
    private var output = Data()
    private var errors = Data()

    /// The process's environment and standard streams.
    public static let process = CommandIO(process: ())

    private init(process: Void) {
        injectedEnvironment = nil
        clock = { Date() }
        executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        workingDirectory = nil
        input = []
    }

    /// An in-process run's own `environment` (nothing of the process's is read) and
    /// `standardInput`; what the command writes is kept in ``standardOutput`` and ``standardError``.
    /// `now` is the clock commands read (one-time codes); `executable` is the `keyhaven` binary
    /// commands re-invoke for work that outlives them (none: `copy` does not clear the clipboard).
    public init(
        environment: [String: String] = [:],
        standardInput: String = "",
        now: @escaping @Sendable () -> Date = { Date() },
        executable: URL? = nil,
        workingDirectory: String? = nil
    ) {
        injectedEnvironment = environment
        clock = now
        self.executable = executable
        self.workingDirectory = workingDirectory
        // Split on the scalar: "\r\n" is one Character, which a Character split would not cut.
        var lines = standardInput.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false)
            .map { String(String.UnicodeScalarView($0)) }
        if lines.last == "" { lines.removeLast() }
        input = ArraySlice(lines.map { $0.hasSuffix("\r") ? String($0.dropLast()) : $0 })
    }

    /// The one in effect for the commands running in this task.
    @TaskLocal static var current: CommandIO = .process

    /// `path` with `~` expanded and, when relative, resolved against ``workingDirectory`` (else left
    /// to the process's own).
    func path(_ path: String) -> String {
        let expanded = (path as NSString).expandingTildeInPath
        guard let workingDirectory, !expanded.hasPrefix("/") else { return expanded }
        return (workingDirectory as NSString).appendingPathComponent(expanded)
    }

    /// Whether this is the process's own (terminal prompts are allowed only then).
    var isProcess: Bool { injectedEnvironment == nil }

    /// The current time, as the commands see it.
    var now: Date { clock() }

    /// The environment commands read (`KEYHAVEN_VAULT`, `KEYHAVEN_PASSWORD`, …).
    public var environment: [String: String] { injectedEnvironment ?? ProcessInfo.processInfo.environment }

    /// What an in-process command wrote to standard output (empty for ``process``).
    public var standardOutput: String { lock.withLock { String(decoding: output, as: UTF8.self) } }

    /// What an in-process command wrote to standard error (empty for ``process``).
    public var standardError: String { lock.withLock { String(decoding: errors, as: UTF8.self) } }

    func writeOutput(_ data: Data) {
        if isProcess {
            FileHandle.standardOutput.write(data)
        } else {
            lock.withLock { output.append(data) }
        }
    }

    func writeError(_ data: Data) {
        if isProcess {
            FileHandle.standardError.write(data)
        } else {
            lock.withLock { errors.append(data) }
        }
    }

    /// One line of standard input without its line ending; nil at the end. The process's is read
    /// byte by byte, so that later reads (and child processes) see the rest.
    func readLine() -> String? {
        guard isProcess else { return lock.withLock { input.popFirst() } }
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while read(0, &byte, 1) == 1 {
            if byte == UInt8(ascii: "\n") { break }
            bytes.append(byte)
        }
        if bytes.isEmpty && byte != UInt8(ascii: "\n") { return nil }
        if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The remaining lines of standard input, without their line endings (`\n` or `\r\n`); the
    /// process's are read buffered (for large inputs).
    func lines() -> AnySequence<String> {
        guard isProcess else {
            return AnySequence { AnyIterator { self.lock.withLock { self.input.popFirst() } } }
        }
        return AnySequence {
            AnyIterator {
                guard var line = Swift.readLine(strippingNewline: true) else { return nil }
                if line.hasSuffix("\r") { line.removeLast() }
                return line
            }
        }
    }
}
