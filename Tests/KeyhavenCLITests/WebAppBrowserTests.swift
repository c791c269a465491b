import Foundation
import KeyhavenTesting
import Testing

/// The web app end to end in headless Chromium (issue 15): `keyhaven ui` starts the agent, shiny runs
/// as a process of its own, and Tests/browser/webapp_browser.py (selenium) plays the person — and
/// the attacker. Each scenario saves screenshots (light and dark) under .build/screenshots/webapp.
/// Serialized: each scenario runs a browser, shiny and an agent, and all at once would starve a
/// 2-core machine (about 90 s in a row).
@Suite(.serialized, .enabled(if: ExternalTools.browser, ExternalTools.browserReason))
struct WebAppBrowserTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("browser/webapp_browser.py")

    @Test(
        arguments: [
            "unlock", "search", "item", "recommendations", "progressive", "upgrade", "upgrade_to_passkey", "step_up",
            "cancel",
            "generator",
            "import_preview", "export", "pairing", "settings", "lock", "attacks", "accessibility",
        ]
    )
    func scenario(_ scenario: String) async throws {
        try await Self.run(scenario)
    }

    /// The launch file and the session in Firefox ESR too (Marionette).
    @Test(.enabled(if: ExternalTools.firefox, ExternalTools.firefoxReason))
    func firefox() async throws {
        try await Self.run("firefox")
    }

    static func run(_ scenario: String) async throws {
        var environment = ProcessInfo.processInfo.environment
        let keyhaven = CommandRunner.keyhaven().executable
        environment["KEYHAVEN_BINARY"] = keyhaven.path
        environment["SHINY_BINARY"] = keyhaven.deletingLastPathComponent().appendingPathComponent("shiny").path
        let result = try await CommandRunner(executable: URL(fileURLWithPath: "/usr/bin/env"), environment: environment)
            .runDetached(["python3", script.path, scenario])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("ok \(scenario)"))
    }
}
