public import Foundation

/// Runs the built `keyhaven` executable (or another program) and captures its output, for end-to-end
/// tests of the command line.
public struct CommandRunner: Sendable {
    /// What a finished command printed and returned.
    public struct Result: Sendable {
        public var status: Int32
        /// The signal that ended the process, if one did (9 for SIGKILL).
        public var signal: Int32?
        public var stdout: String
        public var stderr: String
        /// `stdout` split into lines, without the final empty line.
        public var lines: [String] {
            var lines = stdout.components(separatedBy: "\n")
            if lines.last == "" { lines.removeLast() }
            return lines
        }
    }

    public var executable: URL
    public var environment: [String: String]

    public init(executable: URL, environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.executable = executable
        self.environment = environment
    }

    /// The `keyhaven` binary built next to the running test bundle (or `$KEYHAVEN_BINARY`). Its
    /// `keyhaven demo` finds the `shiny` built beside it (or `$KEYHAVEN_SHINY`).
    public static func keyhaven(environment: [String: String] = ProcessInfo.processInfo.environment) -> CommandRunner {
        if let path = environment["KEYHAVEN_BINARY"] {
            return CommandRunner(executable: URL(fileURLWithPath: path), environment: environment)
        }
        return CommandRunner(executable: builtProducts.appendingPathComponent("keyhaven"), environment: environment)
    }

    /// The `shiny` binary (the example service) built next to the running test bundle (or
    /// `$KEYHAVEN_SHINY`).
    public static func shiny(environment: [String: String] = ProcessInfo.processInfo.environment) -> CommandRunner {
        if let path = environment["KEYHAVEN_SHINY"] {
            return CommandRunner(executable: URL(fileURLWithPath: path), environment: environment)
        }
        return CommandRunner(executable: builtProducts.appendingPathComponent("shiny"), environment: environment)
    }

    /// Where `swift build` put the executables: the folder of the running test bundle.
    static var builtProducts: URL {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        // macOS runs tests from inside an .xctest bundle.
        while directory.pathExtension == "xctest" || directory.lastPathComponent == "MacOS"
            || directory.lastPathComponent == "Contents"
        {
            directory.deleteLastPathComponent()
        }
        return directory
    }

    /// ``run(_:stdin:extraEnvironment:)`` on a thread of its own, so that waiting for the process
    /// does not hold one of Swift concurrency's few threads (which in-process servers need).
    public func runDetached(
        _ arguments: [String],
        stdin: String = "",
        extraEnvironment: [String: String] = [:]
    )
        async throws -> Result
    {
        try await Self.detached { try self.run(arguments, stdin: stdin, extraEnvironment: extraEnvironment) }
    }

    /// Runs blocking work on a thread of its own and awaits it.
    ///
    /// Not `DispatchQueue.global()`: on Linux that is the very pool Swift concurrency runs on, and a
    /// dozen tests waiting there for processes starved the servers other tests run in-process
    /// (measured: every test stalled ~40 s until an HTTP timeout fired).
    public static func detached<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Swift.Result<T, any Error> { try work() }) }.start()
        }
    }

    /// Runs the command with `arguments`, feeding `stdin`, and waits for it to exit.
    public func run(
        _ arguments: [String],
        stdin: String = "",
        extraEnvironment: [String: String] = [:]
    ) throws -> Result {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.environment = environment.merging(extraEnvironment) { $1 }
        let input = Pipe()
        let output = Pipe()
        let errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        // Read both pipes concurrently so a chatty command cannot fill one and block.
        let stdoutData = LockedData()
        let stderrData = LockedData()
        let group = DispatchGroup()
        for (pipe, sink) in [(output, stdoutData), (errors, stderrData)] {
            group.enter()
            Thread {
                sink.set(pipe.fileHandleForReading.readDataToEndOfFile())
                group.leave()
            }.start()
        }
        // A command that exits without reading its input (a missing tool's 127, an early usage
        // error) closes the pipe: that is its result to report, not the runner's to crash on
        // (`write(_:)` traps on EPIPE, `write(contentsOf:)` throws).
        if !stdin.isEmpty { try? input.fileHandleForWriting.write(contentsOf: Data(stdin.utf8)) }
        try? input.fileHandleForWriting.close()
        group.wait()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus,
            signal: process.terminationReason == .uncaughtSignal ? process.terminationStatus : nil,
            stdout: String(decoding: stdoutData.get(), as: UTF8.self),
            stderr: String(decoding: stderrData.get(), as: UTF8.self)
        )
    }
}

private final class LockedData: @unchecked Sendable {
    // Guarded by `lock`.
    private var data = Data()
    private let lock = NSLock()
    func set(_ value: Data) { lock.withLock { data = value } }
    func get() -> Data { lock.withLock { data } }
}
