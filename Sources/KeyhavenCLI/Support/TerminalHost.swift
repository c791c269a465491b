import AccountModification
import Foundation
import _KeyhavenSupport

/// The person's side on a terminal: prints the service's page and opens a browser when one is
/// available.
struct TerminalHost: ModificationHost {
    var openBrowser = true

    func presentInterface(_ url: String) async {
        Output.error("keyhaven: the service needs you to confirm. Open this page:\n\n    \(url)\n")
        Output.error("keyhaven: waiting… (Ctrl-C cancels the request on the service)")
        // The flow only presents https pages of the service itself (`ModificationFlow.isPresentable`);
        // checked again here, where the URL becomes an argument: it starts with `https://` (or
        // `http://` on loopback), so no browser can read it as an option.
        guard openBrowser, ServiceOrigin.of(url: url)?.isPotentiallyTrustworthy == true else { return }
        openInBrowser(url)
    }

    func obtainSignInAuthorization(_ request: SignInRequest) async -> SignInAuthorization {
        SignInAuthorization(error: "sign_in_not_configured")
    }
}

/// Opens `url` with `$BROWSER`, else `xdg-open` when a display is there; false when neither is.
/// `url` must start with `http://`, `https://` or `file://` (checked by callers), so no opener reads
/// it as an option. It becomes an argument, which every local user can read in `/proc/PID/cmdline`:
/// never give it a secret (`keyhaven ui` gives it the path of a private launch file instead). The
/// browser's environment is ours without the variables that hold secrets (``browserEnvironment(_:)``).
@discardableResult
func openInBrowser(_ url: String) -> Bool {
    let environment = CommandIO.current.environment
    guard let opener = browserOpener() else { return false }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [opener, url]
    process.environment = browserEnvironment(environment)
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    return (try? process.run()) != nil
}

/// What opens a browser: `$BROWSER`, else `xdg-open` when a display is there; nil when neither is.
func browserOpener() -> String? {
    let environment = CommandIO.current.environment
    let hasDisplay = environment["DISPLAY"] != nil || environment["WAYLAND_DISPLAY"] != nil
    return environment["BROWSER"].flatMap { $0.isEmpty ? nil : $0 } ?? (hasDisplay ? "xdg-open" : nil)
}

/// `environment` for a browser we start: without Keyhaven's variables that hold a secret
/// (`KEYHAVEN_PASSWORD`, `KEYHAVEN_NEW_PASSWORD`, `KEYHAVEN_IDP_PASSWORD`, …), which a browser has
/// no use for and would keep in its `environ`, and pass on to every process it starts.
func browserEnvironment(_ environment: [String: String]) -> [String: String] {
    environment.filter { name, _ in
        !(name.hasPrefix("KEYHAVEN_") && (name.contains("PASSWORD") || name.contains("SECRET")))
    }
}

/// Ctrl-C during an upgrade cancels the request on the service instead of killing Keyhaven; a
/// second Ctrl-C quits.
final class InterruptFlag: @unchecked Sendable {
    // Guarded by `lock`.
    private var raised = false
    private let lock = NSLock()
    private var source: (any DispatchSourceSignal)?

    var isRaised: Bool { lock.withLock { raised } }

    func install() {
        signal(SIGINT, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        source.setEventHandler { [weak self] in
            guard let self else { return }
            let second = self.lock.withLock { () -> Bool in
                defer { self.raised = true }
                return self.raised
            }
            if second {
                signal(SIGINT, SIG_DFL)
                raise(SIGINT)
            } else {
                Output.error("\nkeyhaven: cancelling the request on the service… (Ctrl-C again to quit)")
            }
        }
        source.resume()
        self.source = source
    }
}
