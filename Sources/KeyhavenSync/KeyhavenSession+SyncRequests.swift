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
                return .syncStatus(try resolveSyncConflict(id, field: field, keeping: keep))
            case .syncEnable(let server, let deviceName):
                return .syncStatus(try await enableSync(server: server, deviceName: deviceName))
            case .syncNow:
                return .syncReport(try await syncNow())
            case .syncStatus:
                return .syncStatus(try syncStatus())
            case .syncDisable:
                return .syncStatus(try disableSync())
            default:
                return answer(request)
            }
        } catch {
            return .failure(SessionError(SessionError.Code(error.code.name), error.message))
        }
    }
}
