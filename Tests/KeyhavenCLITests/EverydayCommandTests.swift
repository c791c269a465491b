import Foundation
import KeyhavenCLI
import KeyhavenTesting
import PasswordRules
import Testing

/// The everyday commands (issue 17): accounts named by site (`add SERVICE`, `show|edit|rm|copy|otp
/// SERVICE[/USER]|ID`), `otp`, `copy` with a fake clipboard tool on PATH, and passphrases.
@Suite(.offCooperativePool)
struct EverydayCommandTests {
    let directory: URL
    var environment: [String: String]

    init() throws {
        directory = try TemporaryDirectory.make()
        environment = [
            "KEYHAVEN_VAULT": directory.appendingPathComponent("vault.sqlite").path,
            "KEYHAVEN_PASSWORD": "correct horse battery",
            "KEYHAVEN_INSECURE_KDF": "1",
            "PATH": directory.appendingPathComponent("bin").path,
        ]
    }

    func run(
        _ arguments: [String],
        now: Date = Date(),
        executable: URL? = nil
    ) async -> (status: Int32, stdout: String, stderr: String) {
        let io = CommandIO(environment: environment, now: { now }, executable: executable)
        let status = await Keyhaven.run(arguments, io: io)
        return (status, io.standardOutput, io.standardError)
    }

    struct Summary: Decodable {
        var id: String
        var user: String
        var services: [String]
    }

    /// A vault with alice and bob at github.com, carol at gist.github.com, and dave at example.org
    /// (with a TOTP secret: RFC 6238's SHA-1 test key); returns their ids.
    func vault() async throws -> [String: String] {
        let created = await run(["init", "--scrypt-log-n", "10"])
        try #require(created.status == 0, "\(created.stderr)")
        var ids: [String: String] = [:]
        for (arguments, user) in [
            (["add", "github.com", "--user", "alice", "--password", "alice-secret-1"], "alice"),
            (["add", "--service", "github.com", "--user", "bob", "--password", "bob-secret-2"], "bob"),
            (["add", "gist.github.com", "--user", "carol", "--password", "carol-secret-3"], "carol"),
            (
                [
                    "add", "example.org", "--service", "app.example.org", "--user", "dave", "--password",
                    "dave-secret-4", "--totp", "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ",
                ], "dave"
            ),
        ] {
            let added = await run(arguments + ["--json"])
            try #require(added.status == 0, "\(added.stderr)")
            let summary = try JSONDecoder().decode(Summary.self, from: Data(added.stdout.utf8))
            #expect(summary.user == user)
            ids[user] = summary.id
        }
        return ids
    }

    @Test func addTakesTheServiceAsItsArgumentAndOptions() async throws {
        let ids = try await vault()
        let dave = await run(["show", ids["dave"]!, "--json"])
        let summary = try JSONDecoder().decode(Summary.self, from: Data(dave.stdout.utf8))
        #expect(summary.services == ["example.org", "app.example.org"])
        let missing = await run(["add", "--user", "x"])
        #expect(missing.status == 64 && missing.stderr.contains("keyhaven add github.com"), "\(missing.stderr)")
    }

    @Test func accountsAreNamedBySiteUserOrID() async throws {
        let ids = try await vault()
        func shownID(_ name: String) async throws -> String? {
            let shown = await run(["show", name, "--json"])
            guard shown.status == 0 else { return nil }
            return try JSONDecoder().decode(Summary.self, from: Data(shown.stdout.utf8)).id
        }
        #expect(try await shownID("github.com/alice") == ids["alice"])
        #expect(try await shownID("github.com/BOB") == ids["bob"])
        #expect(try await shownID("https://github.com/alice") == nil)  // a URL is taken whole: ambiguous
        // The best kind of match wins: gist.github.com is carol's, not a parent's.
        #expect(try await shownID("gist.github.com") == ids["carol"])
        #expect(try await shownID("app.example.org") == ids["dave"])
        #expect(try await shownID("https://example.org/login") == ids["dave"])
        #expect(try await shownID(String(ids["bob"]!.prefix(6))) == ids["bob"])
        #expect(try await shownID("EXAMPLE.ORG") == ids["dave"])

        let ambiguous = await run(["show", "github.com"])
        #expect(ambiguous.status == 1 && ambiguous.stdout.isEmpty)
        #expect(ambiguous.stderr.contains("github.com names 2 accounts; give SERVICE/USER"), "\(ambiguous.stderr)")
        for user in ["alice", "bob"] {
            #expect(ambiguous.stderr.contains("\(ids[user]!.prefix(8))  github.com  \(user)  github.com"))
        }
        #expect(!ambiguous.stderr.contains("secret"))

        let unknown = await run(["show", "nowhere.example/zed"])
        #expect(unknown.status == 1)
        #expect(unknown.stderr.contains("no account named nowhere.example/zed"), "\(unknown.stderr)")
        #expect(unknown.stderr.contains("keyhaven add nowhere.example"))
    }

    @Test func editAndRemoveTakeNames() async throws {
        let ids = try await vault()
        let edited = await run(["edit", "github.com/alice", "--user", "alice@example.com"])
        #expect(edited.status == 0, "\(edited.stderr)")
        #expect(edited.stdout.contains("Updated \(ids["alice"]!.prefix(8))"))
        let removed = await run(["rm", "gist.github.com/carol"])
        #expect(removed.status == 0 && removed.stdout.contains(String(ids["carol"]!.prefix(8))))
        // Once carol is gone, gist.github.com falls back to its parent's accounts: both github.com ones.
        let ambiguous = await run(["rm", "gist.github.com"])
        #expect(ambiguous.status == 1 && ambiguous.stderr.contains("names 2 accounts"), "\(ambiguous.stderr)")
        let listed = await run(["list", "--json"])
        #expect(!listed.stdout.contains(ids["carol"]!) && listed.stdout.contains(ids["bob"]!))
    }

    @Test func otpPrintsTheCurrentCodeAndItsLifetime() async throws {
        _ = try await vault()
        // RFC 6238, SHA-1, T = 59 s: 94287082 (8 digits), so 287082 with 6; 1 s left of the step.
        let at59 = Date(timeIntervalSince1970: 59)
        let json = await run(["otp", "example.org", "--json"], now: at59)
        #expect(json.status == 0, "\(json.stderr)")
        #expect(json.stdout == #"{"code":"287082","expiresIn":1}"# + "\n")
        let plain = await run(["otp", "example.org/dave"], now: Date(timeIntervalSince1970: 1_111_111_109))
        #expect(plain.stdout == "081804\n" && plain.stderr.contains("valid for 1 s"), "\(plain)")
        let later = await run(["otp", "example.org"], now: Date(timeIntervalSince1970: 60))
        #expect(later.stderr.contains("valid for 30 s"))

        let none = await run(["otp", "github.com/alice"])
        #expect(none.status == 1 && none.stderr.contains("keyhaven edit github.com/alice --totp"), "\(none.stderr)")
    }

    // MARK: copy

    /// Fake `xclip` (and `wl-copy`/`wl-paste`) that keep the clipboard in a file and log their
    /// arguments, and the command line of whoever runs them, to another.
    func installFakeClipboard() throws -> (clip: URL, log: URL) {
        let bin = directory.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        let clip = directory.appendingPathComponent("clipboard")
        let log = directory.appendingPathComponent("clipboard.log")
        let xclip = """
            #!/bin/sh
            { echo "args: $*"; echo "parent: $(/usr/bin/tr '\\0' ' ' < /proc/$PPID/cmdline)"; } >> '\(log.path)'
            case " $* " in
              *" -o "*) /bin/cat '\(clip.path)' ;;
              *) /bin/cat > '\(clip.path)' ;;
            esac
            """
        let path = bin.appendingPathComponent("xclip")
        try xclip.write(to: path, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: path.path)
        return (clip, log)
    }

    func waitFor(_ condition: () -> Bool) async throws -> Bool {
        for _ in 0..<100 {
            if condition() { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return condition()
    }

    @Test func copyPutsTheSecretOnTheClipboardThroughStandardInputAndClearsIt() async throws {
        _ = try await vault()
        let (clip, log) = try installFakeClipboard()
        let keyhaven = CommandRunner.keyhaven().executable
        let copied = await run(["copy", "github.com/alice", "--clear-after", "1"], executable: keyhaven)
        #expect(copied.status == 0, "\(copied.stderr)")
        #expect(copied.stdout.isEmpty && copied.stderr.contains("cleared in 1 s"))
        #expect(try String(contentsOf: clip, encoding: .utf8) == "alice-secret-1")
        // The background keyhaven reads the clipboard back and empties it.
        #expect(try await waitFor { (try? Data(contentsOf: clip))?.isEmpty == true })
        let logged = try String(contentsOf: log, encoding: .utf8)
        #expect(logged.contains("args: -selection clipboard -o"), "\(logged)")
        #expect(logged.contains("clear-clipboard --after 1 --tool xclip"), "\(logged)")
        #expect(!logged.contains("alice-secret-1"))
    }

    @Test func copyLeavesAClipboardThatChangedAlone() async throws {
        _ = try await vault()
        let (clip, log) = try installFakeClipboard()
        let keyhaven = CommandRunner.keyhaven().executable
        let copied = await run(["copy", "github.com/bob", "--clear-after", "1"], executable: keyhaven)
        #expect(copied.status == 0, "\(copied.stderr)")
        try "something else".write(to: clip, atomically: true, encoding: .utf8)
        // Wait until the background keyhaven has read the clipboard, then a moment more.
        #expect(try await waitFor { (try? String(contentsOf: log, encoding: .utf8))?.contains(" -o") == true })
        try await Task.sleep(for: .milliseconds(500))
        #expect(try String(contentsOf: clip, encoding: .utf8) == "something else")
        #expect(!(try String(contentsOf: log, encoding: .utf8)).contains("bob-secret-2"))
    }

    @Test func copyUserNameOrCodeAndNoClearing() async throws {
        _ = try await vault()
        let (clip, _) = try installFakeClipboard()
        let user = await run(["copy", "github.com/alice", "--user", "--clear-after", "0"])
        #expect(user.status == 0 && user.stderr.contains("user name"), "\(user.stderr)")
        #expect(try String(contentsOf: clip, encoding: .utf8) == "alice")
        let code = await run(
            ["copy", "example.org", "--otp", "--clear-after", "0"],
            now: Date(timeIntervalSince1970: 59)
        )
        #expect(code.status == 0, "\(code.stderr)")
        #expect(try String(contentsOf: clip, encoding: .utf8) == "287082")
        let both = await run(["copy", "example.org", "--otp", "--user"])
        #expect(both.status == 64)
    }

    @Test func copyWithoutAClipboardToolSaysWhatToInstall() async throws {
        _ = try await vault()
        let copied = await run(["copy", "github.com/alice"])
        #expect(copied.status == 1)
        #expect(copied.stderr.contains("install wl-clipboard (Wayland) or xclip or xsel"), "\(copied.stderr)")
    }

    // MARK: passphrases

    struct Generated: Decodable {
        var passwords: [String]
        var style: String
        var source: String
        var bits: Double
    }

    @Test func generateWordsMakesPassphrasesWithTheirEntropy() async throws {
        let json = await run(["generate", "--words", "6", "-n", "2", "--separator", ".", "--json"])
        #expect(json.status == 0, "\(json.stderr)")
        let report = try JSONDecoder().decode(Generated.self, from: Data(json.stdout.utf8))
        let list = Set(Passphrase.wordList)
        #expect(report.passwords.count == 2 && report.bits == 77.5 && report.style == "passphrase")
        #expect(report.source == "eff-large-wordlist")
        for phrase in report.passwords {
            // Words may contain "-" themselves (t-shirt): a separator no word has.
            let words = phrase.split(separator: ".").map(String.init)
            #expect(words.count == 6 && words.allSatisfy(list.contains), "\(phrase)")
        }
        let spaced = await run(["generate", "--words", "4", "--separator", " "])
        let words = spaced.stdout.trimmingCharacters(in: .newlines).split(separator: " ").map(String.init)
        #expect(words.count == 4 && words.allSatisfy(list.contains), "\(spaced.stdout)")
        #expect(spaced.stderr.contains("51.7 bits of entropy"), "\(spaced.stderr)")
        #expect(await run(["generate", "--words", "0"]).status == 64)
        #expect(await run(["generate", "--words", "3", "--domain", "example.com"]).status == 64)
        #expect(await run(["generate", "--separator", "."]).status == 64)
    }
}
