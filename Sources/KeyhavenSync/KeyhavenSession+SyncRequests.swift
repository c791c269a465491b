public import KeyhavenApp
import _KeyhavenSupport

extension KeyhavenSession {
    /// Answers a front end's request (the agent's socket, the CLI's own session): sync's requests
    /// (`syncEnable`, `syncNow`, `syncStatus`, `syncDisable`) with ``enableSync(server:deviceName:)``,
    /// ``syncNow()``, ``syncStatus()`` and ``disableSync()``, every other with ``KeyhavenApp/KeyhavenSession/answer(_:)``.
    /// A sync error travels as a session error with its own code (`unreachable`, `notEnabled`, …).
    public func answerWithSync(_ request: SessionRequest) async -> SessionResponse {
        do throws(SyncError) {
            switch request {
            case .syncConflicts(let reveal):
                return .syncConflicts(try syncConflicts(reveal: reveal))
            case .syncResolve(let id, let field, let keep):
                let status = try await resolveSyncConflict(id, field: field, keeping: keep)
                SyncNudges.nudge(self)
                return .syncStatus(status)
            case .syncEnable(let server, let deviceName):
                let status = try await enableSync(server: server, deviceName: deviceName)
                SyncNudges.nudge(self)
                return .syncStatus(status)
            case .syncNow:
                // After a background sync that runs, rather than `busy`.
                return .syncReport(try await syncNowWhenFree())
            case .syncStatus:
                return .syncStatus(try syncStatus())
            case .syncDisable:
                let status = try await disableSync()
                // The background sync stops at once (and stops asking the server with this key).
                SyncNudges.nudge(self)
                return .syncStatus(status)
            default:
                return answer(request)
            }
        } catch {
            return .failure(SessionError(SessionError.Code(error.code.name), error.message))
        }
    }
}
