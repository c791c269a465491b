import Foundation
import KeyhavenTesting
import OneTimeCodes
import ShinyService
import Testing
import Vault

/// The step-up page in real headless Chromium (Debian `chromium` + `chromium-driver`, `selenium` from
/// PyPI): `keyhaven upgrade` prints shiny's page and waits; a browser confirms (or cancels) it.
@Suite(.enabled(if: ExternalTools.browser, ExternalTools.browserReason))
struct StepUpBrowserTests {
    struct Setup {
        var shiny: Shiny
        var origin: String
        var secret: String
        var keyhaven: CommandRunner
        var vaultURL: URL
        var server: Task<Void, any Error>
    }

    static func setUp() async throws -> Setup {
        let shiny = try Shiny(configuration: .init(scryptLogN: 10))
        let (origin, server) = try await shiny.start()
        let secret = try #require(try shiny.createAccount(user: "bob", password: "Welcome12345", totp: true))
        let directory = try TemporaryDirectory.make()
        let vaultURL = directory.appendingPathComponent("vault.sqlite")
        var environment = ProcessInfo.processInfo.environment
        environment["KEYHAVEN_VAULT"] = vaultURL.path
        environment["KEYHAVEN_PASSWORD"] = "browser master"
        // The test vaults use scrypt N=2^10 (init --insecure-kdf); every command opts in to open them.
        environment["KEYHAVEN_INSECURE_KDF"] = "1"
        environment.removeValue(forKey: "DISPLAY")
        environment.removeValue(forKey: "BROWSER")
        let keyhaven = CommandRunner.keyhaven(environment: environment)
        #expect(try await keyhaven.runDetached(["init", "--scrypt-log-n", "10", "--insecure-kdf"]).status == 0)
        #expect(
            try await keyhaven.runDetached(["add", "--service", origin, "--user", "bob", "--password", "Welcome12345"])
                .status == 0
        )
        return Setup(
            shiny: shiny,
            origin: origin,
            secret: secret,
            keyhaven: keyhaven,
            vaultURL: vaultURL,
            server: server
        )
    }

    /// Starts `keyhaven upgrade` and returns it with the step-up URL it printed.
    static func startUpgrade(
        _ setup: Setup,
        browser: String? = nil
    ) async throws -> (Process, Pipe, Pipe, String) {
        try await CommandRunner.detached { try startUpgradeBlocking(setup, browser: browser) }
    }

    /// With `browser`, Keyhaven is left to open the page with it (`$BROWSER`); otherwise `--no-browser`.
    static func startUpgradeBlocking(_ setup: Setup, browser: String?) throws -> (Process, Pipe, Pipe, String) {
        let process = Process()
        process.executableURL = setup.keyhaven.executable
        process.arguments = ["upgrade", setup.origin, "--user", "bob"] + (browser == nil ? ["--no-browser"] : [])
        process.environment = setup.keyhaven.environment
        if let browser { process.environment?["BROWSER"] = browser }
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        var text = ""
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            let chunk = errors.fileHandleForReading.availableData
            text += String(decoding: chunk, as: UTF8.self)
            if let range = text.range(of: #"http://\S+/step-up/\S+"#, options: .regularExpression) {
                return (process, output, errors, String(text[range]))
            }
            if chunk.isEmpty && !process.isRunning { break }
        }
        process.terminate()
        throw BrowserTestError(message: "keyhaven printed no step-up URL: \(text)")
    }

    struct BrowserTestError: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    static func browser(_ url: String, _ secret: String, _ action: String) async throws -> CommandRunner.Result {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "Browser/step_up.py"
        )
        return try await CommandRunner(executable: URL(fileURLWithPath: "/usr/bin/env"))
            .runDetached(["python3", script.path, url, secret, action])
    }

    @Test func confirmingInChromiumCompletesTheUpgrade() async throws {
        let setup = try await Self.setUp()
        defer { setup.server.cancel() }
        let (process, output, _, url) = try await Self.startUpgrade(setup)
        let browser = try await Self.browser(url, setup.secret, "confirm")
        #expect(browser.status == 0, "\(browser.stdout) \(browser.stderr)")
        try await CommandRunner.detached { process.waitUntilExit() }
        let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus == 0)
        #expect(printed.contains("Upgraded bob"))
        let vault = try Vault.open(at: setup.vaultURL, masterPassword: "browser master", allowInsecureKDF: true)
        let password = try #require(try vault.credentials(forService: setup.origin).credentials.first?.password)
        #expect(password != "Welcome12345")
        #expect(
            try setup.shiny.signIn(user: "bob", password: password, code: TOTP(secret: setup.secret).code(at: Date()))
        )
    }

    /// Ctrl-C while Keyhaven waits: the request is cancelled on the service (its extension's
    /// `cancelRequest` runs), the step-up page is gone, and the vault and the account keep the old
    /// password. The page was handed to `$BROWSER`.
    @Test func ctrlCCancelsTheRequestOnTheService() async throws {
        let setup = try await Self.setUp()
        defer { setup.server.cancel() }
        let directory = try TemporaryDirectory.make()
        let opened = directory.appendingPathComponent("opened.txt")
        let browser = directory.appendingPathComponent("browser.sh")
        try "#!/bin/sh\nprintf '%s' \"$1\" > '\(opened.path)'\n".write(to: browser, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: browser.path)

        let (process, _, errors, url) = try await Self.startUpgrade(setup, browser: browser.path)
        let requestId = try #require(url.split(separator: "/").last.map(String.init))
        #expect(await setup.shiny.cancelledRequests.isEmpty)
        process.interrupt()
        try await CommandRunner.detached { process.waitUntilExit() }
        let printed = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)

        #expect(process.terminationReason == .exit && process.terminationStatus == 1, "\(printed)")
        #expect(printed.contains("cancelling the request on the service"))
        #expect(printed.contains("cancelled: bob on \(setup.origin) keeps its password"))
        #expect(await setup.shiny.cancelledRequests == [requestId])
        let page = try await CommandRunner(executable: URL(fileURLWithPath: "/usr/bin/env")).runDetached([
            "python3", "-c",
            "import sys, urllib.request, urllib.error\ntry: print(urllib.request.urlopen(sys.argv[1]).status)\n"
                + "except urllib.error.HTTPError as e: print(e.code)",
            url,
        ])
        #expect(page.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "404")
        #expect((try? String(contentsOf: opened, encoding: .utf8)) == url)
        let vault = try Vault.open(at: setup.vaultURL, masterPassword: "browser master", allowInsecureKDF: true)
        #expect(try vault.credentials(forService: setup.origin).credentials.first?.password == "Welcome12345")
        #expect(try vault.pendingUpgrades().isEmpty)
        #expect(
            try setup.shiny.signIn(
                user: "bob",
                password: "Welcome12345",
                code: TOTP(secret: setup.secret).code(at: Date())
            )
        )
    }

    @Test func cancellingOnThePageEndsAsUserCanceled() async throws {
        let setup = try await Self.setUp()
        defer { setup.server.cancel() }
        let (process, _, errors, url) = try await Self.startUpgrade(setup)
        let browser = try await Self.browser(url, setup.secret, "cancel")
        #expect(browser.status == 0, "\(browser.stdout) \(browser.stderr)")
        try await CommandRunner.detached { process.waitUntilExit() }
        let printed = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus == 1)
        #expect(printed.contains("cancelled: bob on \(setup.origin) keeps its password"))
        let vault = try Vault.open(at: setup.vaultURL, masterPassword: "browser master", allowInsecureKDF: true)
        #expect(try vault.credentials(forService: setup.origin).credentials.first?.password == "Welcome12345")
    }
}
