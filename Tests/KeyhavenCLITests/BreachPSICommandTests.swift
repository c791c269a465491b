import BreachCheck
import Foundation
import KeyhavenTesting
import Testing

/// `keyhaven breach psi build | serve` and `keyhaven audit --breach-psi` as processes, end to end.
struct BreachPSICommandTests {
    let directory: URL
    let keyhaven: CommandRunner

    init() throws {
        directory = try TemporaryDirectory.make()
        var environment = ProcessInfo.processInfo.environment
        environment["KEYHAVEN_VAULT"] = directory.appendingPathComponent("vault.sqlite").path
        environment["KEYHAVEN_PASSWORD"] = "audit master"
        environment["KEYHAVEN_INSECURE_KDF"] = "1"
        environment.removeValue(forKey: "KEYHAVEN_BREACH_INDEX")
        keyhaven = CommandRunner.keyhaven(environment: environment)
    }

    struct Report: Decodable {
        struct Item: Decodable {
            var service: String
            var issues: [String]
            var breachCount: Int?
        }
        struct Summary: Decodable {
            var credentials: Int
            var breached: Int
            var breachCheck: String
            var notices: [String]
        }
        var items: [Item]
        var summary: Summary
    }

    struct BuildSummary: Decodable {
        var digests: Int
        var entries: Int
        var badLines: Int
        var keyID: String
        var keyReused: Bool
    }

    /// The leaked corpus: the fixture's two breached passwords among 60 others, one bad line.
    func writeCorpus() throws -> URL {
        var lines = [
            "\(SHA1Digest(password: "password1").hex):12",
            "\(SHA1Digest(password: "Sunflower-Orbit-7765!").hex):3",
            "not a hash line",
        ]
        for index in 0..<60 { lines.append("\(SHA1Digest(password: "leaked-\(index)").hex):\(index + 1)") }
        let url = directory.appendingPathComponent("pwned.txt")
        try Data((lines.joined(separator: "\r\n") + "\r\n").utf8).write(to: url)
        return url
    }

    func curl(_ url: String) throws -> CommandRunner.Result {
        try CommandRunner(executable: URL(fileURLWithPath: "/usr/bin/env")).run(["curl", "-sf", "--max-time", "2", url])
    }

    @Test func buildServeAndAudit() throws {
        #expect(try keyhaven.run(["init", "--scrypt-log-n", "10", "--insecure-kdf"]).status == 0)
        let sample = Fixtures.packageRoot().appendingPathComponent(
            "Tests/SecurityRecommendationsTests/Fixtures/audit-chrome.csv"
        )
        #expect(try keyhaven.run(["import", sample.path]).status == 0)
        let source = try writeCorpus()
        let psi = directory.appendingPathComponent("psi")

        // Build: the key is new, 0600, and apart from the public files.
        let built = try keyhaven.run(["breach", "psi", "build", source.path, "--output", psi.path, "--json"])
        #expect(built.status == 0, "\(built.stderr)")
        let summary = try JSONDecoder().decode(BuildSummary.self, from: Data(built.stdout.utf8))
        #expect(summary.digests == 62 && summary.entries == 62 && summary.badLines == 1 && !summary.keyReused)
        #expect(built.stderr.contains("skipped line 3"))
        let keyFile = psi.appendingPathComponent("server.key")
        let permissions = try FileManager.default.attributesOfItem(atPath: keyFile.path)[.posixPermissions] as? Int
        #expect(permissions == 0o600)
        let scalar = Array(try Data(contentsOf: keyFile)).suffix(48).map { String(format: "%02x", $0) }.joined()
        let files = try FileManager.default.contentsOfDirectory(atPath: psi.path).sorted()
        #expect(files == ["buckets.khpsi", "public-key.hex", "server.key"])
        #expect(
            !(try String(contentsOf: psi.appendingPathComponent("public-key.hex"), encoding: .utf8)).contains(scalar)
        )
        #expect(
            !(try Data(contentsOf: psi.appendingPathComponent("buckets.khpsi"))).contains(
                Data(Array(try Data(contentsOf: keyFile)).suffix(48))
            )
        )

        // A rerun keeps the key clients know.
        let again = try keyhaven.run(["breach", "psi", "build", source.path, "--output", psi.path, "--json"])
        let second = try JSONDecoder().decode(BuildSummary.self, from: Data(again.stdout.utf8))
        #expect(again.status == 0 && second.keyReused && second.keyID == summary.keyID)

        // Serve, and audit through it.
        let port = try LoopbackPort.unused()
        let base = "http://127.0.0.1:\(port)"
        let server = Process()
        server.executableURL = keyhaven.executable
        server.arguments = ["breach", "psi", "serve", psi.path, "--port", String(port)]
        server.standardOutput = FileHandle.nullDevice
        server.standardError = FileHandle.nullDevice
        try server.run()
        defer { if server.isRunning { server.terminate() } }
        var published: CommandRunner.Result?
        for _ in 0..<100 {
            let attempt = try curl("\(base)/psi/v1/key")
            if attempt.status == 0 {
                published = attempt
                break
            }
            Thread.sleep(forTimeInterval: 0.1)
        }
        let key = try #require(published)
        #expect(key.stdout.contains(summary.keyID))
        #expect(!key.stdout.contains(scalar))
        #expect(try curl("\(base)/server.key").status != 0)

        let result = try keyhaven.run(["audit", "--json", "--no-breach-check", "--breach-psi", base])
        #expect(result.status == 64, "the options exclude each other")
        let audit = try keyhaven.run(["audit", "--json", "--breach-psi", base])
        #expect(audit.status == 0, "\(audit.stderr)")
        let report = try JSONDecoder().decode(Report.self, from: Data(audit.stdout.utf8))
        #expect(report.summary.breachCheck == "psi")
        #expect(report.summary.breached == 2)
        let forum = report.items.first { $0.service == "forum.example.org" }
        #expect(forum?.issues.contains("breached") == true && forum?.breachCount == 1)
        #expect(report.items.filter { $0.breachCount == 1 }.count == 2)
        #expect(report.items.contains { $0.breachCount == 0 })
        let table = try keyhaven.run(["audit", "--breach-psi", base])
        #expect(table.stdout.contains("Breach check: private set intersection"), "\(table.stdout)")
        #expect(report.summary.notices.contains { $0.contains("key not pinned") }, "\(report.summary.notices)")
        #expect(table.stdout.contains("key not pinned"), "\(table.stdout)")

        // Pinned: the server's key ID is accepted; another is refused and nothing is "not breached".
        let pinned = try keyhaven.run(["audit", "--json", "--breach-psi", base, "--breach-psi-key", summary.keyID])
        #expect(pinned.status == 0, "\(pinned.stderr)")
        let pinnedReport = try JSONDecoder().decode(Report.self, from: Data(pinned.stdout.utf8))
        #expect(pinnedReport.summary.breached == 2 && pinnedReport.summary.breachCheck == "psi")
        #expect(!pinnedReport.summary.notices.contains { $0.contains("not pinned") })
        let wrongPin = try keyhaven.run([
            "audit", "--json", "--breach-psi", base, "--breach-psi-key", String(repeating: "ab", count: 16),
        ])
        #expect(wrongPin.status == 0, "\(wrongPin.stderr)")
        let refused = try JSONDecoder().decode(Report.self, from: Data(wrongPin.stdout.utf8))
        #expect(refused.summary.breachCheck == "skipped")
        #expect(refused.items.allSatisfy { $0.breachCount == nil })
        #expect(refused.summary.notices.contains { $0.contains("not the pinned") && $0.contains("not checked") })

        // The server goes away: the audit degrades at once, nothing reported as not breached.
        server.terminate()
        server.waitUntilExit()
        #expect(server.terminationStatus == 0)
        let started = Date()
        let offline = try keyhaven.run(["audit", "--json", "--breach-psi", base])
        #expect(Date().timeIntervalSince(started) < 15)
        #expect(offline.status == 0, "\(offline.stderr)")
        let degraded = try JSONDecoder().decode(Report.self, from: Data(offline.stdout.utf8))
        #expect(degraded.summary.breachCheck == "skipped")
        #expect(degraded.items.allSatisfy { $0.breachCount == nil })
        #expect(
            degraded.summary.notices.contains { $0.contains("cannot reach \(base)") && $0.contains("not checked") },
            "\(degraded.summary.notices)"
        )
    }

    @Test func buildRefusesBadInput() throws {
        let missing = try keyhaven.run(["breach", "psi", "build", "/nonexistent/pwned.txt", "--output", directory.path])
        #expect(missing.status == 1 && missing.stderr.contains("cannot read /nonexistent/pwned.txt"))
        let empty = directory.appendingPathComponent("empty.txt")
        try Data("nothing here\n".utf8).write(to: empty)
        let none = try keyhaven.run([
            "breach", "psi", "build", empty.path, "--output", directory.appendingPathComponent("out").path,
        ])
        #expect(none.status == 1 && none.stderr.contains("holds no SHA-1 (1 malformed lines)"), "\(none.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("out/buckets.khpsi").path))
        let source = try writeCorpus()
        let compact = directory.appendingPathComponent("compact.khbi").path
        #expect(
            try keyhaven.run(["breach", "index", "build", source.path, "--output", compact, "--compact"]).status == 0
        )
        let fromCompact = try keyhaven.run([
            "breach", "psi", "build", compact, "--output", directory.appendingPathComponent("c").path,
        ])
        #expect(fromCompact.status == 1 && fromCompact.stderr.contains("compact index"))
        // A damaged key file is not replaced silently.
        let psi = directory.appendingPathComponent("psi")
        try FileManager.default.createDirectory(at: psi, withIntermediateDirectories: true)
        try Data("garbage".utf8).write(to: psi.appendingPathComponent("server.key"))
        let damaged = try keyhaven.run(["breach", "psi", "build", source.path, "--output", psi.path])
        #expect(damaged.status == 1 && damaged.stderr.contains("--new-key"), "\(damaged.stderr)")
        let replaced = try keyhaven.run(["breach", "psi", "build", source.path, "--output", psi.path, "--new-key"])
        #expect(replaced.status == 0, "\(replaced.stderr)")
        let permissions =
            try FileManager.default.attributesOfItem(atPath: psi.appendingPathComponent("server.key").path)[
                .posixPermissions
            ] as? Int
        #expect(permissions == 0o600)

        // A mostly malformed file builds nothing; --new-key then keeps the old key and buckets.
        let keyBefore = try Data(contentsOf: psi.appendingPathComponent("server.key"))
        let bucketsBefore = try Data(contentsOf: psi.appendingPathComponent("buckets.khpsi"))
        let mostlyBad = directory.appendingPathComponent("mostly-bad.txt")
        let badLines = (0..<20).map { "garbage \($0)" } + ["\(SHA1Digest(password: "x").hex):1"]
        try Data(badLines.joined(separator: "\n").utf8).write(to: mostlyBad)
        let refused = try keyhaven.run(["breach", "psi", "build", mostlyBad.path, "--output", psi.path, "--new-key"])
        #expect(refused.status == 1 && refused.stderr.contains("--allow-malformed"), "\(refused.stderr)")
        #expect(refused.stderr.contains("20 malformed lines and 1 SHA-1"))
        #expect(try Data(contentsOf: psi.appendingPathComponent("server.key")) == keyBefore)
        #expect(try Data(contentsOf: psi.appendingPathComponent("buckets.khpsi")) == bucketsBefore)
        let allowed = try keyhaven.run([
            "breach", "psi", "build", mostlyBad.path, "--output", psi.path, "--allow-malformed", "--json",
        ])
        #expect(allowed.status == 0, "\(allowed.stderr)")
        let counts = try JSONDecoder().decode(BuildSummary.self, from: Data(allowed.stdout.utf8))
        #expect(counts.badLines == 20 && counts.digests == 1 && counts.keyReused)
        #expect(allowed.stderr.contains("building in 1 pass(es)"))
    }

    /// Options checked before anything runs, with messages that say what to give.
    @Test func optionsAreValidated() throws {
        for (arguments, says) in [
            (["audit", "--breach-psi", "psi.example.org"], "scheme"),
            (["audit", "--breach-psi", "http://psi.example.org"], "https://"),
            (["audit", "--breach-psi", "https://psi.example.org", "--breach-psi-key", "xyz"], "key ID"),
            (["audit", "--breach-psi-key", String(repeating: "ab", count: 16)], "--breach-psi URL"),
            (["breach", "psi", "serve", directory.path, "--rate", "nan"], "--rate"),
            (["breach", "psi", "serve", directory.path, "--rate", "0"], "--rate"),
            (["breach", "psi", "serve", directory.path, "--rate", "inf"], "--rate"),
            (["breach", "psi", "serve", directory.path, "--burst", "0"], "--burst"),
            (["breach", "psi", "build", "x.txt", "--output", directory.path, "--memory", "0"], "--memory"),
            (["breach", "psi", "build", "x.txt", "--output", directory.path, "--memory", "\(Int.max)"], "--memory"),
        ] {
            let result = try keyhaven.run(arguments)
            #expect(result.status == 64 && result.stderr.contains(says), "\(arguments): \(result.stderr)")
        }
        let missing = try keyhaven.run(["breach", "psi", "serve", directory.path])
        #expect(missing.status == 1 && missing.stderr.contains("breach psi build"), "\(missing.stderr)")
    }
}
