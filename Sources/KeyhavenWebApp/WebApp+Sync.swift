import Foundation
import Hummingbird
import KeyhavenApp
import Vault
import _KeyhavenSupport
import _KeyhavenWeb

/// `/sync`: sync's status and the conflicts sync left, read from the vault (never from the
/// network), "Sync now", and a conflict resolved in two steps (pick the value to keep, confirm).
extension WebApp {
    func addSyncRoutes(to router: Router<WebAppContext>) {
        router.get("/sync") { _, context -> Response in
            _ = try await self.requireVault()
            let (status, conflicts) = try await self.syncOverview()
            return Self.html(
                WebAppPages.sync(status, conflicts: conflicts, session: context.page, flash: self.flash(context))
            )
        }
        router.post("/sync/now") { request, context -> Response in
            _ = try await self.form(request, context, only: ["csrf"])
            _ = try await self.requireVault()
            switch await self.askSync(.syncNow) {
            case .syncReport(let report):
                var text =
                    "Synced: \(report.pushed) sent, \(report.pulled) received; here \(report.created) new, "
                    + "\(report.updated) changed, \(report.deleted) deleted."
                if !report.rejections.isEmpty {
                    text += " The server refused \(report.rejections.count) (they stay pending)."
                }
                self.say(context, text)
            case .failure(let error):
                self.say(context, Self.syncFailure(error), kind: "error")
            default:
                self.say(context, "Sync did not answer as expected.", kind: "error")
            }
            return Self.redirect(context.path("/sync"))
        }
        // Step 1: what keeping that value means, and a form to confirm it.
        router.get("/sync/resolve") { request, context -> Response in
            _ = try await self.requireVault()
            let query = Self.query(request)
            let (item, conflict, choice) = try await self.conflict(
                item: query["item"],
                field: query["field"],
                keep: query["keep"]
            )
            return Self.html(WebAppPages.confirmResolve(item, conflict, choice, session: context.page))
        }
        // Step 2: keep it.
        router.post("/sync/resolve") { request, context -> Response in
            let form = try await self.form(request, context, only: ["csrf", "item", "field", "keep"])
            _ = try await self.requireVault()
            let (item, conflict, choice) = try await self.conflict(
                item: form["item"],
                field: form["field"],
                keep: form["keep"]
            )
            switch await self.askSync(.syncResolve(id: item.id, field: conflict.field, keep: choice)) {
            case .syncStatus:
                self.say(
                    context,
                    "Kept the \(choice == .current ? "current" : "other") \(WebAppPages.fieldName(conflict.field)) of "
                        + "\(item.title). The next sync sends it to your other devices."
                )
            case .failure(let error):
                self.say(context, error.message, kind: "error")
            default:
                self.say(context, "Sync did not answer as expected.", kind: "error")
            }
            return Self.redirect(context.path("/sync"))
        }
        // A conflict's secret value, for the page's Reveal (CSRF header, like a password).
        router.get("/api/sync/conflicts/{id}/value") { request, context -> Response in
            try self.requireCSRFHeader(request, context)
            _ = try await self.requireVault()
            let query = Self.query(request)
            let (_, conflict, choice) = try await self.conflict(
                item: context.parameters.get("id"),
                field: query["field"],
                keep: query["keep"],
                reveal: true
            )
            let value = choice == .current ? conflict.current : conflict.other
            return try Self.json(["password": value ?? ""])
        }
    }

    /// Sync's answer to `request` (the agent's session), or a failure when sync is not wired.
    func askSync(_ request: SessionRequest) async -> SessionResponse {
        guard let sync = services.sync else {
            return .failure(SessionError(.failed, "Sync is not available in this Keyhaven."))
        }
        return await sync(request)
    }

    /// The status and the conflicts (values masked), both read from the vault; nil status: sync is
    /// not available here.
    func syncOverview() async throws -> (SyncStatus?, [SyncConflictItem]) {
        guard services.sync != nil else { return (nil, []) }
        let status: SyncStatus
        switch await askSync(.syncStatus) {
        case .syncStatus(let answered): status = answered
        case .failure(let error): throw WebAppError(.syncFailed, error.message)
        default: throw WebAppError(.syncFailed, "Sync did not answer as expected.")
        }
        guard status.enabled else { return (status, []) }
        switch await askSync(.syncConflicts(reveal: false)) {
        case .syncConflicts(let items): return (status, items)
        case .failure(let error): throw WebAppError(.syncFailed, error.message)
        default: throw WebAppError(.syncFailed, "Sync did not answer as expected.")
        }
    }

    /// The conflict a request names: the item, its field's conflict with the option `keep` names,
    /// and the choice; 404 when there is none (resolved meanwhile), 400 for a malformed choice.
    func conflict(
        item: String?,
        field: String?,
        keep: String?,
        reveal: Bool = false
    ) async throws -> (SyncConflictItem, SyncFieldConflict, SyncConflictChoice) {
        guard let keep, let choice = SyncConflictChoice(keep) else {
            throw WebAppError(.badRequest, "Choose the current or the other value.")
        }
        let items: [SyncConflictItem]
        switch await askSync(.syncConflicts(reveal: reveal)) {
        case .syncConflicts(let answered): items = answered
        case .failure(let error): throw WebAppError(.notFound, error.message)
        default: throw WebAppError(.syncFailed, "Sync did not answer as expected.")
        }
        let option: Int
        if case .other(let chosen) = choice { option = chosen } else { option = 1 }
        guard let found = items.first(where: { $0.id.rawValue == item }),
            let conflict = found.conflicts.first(where: { $0.field == field && $0.option == option })
        else {
            throw WebAppError(.notFound, "There is no such conflict (it may have been resolved already).")
        }
        return (found, conflict, choice)
    }

    /// A failed sync in words: a server out of reach says so, and that nothing is lost.
    static func syncFailure(_ error: SessionError) -> String {
        switch error.code.name {
        case "unreachable":
            "Server unreachable: the sync server could not be reached. Nothing is lost: your changes stay "
                + "pending and go with the next sync."
        case "notEnabled": "Sync is off for this vault."
        case "busy": "A sync is running already; try again in a moment."
        default: "Sync failed: \(error.message)"
        }
    }
}

extension WebAppError.Code {
    /// Sync's status or conflicts could not be read (the message says why).
    static var syncFailed: Self { Self("syncFailed") }
}
