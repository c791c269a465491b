import Foundation
public import Testing

/// Outside programs some suites drive (Chromium with its driver and selenium, python packages that
/// are real clients of our tokens). Plain `swift test` skips those suites with a visible reason when
/// a tool is missing; `scripts/test.sh` installs them and sets `KEYHAVEN_REQUIRE_EXTERNAL_TOOLS=1`,
/// so there a missing tool fails the suite instead of skipping it.
///
/// ```swift
/// @Suite(.enabled(if: ExternalTools.browser, ExternalTools.browserReason))
/// ```
public enum ExternalTools {
    /// Whether suites must run even when a tool seems missing (scripts/test.sh).
    public static let required = ProcessInfo.processInfo.environment["KEYHAVEN_REQUIRE_EXTERNAL_TOOLS"] == "1"

    /// Headless Chromium, chromedriver and python's selenium.
    public static let browser: Bool =
        required
        || (onPath("chromium") || onPath("chromium-browser")) && onPath("chromedriver")
            && python(importing: ["selenium"])
    public static let browserReason: Comment =
        "needs chromium, chromium-driver and python3 selenium (scripts/install-test-deps.sh installs them)"

    /// python3 with the given modules importable.
    public static func python(importing modules: [String]) -> Bool {
        if required { return true }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", "import " + (["sys"] + modules).joined(separator: ", ")]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do {
            try process.run()
            process.waitUntilExit()
            return process.terminationStatus == 0
        } catch {
            return false
        }
    }

    /// Real clients of our tokens: requests, PyJWT, joserfc, authlib.
    public static let pythonClients = python(importing: ["requests", "jwt", "joserfc", "authlib"])
    public static let pythonClientsReason: Comment =
        "needs python3 with requests, pyjwt, joserfc and authlib (scripts/install-test-deps.sh installs them)"

    /// Node.js (the extension's crypto module is checked against the protocol's vectors with it).
    public static let node: Bool = required || onPath("node")
    public static let nodeReason: Comment = "needs node (Debian's nodejs; scripts/install-test-deps.sh installs it)"

    /// Firefox ESR and Mozilla's Marionette client.
    public static let firefox: Bool = required || onPath("firefox-esr") && python(importing: ["marionette_driver"])
    public static let firefoxReason: Comment =
        "needs firefox-esr and python3 marionette-driver (scripts/install-test-deps.sh installs them)"

    /// KeePassXC's command line (the KeePass XML round trip).
    public static let keepassxc: Bool = required || onPath("keepassxc-cli")
    public static let keepassxcReason: Comment =
        "needs keepassxc-cli (Debian's keepassxc; scripts/install-test-deps.sh installs it)"

    /// python3 with its standard library only.
    public static let python3 = python(importing: [])
    public static let python3Reason: Comment = "needs python3"

    static func onPath(_ name: String) -> Bool {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").contains {
            FileManager.default.isExecutableFile(atPath: "\($0)/\(name)")
        }
    }
}
