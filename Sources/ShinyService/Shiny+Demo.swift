import Foundation
public import Hummingbird

/// An account as `GET /api/demo/accounts/{user}` shows it (``ShinyConfiguration/demo`` only).
public struct ShinyAccountStatus: ResponseCodable, Sendable, Equatable {
    public var user: String
    /// Whether a password still signs in (false once the account signs in with Keyhaven only).
    public var hasPassword: Bool
    /// Whether an authenticator protects the account.
    public var authenticator: Bool
    /// The provider's `sub` the account is linked to, if it signs in with Keyhaven.
    public var signInSubject: String?
    /// Sessions open now.
    public var sessions: Int
}

/// A server-to-server notification shiny accepted, as `GET /api/demo/notifications` lists them.
public struct ShinyReceivedNotification: Codable, Sendable, Equatable {
    /// The event's type (`consent-revoked`, `account-delete`, `email-disabled`, `email-enabled`).
    public var type: String
    public var sub: String
}

extension Shiny {
    /// What `keyhaven demo`, which runs shiny as a separate process, checks after each step: an
    /// account's state and the notifications received. A real service has no such endpoints (they
    /// tell anyone who asks which accounts exist and who they are linked to), so they exist only with
    /// ``ShinyConfiguration/demo``, which shiny accepts on loopback only.
    func addDemo(to router: Router<ShinyRequestContext>) {
        router.get("/api/demo/accounts/:user") { _, context -> ShinyAccountStatus in
            let name = context.parameters.get("user") ?? ""
            let status: ShinyAccountStatus?
            do {
                status = try self.store.user(named: name).map { user in
                    ShinyAccountStatus(
                        user: user.name,
                        hasPassword: user.hasPassword,
                        authenticator: user.totpSecret != nil,
                        signInSubject: user.signInSubject,
                        sessions: try self.store.sessionCount(for: user.id)
                    )
                }
            } catch {
                throw ShinyAPIError.serverError("could not read the account")
            }
            guard let status else { throw ShinyAPIError(.notFound, "not_found", "no account named \(name)") }
            return status
        }
        router.get("/api/demo/notifications") { _, _ -> [ShinyReceivedNotification] in
            self.receivedNotifications.map { ShinyReceivedNotification(type: $0.type, sub: $0.sub) }
        }
    }
}
