import Foundation
import KeyhavenTesting
import Testing

/// The scripts the servers and the extension send to browsers (`.js` files, never Swift strings)
/// pass `scripts/lint-browser-scripts.mjs`: each parses (`node --check`), none writes markup
/// (`innerHTML` …) or runs a string as code (`eval` …), and no page has an inline script or
/// handler. The lint itself is checked on a bad script, so a green run means something.
@Suite(.enabled(if: ExternalTools.node, ExternalTools.nodeReason))
struct BrowserScriptTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let lint = root.appendingPathComponent("scripts/lint-browser-scripts.mjs").path

    static func lint(_ files: [String] = []) async throws -> CommandRunner.Result {
        try await CommandRunner(executable: URL(fileURLWithPath: "/usr/bin/env")).runDetached(["node", lint] + files)
    }

    @Test func everyBrowserScriptParsesAndWritesNoMarkup() async throws {
        let result = try await Self.lint()
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("files ok"))
        // The apps' scripts are among them, as files of their own.
        for script in [
            "Sources/KeyhavenWebApp/Resources/app.js", "Sources/ShinyService/Resources/shiny-passkeys.js",
            "Sources/IdentityProviderServer/Resources/handoff.js",
        ] {
            let single = try await Self.lint([Self.root.appendingPathComponent(script).path])
            #expect(single.status == 0 && single.stdout.contains("1 files ok"), "\(script): \(single.stderr)")
        }
    }

    @Test func theLintRefusesABadScriptAndAnInlineHandler() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("lint-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let script = folder.appendingPathComponent("bad.js")
        try """
        // innerHTML in a comment is fine
        const list = document.getElementById("list");
        list.innerHTML = location.hash;
        setTimeout("run()", 10);
        eval(location.hash);
        """.write(to: script, atomically: true, encoding: .utf8)
        let broken = folder.appendingPathComponent("broken.js")
        try "const x = ;\n".write(to: broken, atomically: true, encoding: .utf8)
        let page = folder.appendingPathComponent("page.html")
        try #"<button onclick="go()">Go</button><script>go()</script><script src="ok.js"></script>"#
            .write(to: page, atomically: true, encoding: .utf8)
        let result = try await Self.lint([script.path, broken.path, page.path])
        #expect(result.status == 1)
        #expect(result.stderr.contains("bad.js:3: writes markup"))
        #expect(result.stderr.contains("bad.js:4: a timer given a string"))
        #expect(result.stderr.contains("bad.js:5: eval runs a string"))
        #expect(!result.stderr.contains("bad.js:1:"), "comments are not code")
        #expect(result.stderr.contains("broken.js: does not parse"))
        #expect(result.stderr.contains("page.html:1: an inline event handler"))
        #expect(result.stderr.contains("page.html:1: an inline <script>"))
        #expect(result.stderr.contains("6 problem(s) in 3 files"))
    }
}
