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
/// `url` must start with `http://` or `https://` (checked by callers), so no opener reads it as an
/// option.
@discardableResult
func openInBrowser(_ url: String) -> Bool {
    let environment = CommandIO.current.environment
    let hasDisplay = environment["DISPLAY"] != nil || environment["WAYLAND_DISPLAY"] != nil
    let opener = environment["BROWSER"].flatMap { $0.isEmpty ? nil : $0 } ?? (hasDisplay ? "xdg-open" : nil)
    guard let opener else { return false }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [opener, url]
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    return (try? process.run()) != nil
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
