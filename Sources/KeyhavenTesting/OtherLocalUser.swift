public import Foundation
public import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Another person on the same machine, for tests of what one local user can do to another: uid and
/// gid 65534 (`nobody`), through `setpriv --reuid=65534 --regid=65534 --clear-groups`. Only root
/// can become another user, so such tests run as root (CI does) and are skipped with ``reason``
/// otherwise.
///
/// ```swift
/// @Test(.enabled(if: OtherLocalUser.available, OtherLocalUser.reason))
/// func anotherUserGetsNothing() throws {
///     let output = try OtherLocalUser.run(["python3", "-c", "print(open('/root/x').read())"])
/// }
/// ```
public enum OtherLocalUser {
    /// `nobody`.
    public static let uid: UInt32 = 65534

    public static let available: Bool =
        getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")
    public static let reason: Comment =
        "needs root, to run a process as another user (uid 65534, with setpriv); CI runs as root"

    /// Starts `arguments` (found on `PATH`) as uid 65534, in `/`, its standard output and error
    /// piped; the caller reads and waits for it (``output(of:)``).
    public static func start(_ arguments: [String]) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments = ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "/usr/bin/env"] + arguments
        process.currentDirectoryURL = URL(fileURLWithPath: "/")
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = Pipe()
        process.standardError = Pipe()
        try process.run()
        return process
    }

    /// Waits for a process from ``start(_:)`` and returns its exit status and output.
    public static func output(of process: Process) -> (status: Int32, stdout: String, stderr: String) {
        let stdout = (process.standardOutput as? Pipe)?.fileHandleForReading.readDataToEndOfFile() ?? Data()
        let stderr = (process.standardError as? Pipe)?.fileHandleForReading.readDataToEndOfFile() ?? Data()
        process.waitUntilExit()
        return (
            process.terminationStatus, String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self)
        )
    }

    /// Runs `arguments` as uid 65534 to its end.
    public static func run(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        output(of: try start(arguments))
    }
}
