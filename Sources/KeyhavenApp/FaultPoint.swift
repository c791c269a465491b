#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Places in an upgrade where tests kill the process (`SIGKILL`) to prove nothing is ever lost.
///
/// Compiled into debug (test) builds only: `KEYHAVEN_FAULT=<name>` kills the process when that
/// point is reached. Release builds contain no fault points.
public enum FaultPoint: String, CaseIterable, Sendable {
    /// The upgrade has started; nothing is written yet.
    case start
    /// The manifest was read and the password generated.
    case afterGenerate = "after-generate"
    /// The journal entry is on disk; the service has not been asked.
    case afterJournal = "after-journal"
    /// A passkey upgrade's passkey is journaled; the service has not received it.
    case afterPasskeyJournal = "after-passkey-journal"
    /// The service answered; the vault does not know yet.
    case afterResponse = "after-response"
    /// The vault holds the result and the journal entry is gone.
    case afterCommit = "after-commit"

    public func hit() {
        #if DEBUG
        if let wanted = getenv("KEYHAVEN_FAULT"), String(cString: wanted) == rawValue {
            kill(getpid(), SIGKILL)
        }
        #endif
    }
}
