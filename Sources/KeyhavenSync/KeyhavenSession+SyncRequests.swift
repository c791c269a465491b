public import KeyhavenApp
import VaultSync
import _KeyhavenSupport

extension KeyhavenSession {
    /// Answers a front end's request (the agent's socket, the CLI's own session): sync's requests
    /// (`syncEnable`, `syncNow`, `syncStatus`, `syncDisable`, `syncJoin`, `deviceApprove`, `deviceList`,
    /// `deviceRevoke`) with ``enableSync(server:deviceName:)``, ``syncNow()``, ``syncStatus()``,
    /// ``disableSync()``, ``joinSync(server:deviceName:code:timeout:poll:)``, ``approveDevice(code:)``,
    /// ``syncDevices()`` and ``revokeDevice(_:)``, every other with ``KeyhavenApp/KeyhavenSession/answer(_:)``.
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
            case .syncJoin(let server, let deviceName, let code, let timeoutSeconds):
                let parsed: JoinCode
                do {
                    parsed = try JoinCode(parsing: code)
                } catch {
                    throw SyncError(.invalidInput, error.message)
                }
                let status = try await joinSync(
                    server: server,
                    deviceName: deviceName,
                    code: parsed,
                    timeout: .seconds(max(timeoutSeconds, 1))
                )
                // The agent's background sync starts for the device that just joined.
                SyncNudges.nudge(self)
                return .syncStatus(status)
            case .deviceApprove(let code):
                return .syncApproval(try await approveDevice(code: code))
            case .deviceList:
                return .syncDevices(try await syncDevices())
            case .deviceRevoke(let id):
                return .syncDevices([try await revokeDevice(id)])
            default:
                return answer(request)
            }
        } catch {
            return .failure(SessionError(SessionError.Code(error.code.name), error.message))
        }
    }
}
