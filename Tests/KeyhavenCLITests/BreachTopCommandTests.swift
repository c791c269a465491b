import BreachCheck
import Foundation
import KeyhavenTesting
import Testing

/// `keyhaven breach top` and the audit's local list, as processes: a password on the list is
/// reported breached while the breach-PSI server is down; a wrong list is an error, never a quiet
/// "not breached".
struct BreachTopCommandTests {
    let psi: BreachPSICommandTests

    init() throws {
        psi = try BreachPSICommandTests()
    }

    struct Report: Decodable {
        struct Item: Decodable {
            var service: String
            var breachCount: Int?
            var breachSource: String?
        }
        struct Summary: Decodable {
            var breached: Int
            var breachCheck: String
            var notices: [String]
        }
        var items: [Item]
        var summary: Summary
    }

    struct TopSummary: Decodable {
        var hashes, hashesRead, badLines, smallestCount: Int
        var output: String
    }

    @Test func theListAnswersWhileTheServerIsDown() throws {
        let keyhaven = psi.keyhaven
        #expect(try keyhaven.run(["init", "--scrypt-log-n", "10", "--insecure-kdf"]).status == 0)
        let sample = Fixtures.packageRoot().appendingPathComponent(
            "Tests/SecurityRecommendationsTests/Fixtures/audit-chrome.csv"
        )
        #expect(try keyhaven.run(["import", sample.path]).status == 0)
        // password1 (12) is among the 50 most common of the corpus; Sunflower-Orbit-7765! (3) is not.
        let source = try psi.writeCorpus()
        let built = try keyhaven.run(["breach", "top", source.path, "--top", "50", "--json"])
        #expect(built.status == 0, "\(built.stderr)")
        let summary = try JSONDecoder().decode(TopSummary.self, from: Data(built.stdout.utf8))
        let defaultList = psi.directory.appendingPathComponent("pwned-top.khbi")
        #expect(summary.output == defaultList.path, "beside the vault, where the audit looks")
        #expect(
            summary.hashes == 50 && summary.hashesRead == 62 && summary.badLines == 1 && summary.smallestCount == 12
        )
        #expect(built.stderr.contains("skipped line 3"))
        // The key of the audit's stand-ins, beside the list, private.
        let standInKey = defaultList.path + ".stand-in-key"
        #expect(try FileManager.default.attributesOfItem(atPath: standInKey)[.posixPermissions] as? Int == 0o600)

        // Nothing listens on this port: the server is down.
        let down = "http://127.0.0.1:\(try LoopbackPort.unused())"
        let audit = try keyhaven.run(["audit", "--json", "--breach-psi", down])
        #expect(audit.status == 0, "\(audit.stderr)")
        let report = try JSONDecoder().decode(Report.self, from: Data(audit.stdout.utf8))
        #expect(report.summary.breachCheck == "skipped")
        #expect(report.summary.breached == 1)
        let forum = report.items.first { $0.service == "forum.example.org" }
        // The list's count (12 seen: 8, its power of two), never a placeholder.
        #expect(forum?.breachCount == 8 && forum?.breachSource == "local-list")
        #expect(report.items.filter { $0.service != "forum.example.org" }.allSatisfy { $0.breachCount == nil })
        #expect(
            report.summary.notices.contains { $0.contains("not checked") && $0.contains("1 found in the local list") },
            "\(report.summary.notices)"
        )

        // The text says what is known: found on the device, seen at least the list's count; never
        // the private check's placeholder "(seen 1×)".
        let text = try keyhaven.run(["audit", "--breach-psi", down])
        #expect(text.status == 0, "\(text.stderr)")
        let forumLine = text.stdout.split(separator: "\n").first { $0.contains("forum.example.org") } ?? ""
        #expect(forumLine.contains("found on this device; seen at least 8×)"), "\(text.stdout)")
        #expect(!text.stdout.contains("seen 1×"), "\(text.stdout)")

        // The same list given by name, then wrong lists: errors that say what to do, no report.
        let named = try keyhaven.run(["audit", "--json", "--breach-psi", down, "--breach-top", defaultList.path])
        #expect(named.status == 0 && named.stdout.contains("local-list"), "\(named.stderr)")
        let truncated = psi.directory.appendingPathComponent("truncated.khbi")
        try Data(try Data(contentsOf: defaultList).prefix(200)).write(to: truncated)
        for wrong in [source.path, truncated.path, psi.directory.appendingPathComponent("missing.khbi").path] {
            let result = try keyhaven.run(["audit", "--json", "--breach-psi", down, "--breach-top", wrong])
            #expect(result.status == 1 && result.stdout.isEmpty, "\(wrong): \(result.stdout)")
            #expect(
                result.stderr.contains("local list") && result.stderr.contains("keyhaven breach top"),
                "\(result.stderr)"
            )
        }
        // A damaged list at the default place is an error too, not skipped quietly.
        try Data("garbage".utf8).write(to: defaultList)
        let damaged = try keyhaven.run(["audit", "--json", "--breach-psi", down])
        #expect(damaged.status == 1 && damaged.stderr.contains(defaultList.path), "\(damaged.stderr)")
    }

    @Test func badInputAndOptions() throws {
        let keyhaven = psi.keyhaven
        let source = try psi.writeCorpus()
        let list = psi.directory.appendingPathComponent("top.khbi").path
        #expect(try keyhaven.run(["breach", "top", source.path, "--output", list]).status == 0)
        let fromIndex = try keyhaven.run(["breach", "top", list, "--output", list + "2"])
        #expect(fromIndex.status == 1 && fromIndex.stderr.contains("text file"), "\(fromIndex.stderr)")
        let mostlyBad = psi.directory.appendingPathComponent("mostly-bad.txt")
        let lines = (0..<20).map { "garbage \($0)" } + ["\(SHA1Digest(password: "x").hex):1"]
        try Data(lines.joined(separator: "\n").utf8).write(to: mostlyBad)
        let before = try Data(contentsOf: URL(fileURLWithPath: list))
        let refused = try keyhaven.run(["breach", "top", mostlyBad.path, "--output", list])
        #expect(refused.status == 1 && refused.stderr.contains("--allow-malformed"), "\(refused.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: list)) == before)
        #expect(try keyhaven.run(["breach", "top", mostlyBad.path, "--output", list, "--allow-malformed"]).status == 0)
        for (arguments, says) in [
            (["breach", "top", source.path, "--top", "0"], "--top"),
            (["audit", "--breach-top", list], "--breach-psi URL"),
        ] {
            let result = try keyhaven.run(arguments)
            #expect(result.status == 64 && result.stderr.contains(says), "\(arguments): \(result.stderr)")
        }
    }

    /// `keyhaven --vault X breach top` writes the list beside X, where `keyhaven --vault X audit`
    /// looks for it (it went beside $KEYHAVEN_VAULT, so that audit sent every password to the server).
    @Test func theGlobalVaultPlacesTheList() throws {
        let keyhaven = psi.keyhaven
        let other = try TemporaryDirectory.make()
        let vault = other.appendingPathComponent("other.sqlite").path
        #expect(try keyhaven.run(["--vault", vault, "init", "--scrypt-log-n", "10", "--insecure-kdf"]).status == 0)
        let sample = Fixtures.packageRoot().appendingPathComponent(
            "Tests/SecurityRecommendationsTests/Fixtures/audit-chrome.csv"
        )
        #expect(try keyhaven.run(["--vault", vault, "import", sample.path]).status == 0)
        let source = try psi.writeCorpus()
        let built = try keyhaven.run(["--vault", vault, "breach", "top", source.path, "--top", "50", "--json"])
        #expect(built.status == 0, "\(built.stderr)")
        let summary = try JSONDecoder().decode(TopSummary.self, from: Data(built.stdout.utf8))
        #expect(summary.output == other.appendingPathComponent("pwned-top.khbi").path)
        #expect(!FileManager.default.fileExists(atPath: psi.directory.appendingPathComponent("pwned-top.khbi").path))
        let down = "http://127.0.0.1:\(try LoopbackPort.unused())"
        let audit = try keyhaven.run(["--vault", vault, "audit", "--json", "--breach-psi", down])
        #expect(audit.status == 0, "\(audit.stderr)")
        let report = try JSONDecoder().decode(Report.self, from: Data(audit.stdout.utf8))
        #expect(report.items.first { $0.service == "forum.example.org" }?.breachSource == "local-list")
    }

    /// `--output` naming a directory: an error naming it, and the directory and its file intact (it
    /// was deleted recursively before), for `breach top` and `breach index build`.
    @Test func aDirectoryOutputIsRefused() throws {
        let keyhaven = psi.keyhaven
        let source = try psi.writeCorpus()
        let documents = psi.directory.appendingPathComponent("Documents")
        try FileManager.default.createDirectory(at: documents, withIntermediateDirectories: true)
        let kept = documents.appendingPathComponent("thesis.txt")
        try Data("my thesis".utf8).write(to: kept)
        for command in [["breach", "top"], ["breach", "index", "build"]] {
            let result = try keyhaven.run(command + [source.path, "--output", documents.path])
            #expect(result.status == 1, "\(command): \(result.stdout)")
            #expect(result.stderr.contains(documents.path) && result.stderr.contains("directory"), "\(result.stderr)")
            #expect(try Data(contentsOf: kept) == Data("my thesis".utf8), "\(command)")
        }
    }
}
