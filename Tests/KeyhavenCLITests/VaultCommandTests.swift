import Foundation
import KeyhavenTesting
import Testing
import Vault

/// `keyhaven init | add | list | show | search | edit | rm | restore | import | export | passwd`,
/// end to end against the built binary.
struct VaultCommandTests {
    let directory: URL
    let keyhaven: CommandRunner
    var vaultPath: String { directory.appendingPathComponent("vault.sqlite").path }

    init() throws {
        directory = try TemporaryDirectory.make()
        var environment = ProcessInfo.processInfo.environment
        environment["KEYHAVEN_VAULT"] = directory.appendingPathComponent("vault.sqlite").path
        environment["KEYHAVEN_PASSWORD"] = "correct horse battery"
        // The test vaults use scrypt N=2^10 (init --insecure-kdf); every command opts in to open them.
        environment["KEYHAVEN_INSECURE_KDF"] = "1"
        environment.removeValue(forKey: "KEYHAVEN_NEW_PASSWORD")
        keyhaven = CommandRunner.keyhaven(environment: environment)
    }

    func initVault() async throws {
        let result = try await keyhaven.runDetached(["init", "--scrypt-log-n", "10", "--insecure-kdf"])
        #expect(result.status == 0, "\(result.stderr)")
    }

    struct Summary: Decodable {
        var id: String
        var services: [String]
        var user: String
        var title: String
        var password: String?
    }

    func list() async throws -> [Summary] {
        let result = try await keyhaven.runDetached(["list", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        return try JSONDecoder().decode([Summary].self, from: Data(result.stdout.utf8))
    }

    @Test func addListShowEditRemoveRestore() async throws {
        try await initVault()
        let added = try await keyhaven.runDetached([
            "add", "--service", "https://example.com/login", "--user", "alice", "--password", "hunter2",
        ])
        #expect(added.status == 0, "\(added.stderr)")
        let items = try await list()
        #expect(items.count == 1)
        #expect(items[0].services == ["https://example.com/login"])
        #expect(items[0].user == "alice")
        #expect(items[0].password == nil)
        let id = items[0].id

        let hidden = try await keyhaven.runDetached(["show", String(id.prefix(8))])
        #expect(!hidden.stdout.contains("hunter2"))
        let revealed = try await keyhaven.runDetached(["show", String(id.prefix(8)), "--reveal"])
        #expect(revealed.stdout.contains("password:  hunter2"))

        #expect(try await keyhaven.runDetached(["edit", id, "--password", "better-one"]).status == 0)
        let json = try await keyhaven.runDetached(["show", id, "--json", "--reveal"])
        #expect(json.stdout.contains("better-one") && json.stdout.contains("hunter2"))  // current + history

        // A service lookup finds the domain, its subdomains and its parents.
        #expect(try await keyhaven.runDetached(["search", "example.com"]).stdout.contains(String(id.prefix(8))))
        #expect(try await keyhaven.runDetached(["search", "login.example.com"]).stdout.contains(String(id.prefix(8))))
        #expect(!(try await keyhaven.runDetached(["search", "example.org"]).stdout.contains(String(id.prefix(8)))))
        #expect(try await keyhaven.runDetached(["search", "--text", "ALIC"]).stdout.contains(String(id.prefix(8))))

        #expect(try await keyhaven.runDetached(["rm", id]).status == 0)
        #expect(try await list().isEmpty)
        #expect(try await keyhaven.runDetached(["list", "--deleted"]).stdout.contains(String(id.prefix(8))))
        #expect(try await keyhaven.runDetached(["restore", id]).status == 0)
        #expect(try await list().count == 1)
    }

    /// `keyhaven --vault PATH idp …` opens PATH like every other vault command (it used to fall back
    /// to `$KEYHAVEN_VAULT`).
    @Test func servicesWithControlCharactersAreUsageErrors() async throws {
        try await initVault()
        let added = try await keyhaven.runDetached([
            "add", "--service", "https://a.example\nb.example", "--password", "x",
        ])
        #expect(added.status == 64)
        #expect(added.stderr.contains("control characters") && added.stderr.contains("\\n"))
        #expect(try await list().isEmpty)
        #expect(try await keyhaven.runDetached(["add", "--service", "a.example", "--password", "x"]).status == 0)
        let id = try #require(try await list().first).id
        let edited = try await keyhaven.runDetached(["edit", id, "--add-service", "b.example\u{1B}[2J"])
        #expect(edited.status == 64)
        #expect(try await list().first?.services == ["a.example"])
    }

    @Test func theGlobalVaultOptionReachesIdpCommands() async throws {
        let elsewhere = directory.appendingPathComponent("other.sqlite").path
        let created = try await keyhaven.runDetached([
            "--vault", elsewhere, "init", "--scrypt-log-n", "10", "--insecure-kdf",
        ])
        #expect(created.status == 0, "\(created.stderr)")
        // $KEYHAVEN_VAULT names a file that does not exist: only --vault can make this work.
        let services = try await keyhaven.runDetached(["--vault", elsewhere, "idp", "services", "--json"])
        #expect(!services.stderr.contains("no vault"), "\(services.stderr)")
        #expect(services.stderr.contains("not signed in"), "\(services.stderr)")
    }

    @Test func wrongMasterPasswordExitsTwoAndTouchesNothing() async throws {
        try await initVault()
        #expect(try await keyhaven.runDetached(["add", "--service", "example.com", "--password", "x"]).status == 0)
        let before = FileManager.default.contents(atPath: vaultPath)
        let result = try await keyhaven.runDetached(["list"], extraEnvironment: ["KEYHAVEN_PASSWORD": "wrong"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("wrong master password"))
        #expect(FileManager.default.contents(atPath: vaultPath) == before)
    }

    @Test func masterPasswordFromStandardInput() async throws {
        try await initVault()
        let result = try await keyhaven.runDetached(
            ["list", "--password-stdin"],
            stdin: "correct horse battery\n",
            extraEnvironment: ["KEYHAVEN_PASSWORD": ""]
        )
        #expect(result.status == 0, "\(result.stderr)")
        let changed = try await keyhaven.runDetached(
            ["passwd", "--password-stdin", "--scrypt-log-n", "10", "--insecure-kdf"],
            stdin: "correct horse battery\nnew master password\n",
            extraEnvironment: ["KEYHAVEN_PASSWORD": ""]
        )
        #expect(changed.status == 0, "\(changed.stderr)")
        #expect(try await keyhaven.runDetached(["list"]).status == 2)
        #expect(
            try await keyhaven.runDetached(["list"], extraEnvironment: ["KEYHAVEN_PASSWORD": "new master password"])
                .status == 0
        )
    }

    @Test func initNeverOverwrites() async throws {
        try await initVault()
        let again = try await keyhaven.runDetached(["init", "--scrypt-log-n", "10", "--insecure-kdf"])
        #expect(again.status == 1)
        #expect(again.stderr.contains("already exists"))
        let text = directory.appendingPathComponent("notes.txt")
        try Data("my notes".utf8).write(to: text)
        let foreign = try await keyhaven.runDetached(["list", "--vault", text.path])
        #expect(foreign.status == 1)
        #expect(foreign.stderr.contains("not a Keyhaven vault"))
        #expect(try Data(contentsOf: text) == Data("my notes".utf8))
    }

    /// Security review Low #20: text from elsewhere reaches the terminal with its control characters
    /// neutralised — here a name given on the command line, echoed in the error message, carrying
    /// sequences that would clear the screen and retitle the window.
    @Test func errorMessagesNeutraliseEscapeSequences() async throws {
        try await initVault()
        let hostile = "evil\u{1B}[2J\u{1B}]0;pwned\u{07}\u{202E}site"
        let result = try await keyhaven.runDetached(["show", hostile])
        #expect(result.status != 0)
        #expect(!result.stderr.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 || $0.value == 0x202E })
        #expect(result.stderr.contains("evil\\u{1B}[2J\\u{1B}]0;pwned\\u{7}\\u{202E}site"), "\(result.stderr)")
    }

    @Test func importReportsBrokenRowsAndExportRoundTrips() async throws {
        try await initVault()
        let broken = Fixtures.packageRoot().appendingPathComponent("Tests/VaultTests/Fixtures/imports/broken-1000.csv")
        // A dry run reports the same counts and writes nothing.
        let dryRun = try await keyhaven.runDetached(["import", broken.path, "--dry-run"])
        #expect(dryRun.status == 0, "\(dryRun.stderr)")
        #expect(dryRun.stdout.contains("Would import 995 credentials"), "\(dryRun.stdout)")
        #expect(dryRun.stdout.contains("Nothing was written"))
        #expect(try await list().isEmpty)
        let result = try await keyhaven.runDetached(["import", broken.path, "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        struct Report: Decodable {
            struct Problem: Decodable {
                struct Location: Decodable { var line: Int? }
                var location: Location
                var reason: String
            }
            var imported: Int
            var skipped: [Problem]
        }
        let report = try JSONDecoder().decode(Report.self, from: Data(result.stdout.utf8))
        #expect(report.imported == 995)
        #expect(report.skipped.compactMap(\.location.line) == [137, 402, 588, 771, 950])

        for format in ["csv", "bitwarden-json", "cxf"] {
            let file = directory.appendingPathComponent("export.\(format)")
            let export = try await keyhaven.runDetached(["export", "--format", format, "--output", file.path])
            #expect(export.status == 0, "\(export.stderr)")
            let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
            // Into a second vault: the same credentials come back.
            let other = directory.appendingPathComponent("other-\(format).sqlite").path
            #expect(
                try await keyhaven.runDetached(["init", "--vault", other, "--scrypt-log-n", "10", "--insecure-kdf"])
                    .status == 0
            )
            let reimport = try await keyhaven.runDetached(["import", file.path, "--vault", other])
            #expect(reimport.stdout.contains("Imported 995 credentials"), "\(reimport.stdout)")
            // Exporting the copy gives the same file (ids and dates aside, CSV has neither).
            if format == "csv" {
                let again = try await keyhaven.runDetached(["export", "--format", "csv", "--vault", other])
                #expect(again.stdout == String(decoding: try Data(contentsOf: file), as: UTF8.self))
            }
        }
        let exists = try await keyhaven.runDetached([
            "export", "--format", "csv", "--output", directory.appendingPathComponent("export.csv").path,
        ])
        #expect(exists.status == 1 && exists.stderr.contains("already exists"))
    }

    /// Two processes adding 100 credentials each at the same time: 200 credentials, no error.
    /// (Each `add` is a process start, a key derivation and a write, about 0.19 s in a debug build:
    /// the two shells overlap for some 20 s, enough to collide on every write; 500 each took
    /// three minutes of CI.)
    @Test func twoProcessesAddingAtOnce() async throws {
        try await initVault()
        let runner = keyhaven
        try await withThrowingTaskGroup(of: [Int32].self) { group in
            for process in 0..<2 {
                group.addTask {
                    var statuses: [Int32] = []
                    // One shell runs 100 `keyhaven add` in sequence; two shells run side by side.
                    let script = """
                        for i in $(seq 1 100); do
                          "\(runner.executable.path)" add --service "p\(process)-$i.example.com" --user u$i --password pw$i >/dev/null || echo "FAIL $i" >&2
                        done
                        """
                    let shell = CommandRunner(
                        executable: URL(fileURLWithPath: "/bin/sh"),
                        environment: runner.environment
                    )
                    let result = try await shell.runDetached(["-c", script])
                    statuses.append(result.status)
                    #expect(result.stderr.isEmpty, "process \(process): \(result.stderr.prefix(500))")
                    return statuses
                }
            }
            for try await statuses in group {
                #expect(statuses == [0])
            }
        }
        let items = try await list()
        #expect(items.count == 200)
        #expect(Set(items.map(\.services[0])).count == 200)
    }
}
