import Foundation
import KeyhavenTesting
import Testing

/// AutoFill end to end in real browsers (issue 14): `keyhaven agent`, `keyhaven browser-host` and
/// the extension, each scenario on a fresh vault, agent and browser profile, driven by
/// Tests/browser/autofill_browser.py (selenium + headless Chromium; Marionette + Firefox ESR).
@Suite(.enabled(if: ExternalTools.browser, ExternalTools.browserReason))
struct AutoFillBrowserTests {
    static func run(_ scenario: String) async throws -> CommandRunner.Result {
        try await BrowserScript.run("autofill_browser.py", scenario)
    }

    @Test(
        arguments: [
            "pairing", "top_page", "same_origin_frame", "cross_site_frame", "username_then_password", "late_form",
            "shadow_dom", "segmented_code", "generate_with_rules", "save_after_signup", "update_after_change",
            "locked_then_unlock", "other_passwords", "revoked_pairing",
        ]
    )
    func chromium(_ scenario: String) async throws {
        let result = try await Self.run(scenario)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("ok \(scenario)"))
    }

    /// Passkeys through Chromium's webAuthenticationProxy (issue 16): a plain page registers and
    /// signs in, every answer verified by PyPI `webauthn`; signals hide, restore and rename; a
    /// locked agent stays out of the way.
    @Test(
        .enabled(
            if: ExternalTools.python(importing: ["webauthn"]),
            "needs PyPI webauthn (scripts/install-test-deps.sh)"
        ),
        arguments: [
            "passkeys_on_a_plain_page", "passkeys_in_the_autofill_menu", "passkeys_conditional_create",
            "passkeys_wait_for_the_unlock",
            "shiny_passkeys_virtual_authenticator",
            "shiny_passkeys_with_keyhaven",
        ]
    )
    func passkeysInChromium(_ scenario: String) async throws {
        let result = try await Self.run(scenario)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("ok \(scenario)"))
    }

    @Test(.enabled(if: ExternalTools.firefox, ExternalTools.firefoxReason))
    func firefoxSmoke() async throws {
        let result = try await Self.run("firefox")
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("ok firefox"))
    }
}

/// Hostile pages (issue 26; the attacks of the 2026-11-27 security review) against the real
/// extension and agent: a page's script focuses, reads and clicks Keyhaven's UI, submits forms, covers
/// the passkey sheet, frames passkey calls; each attack fails and the honest use keeps working.
/// Driven by Tests/browser/hostile_pages.py (Chromium) and hostile_firefox.py (Firefox ESR).
@Suite(.enabled(if: ExternalTools.browser, ExternalTools.browserReason))
struct HostilePageBrowserTests {
    static func run(_ scenario: String) async throws -> CommandRunner.Result {
        try await BrowserScript.run("hostile_pages.py", scenario)
    }

    @Test(
        .enabled(
            if: ExternalTools.python(importing: ["webauthn"]),
            "needs PyPI webauthn (scripts/install-test-deps.sh)"
        ),
        arguments: [
            "steal_the_vault", "forged_request_fields", "cross_site_frame", "save_prompt", "passkey_without_the_person",
            "covered_sheet",
            "unserved_call_ends_at_once", "cross_origin_passkey_frame",
        ]
    )
    func chromium(_ scenario: String) async throws {
        let result = try await Self.run(scenario)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("ok \(scenario)"))
    }

    @Test(
        .enabled(if: ExternalTools.firefox, ExternalTools.firefoxReason),
        arguments: ["firefox_hostile_pages", "firefox_cross_origin_frames"]
    )
    func firefox(_ scenario: String) async throws {
        let result = try await Self.run(scenario)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("ok \(scenario)"))
    }
}

/// A scenario of one of Tests/browser's scripts, with the `keyhaven` binary under test.
enum BrowserScript {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("browser")

    static func run(_ name: String, _ scenario: String) async throws -> CommandRunner.Result {
        var environment = ProcessInfo.processInfo.environment
        environment["KEYHAVEN_BINARY"] = CommandRunner.keyhaven().executable.path
        return try await CommandRunner(executable: URL(fileURLWithPath: "/usr/bin/env"), environment: environment)
            .runDetached(["python3", folder.appendingPathComponent(name).path, scenario])
    }
}

/// The extension's crypto.js against the draft's CPace vectors and the protocol's own (computed with
/// PyPI `cryptography`; the Swift side is checked in CPaceTests and AutoFillVectorTests).
@Suite(.enabled(if: ExternalTools.node, ExternalTools.nodeReason))
struct ExtensionCryptoTests {
    @Test func cryptoJSReproducesTheVectors() async throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("browser/crypto_vectors_test.mjs")
        let result = try await CommandRunner(executable: URL(fileURLWithPath: "/usr/bin/env"))
            .runDetached(["node", script.path])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("ok frame 2/2 sealed"))
        #expect(result.stdout.contains("ok draft ISK_IR") && result.stdout.contains("ok pairing clientConfirm"))
    }
}
