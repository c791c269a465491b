import Foundation
import KeyhavenTesting
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The `shiny` executable as a program that starts it (`keyhaven demo`) sees it: it says where it
/// listens on its first line, and it stops on SIGTERM or when its standard input closes.
struct ShinyExecutableTests {
    /// A running `shiny` and the pipes to it.
    struct Running {
        var process: Process
        var input: Pipe
        var output: Pipe

        /// The first line shiny printed (empty when it closed its output first).
        func firstLine() async throws -> String {
            let handle = output.fileHandleForReading
            return try await CommandRunner.detached {
                var bytes = Data()
                while !bytes.contains(UInt8(ascii: "\n")) {
                    let chunk = handle.availableData
                    if chunk.isEmpty { break }
                    bytes += chunk
                }
                return String(decoding: bytes.prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
            }
        }

        /// Whether shiny exited within `limit`; kills it if not.
        func exited(within limit: Duration) async throws -> Bool {
            let clock = ContinuousClock()
            let deadline = clock.now + limit
            while process.isRunning && clock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            guard !process.isRunning else {
                kill(process.processIdentifier, SIGKILL)
                return false
            }
            return true
        }
    }

    static func start(_ arguments: [String]) throws -> Running {
        let process = Process()
        process.executableURL = CommandRunner.shiny().executable
        process.arguments = arguments
        let running = Running(process: process, input: Pipe(), output: Pipe())
        process.standardInput = running.input
        process.standardOutput = running.output
        process.standardError = FileHandle.nullDevice
        try process.run()
        return running
    }

    /// The first line: where shiny listens.
    static func listening() -> Regex<(Substring, Substring)> { #/^shiny listening on http://127\.0\.0\.1:(\d+)$/# }

    @Test func printsWhereItListensFirstAndStopsOnSIGTERM() async throws {
        let shiny = try Self.start(["--port", "0"])
        defer { if shiny.process.isRunning { kill(shiny.process.processIdentifier, SIGKILL) } }
        let line = try await shiny.firstLine()
        let match = try #require(line.wholeMatch(of: Self.listening()), "\(line)")
        #expect(Int(match.1).map { $0 > 0 && $0 != 8081 } == true)  // a free port, not the default

        shiny.process.terminate()
        #expect(try await shiny.exited(within: .seconds(20)))
        #expect(shiny.process.terminationReason == .exit && shiny.process.terminationStatus == 0)
    }

    @Test func stopsWhenItsStandardInputClosesIfAsked() async throws {
        let shiny = try Self.start(["--port", "0", "--demo", "--stop-when-stdin-closes"])
        defer { if shiny.process.isRunning { kill(shiny.process.processIdentifier, SIGKILL) } }
        #expect(try await shiny.firstLine().wholeMatch(of: Self.listening()) != nil)
        // What happens when the program that started shiny exits, however it exits.
        try shiny.input.fileHandleForWriting.close()
        #expect(try await shiny.exited(within: .seconds(20)))
        #expect(shiny.process.terminationReason == .exit && shiny.process.terminationStatus == 0)
    }

    @Test func refusesDemoModeOffLoopback() async throws {
        let result = try await CommandRunner.shiny().runDetached(["--demo", "--host", "0.0.0.0", "--port", "0"])
        #expect(result.status != 0)
        #expect(result.stderr.contains("loopback only"), "\(result.stderr)")
        #expect(!result.stdout.contains("listening"))
    }
}
