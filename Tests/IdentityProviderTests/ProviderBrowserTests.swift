import Foundation
import IdentityProviderTestSupport
import KeyhavenTesting
import ShinyService
import Testing

/// The provider's sign-in, consent and account pages in real headless Chromium (Debian `chromium` +
/// `chromium-driver`, `selenium` from PyPI), with shiny as the service.
@Suite(.offCooperativePool, .enabled(if: ExternalTools.browser, ExternalTools.browserReason))
struct ProviderBrowserTests {
    @Test func signInConsentAndAccountPagesInChromium() async throws {
        try await SignInUpgradeTests.with { setup in
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .appendingPathComponent("Browser/provider_pages.py")
            let result = try await CommandRunner(executable: URL(fileURLWithPath: "/usr/bin/env")).runDetached([
                "python3", script.path, setup.origin, setup.harness.baseURL, "com.example.shiny.web",
                setup.harness.email, setup.harness.password,
            ])
            #expect(result.status == 0, "\(result.stdout) \(result.stderr)")
            #expect(result.stdout.hasPrefix("OK"))
            try await SignInUpgradeTests.waitFor { !setup.shiny.receivedNotifications.isEmpty }
            #expect(setup.shiny.receivedNotifications.map(\.type) == ["consent-revoked"])
        }
    }
}
