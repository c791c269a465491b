import Foundation
import KeyhavenCLI
import KeyhavenTesting
import Testing
import Vault

/// Commands run in-process through the command library (`Keyhaven.run(_:io:)`), with an environment
/// and standard input of the test's own and their output kept: no binary, no subprocess. The
/// binary's own behaviour (exit statuses as a shell sees them, signals, the demo) is tested through
/// `CommandRunner` in the other suites.
@Suite(.offCooperativePool)
struct InProcessCommandTests {
    let directory: URL
    var environment: [String: String]

    init() throws {
        directory = try TemporaryDirectory.make()
        environment = [
            "KEYHAVEN_VAULT": directory.appendingPathComponent("vault.sqlite").path,
            "KEYHAVEN_PASSWORD": "correct horse battery",
            // The test vaults use scrypt N=2^10, below the floor: every command opts in.
            "KEYHAVEN_INSECURE_KDF": "1",
        ]
    }

    func run(
        _ arguments: [String],
        stdin: String = "",
        environment: [String: String]? = nil
    ) async -> (
        status: Int32, stdout: String, stderr: String
    ) {
        let io = CommandIO(environment: environment ?? self.environment, standardInput: stdin)
        let status = await Keyhaven.run(arguments, io: io)
        return (status, io.standardOutput, io.standardError)
    }

    struct Generated: Decodable {
        var passwords: [String]
        var rules: String?
        var source: String
        var style: String
    }

    @Test func generateFollowsTheRulesGiven() async throws {
        let result = await run([
            "generate", "--rules", "minlength: 8; maxlength: 8; required: digit;", "-n", "3", "--json",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let report = try JSONDecoder().decode(Generated.self, from: Data(result.stdout.utf8))
        #expect(report.passwords.count == 3 && Set(report.passwords).count == 3)
        #expect(report.passwords.allSatisfy { $0.count == 8 && $0.contains(where: \.isNumber) })
        #expect(report.source == "rules" && report.style == "random")

        let plain = await run(["generate", "--count", "2"])
        #expect(plain.status == 0 && plain.stderr.isEmpty)
        let lines = plain.stdout.split(separator: "\n")
        #expect(lines.count == 2 && lines.allSatisfy { $0.count == 20 && $0.split(separator: "-").count == 3 })
    }

    @Test func usageErrorsGoToStandardErrorWithStatus64() async {
        let result = await run(["generate", "--count", "0"])
        #expect(result.status == 64)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.contains("--count must be at least 1"), "\(result.stderr)")
        let unknown = await run(["frobnicate"])
        #expect(unknown.status == 64 && unknown.stderr.contains("frobnicate"))
    }

    @Test func helpAndVersionGoToStandardOutput() async {
        let help = await run(["upgrade", "--help"])
        #expect(help.status == 0 && help.stderr.isEmpty)
        #expect(help.stdout.contains("--reconcile") && help.stdout.contains("asks the service"), "\(help.stdout)")
        let version = await run(["--version"])
        #expect(
            version.status == 0
                && version.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == KeyhavenVersion.current
        )
    }

    @Test func strengthReadsItsPasswordsFromStandardInput() async {
        let result = await run(["strength", "-"], stdin: "password\r\nTr0ub4dour&3\ncorrect horse battery staple\n")
        #expect(result.status == 0, "\(result.stderr)")
        let scores = result.stdout.split(separator: "\n").map { $0.split(separator: "\t")[0] }
        #expect(scores == ["0", "2", "4"], "\(result.stdout)")
    }

    struct Summary: Decodable {
        var id: String
        var user: String
        var services: [String]
        var password: String?
    }

    @Test func aVaultLifecycleInProcess() async throws {
        let created = await run(["init", "--scrypt-log-n", "10"])
        #expect(created.status == 0, "\(created.stderr)")
        #expect(created.stdout.contains("Created vault") && created.stdout.contains("N=2^10"))

        let added = await run(["add", "--service", "https://example.com", "--user", "ada", "--password", "hunter2"])
        #expect(added.status == 0, "\(added.stderr)")
        let listed = await run(["list", "--json"])
        let items = try JSONDecoder().decode([Summary].self, from: Data(listed.stdout.utf8))
        #expect(
            items.map(\.user) == ["ada"] && items[0].services == ["https://example.com"] && items[0].password == nil
        )
        let table = await run(["list"])
        #expect(table.stdout.hasPrefix("ID") && table.stdout.contains("ada"))

        let shown = await run(["show", items[0].id, "--reveal"])
        #expect(shown.stdout.contains("password:  hunter2"))
        // What a command writes is the caller's: nothing of it reached this process's streams, and
        // the vault on disk is the one the injected environment named.
        let vault = try Vault.open(
            at: directory.appendingPathComponent("vault.sqlite"),
            masterPassword: "correct horse battery",
            allowInsecureKDF: true
        )
        #expect(try vault.list().credentials.map(\.user) == ["ada"])
    }

    @Test func theMasterPasswordComesFromTheInjectedInputAndIsNeverAskedFor() async throws {
        #expect(await run(["init", "--scrypt-log-n", "10"]).status == 0)
        var withoutPassword = environment
        withoutPassword["KEYHAVEN_PASSWORD"] = nil

        let fromStdin = await run(
            ["list", "--json", "--password-stdin"],
            stdin: "correct horse battery\n",
            environment: withoutPassword
        )
        #expect(fromStdin.status == 0, "\(fromStdin.stderr)")
        #expect(try JSONDecoder().decode([Summary].self, from: Data(fromStdin.stdout.utf8)).isEmpty)

        let wrong = await run(["list", "--password-stdin"], stdin: "not it\n", environment: withoutPassword)
        #expect(wrong.status == 2)
        #expect(wrong.stdout.isEmpty)
        #expect(wrong.stderr == "keyhaven: error: wrong master password\n", "\(wrong.stderr)")

        // No password anywhere: an in-process run does not prompt on the terminal, it fails.
        let none = await run(["list"], environment: withoutPassword)
        #expect(none.status == 1 && none.stderr.contains("no terminal to ask for the password"), "\(none.stderr)")
    }
}
