import Foundation
import KeyhavenCLI
import KeyhavenTesting
import Testing

/// The shell completions argument-parser generates (`keyhaven --generate-completion-script SHELL`,
/// installed by the Debian package): each parses in its own shell (`bash -n`, `zsh -n`, `fish -n`)
/// and names the commands. A shell that is not installed skips its test, except under
/// scripts/test.sh (`KEYHAVEN_REQUIRE_EXTERNAL_TOOLS=1`), whose install-test-deps.sh installs zsh
/// and fish. Completing site names from the vault needs the agent (the AutoFill issue): not yet.
@Suite(.offCooperativePool)
struct CompletionScriptTests {
    static func installed(_ shell: String) -> Bool {
        if ExternalTools.required { return true }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").contains {
            FileManager.default.isExecutableFile(atPath: "\($0)/\(shell)")
        }
    }

    /// The script for `shell`, generated in-process, after checking it names the commands.
    func script(for shell: String) async throws -> String {
        let io = CommandIO(environment: [:])
        let status = await Keyhaven.run(["--generate-completion-script", shell], io: io)
        #expect(status == 0, "\(io.standardError)")
        let script = io.standardOutput
        for command in ["idp", "demo", "audit", "generate", "serve"] {
            #expect(script.contains(command), "the \(shell) completions lack \(command)")
        }
        return script
    }

    /// Runs `shell -n` on `script`; returns its exit status and standard error.
    func parse(_ script: String, with shell: String) throws -> (status: Int32, errors: String) {
        let directory = try TemporaryDirectory.make()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("keyhaven.\(shell)")
        try Data(script.utf8).write(to: file)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [shell, "-n", file.path]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let output = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }

    @Test(.enabled(if: installed("bash"), "needs bash"))
    func bashParses() async throws {
        let result = try parse(try await script(for: "bash"), with: "bash")
        #expect(result.status == 0, "\(result.errors)")
        // The check itself fails on a broken script.
        #expect(try parse("if then fi (", with: "bash").status != 0)
    }

    @Test(.enabled(if: installed("zsh"), "needs zsh (scripts/install-test-deps.sh installs it)"))
    func zshParses() async throws {
        let result = try parse(try await script(for: "zsh"), with: "zsh")
        #expect(result.status == 0, "\(result.errors)")
        #expect(try parse("if then fi (", with: "zsh").status != 0)
    }

    @Test(.enabled(if: installed("fish"), "needs fish (scripts/install-test-deps.sh installs it)"))
    func fishParses() async throws {
        let result = try parse(try await script(for: "fish"), with: "fish")
        #expect(result.status == 0, "\(result.errors)")
        #expect(try parse("if; end end (", with: "fish").status != 0)
    }

    @Test func unknownShellIsAUsageError() async {
        let io = CommandIO(environment: [:])
        let status = await Keyhaven.run(["--generate-completion-script", "tcsh"], io: io)
        #expect(status != 0)
        #expect(io.standardOutput.isEmpty)
    }
}
