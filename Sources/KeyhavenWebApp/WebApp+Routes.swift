import AutoFill
import Foundation
import HTTPTypes
public import Hummingbird
import KeyhavenApp
import NIOCore
import OneTimeCodes
import PasswordRules
import PasswordStrength
import SecurityRecommendations
import Synchronization
import Vault
import _KeyhavenSupport
import _KeyhavenWeb

extension WebApp {
    /// The app's routes: every response with the security headers (``SecurityHeadersMiddleware``),
    /// every request through ``WebAppGuard``.
    public func router() -> Router<WebAppContext> {
        let router = Router(context: WebAppContext.self, securityHeaders: Self.securityHeaders)
        router.add(middleware: WebAppGuard(app: self))
        router.add(assets: Self.assets)
        addSessionRoutes(to: router)
        addVaultRoutes(to: router)
        addRecommendationRoutes(to: router)
        addToolRoutes(to: router)
        addSyncRoutes(to: router)
        addAPIRoutes(to: router)
        return router
    }

    // MARK: Helpers

    /// The unlocked vault; throws `.locked` (pages then go to the unlock page).
    func requireVault() async throws -> Vault {
        try await vault()
    }

    /// An `application/x-www-form-urlencoded` body (``WebForm``: a field given twice is refused, and
    /// with `allowed` one not named) whose CSRF token matches the session's.
    func form(
        _ request: Request,
        _ context: WebAppContext,
        only allowed: Set<String>? = nil
    ) async throws -> [String: String] {
        let fields = try await WebForm.fields(of: request, only: allowed)
        guard CSRF.matches(fields["csrf"], context.csrf) else { throw WebAppError.staleForm }
        return fields
    }

    /// The query's fields, decoded as a form would encode them (`+` is a space). ``WebAppGuard``
    /// refused the request already if a field was given twice.
    static func query(_ request: Request) -> [String: String] {
        (try? WebForm.query(of: request)) ?? [:]
    }

    func flash(_ context: WebAppContext) -> Flash? { context.token.flatMap { takeFlash(token: $0) } }

    func say(_ context: WebAppContext, _ text: String, kind: String = "ok") {
        if let token = context.token { setFlash(token: token, text, kind: kind) }
    }

    func credential(_ id: String, in vault: Vault) async throws -> Credential {
        guard let credentialID = CredentialID(rawValue: id) else {
            throw WebAppError(.notFound, "There is no such password.")
        }
        do {
            return try await blocking { try vault.credential(credentialID) }
        } catch let error as VaultError where error.code == .notFound {
            throw WebAppError(.notFound, "There is no such password.")
        }
    }

    // MARK: Launch, unlock, lock

    func addSessionRoutes(to router: Router<WebAppContext>) {
        router.get("/launch") { request, _ -> Response in
            let secret = Self.query(request)["secret"] ?? ""
            guard let keys = self.redeemLaunchSecret(secret) else {
                throw WebAppError(
                    .unauthorized,
                    "This link was used already or has expired: run `keyhaven ui` again for a new one."
                )
            }
            // HttpOnly: no script reads it. SameSite=Strict: no other site's page sends it. Path: the
            // browser sends it to this session's paths only, on no port's `/`.
            let cookie = Cookie(
                name: Self.cookieName,
                value: keys.token,
                path: "\(keys.base)/",
                httpOnly: true,
                sameSite: .strict
            )
            // A page that moves on, not a 303: the launch usually comes from a file (`keyhaven ui`'s
            // redirect file), a cross-site initiator, and browsers do not send a Strict cookie along
            // a redirect that such a navigation started. The page's own refresh is same-origin.
            return Self.html(WebAppPages.launched(base: keys.base), headers: HTTPFields(cookies: cookie))
        }
        router.get("/unlock") { _, context -> Response in
            if await self.session.isUnlocked { return Self.redirect(context.path("/")) }
            return Self.html(WebAppPages.unlock(session: context.page, vault: self.session.configuration.vaultURL.path))
        }
        router.post("/unlock") { request, context -> Response in
            let form = try await self.form(request, context)
            let password = form["masterPassword"] ?? ""
            do {
                try await self.agent.unlock(masterPassword: password)
            } catch let error as AutoFillError {
                let message =
                    error.code == .wrongPassword
                    ? "The master password is wrong. Nothing was unlocked." : error.message
                return Self.html(
                    WebAppPages.unlock(
                        session: context.page,
                        vault: self.session.configuration.vaultURL.path,
                        error: message
                    ),
                    status: .unauthorized
                )
            }
            return Self.redirect(context.path("/"))
        }
        router.post("/lock") { request, context -> Response in
            _ = try await self.form(request, context, only: ["csrf"])
            // The session's "locked" event clears what the app read (see `WebApp.init`).
            await self.agent.lock()
            return Self.redirect(context.path("/unlock"))
        }
    }

    // MARK: Overview, vault, items, upgrades

    func addVaultRoutes(to router: Router<WebAppContext>) {
        router.get("/") { _, context -> Response in
            let vault = try await self.requireVault()
            let audit = try await self.audit(vault)
            return Self.html(WebAppPages.overview(audit, session: context.page, flash: self.flash(context)))
        }
        router.get("/vault") { request, context -> Response in
            let vault = try await self.requireVault()
            let query = Self.query(request)["q"] ?? ""
            let audit = try await self.audit(vault)
            let result = Self.search(audit, query: query, limit: Self.listLimit)
            return Self.html(
                WebAppPages.vault(
                    rows: result.rows,
                    total: result.total,
                    matched: result.matched,
                    query: query,
                    status: WebAppPages.auditStatus(audit),
                    session: context.page,
                    flash: self.flash(context)
                )
            )
        }
        router.get("/items/{id}") { _, context -> Response in
            let vault = try await self.requireVault()
            let id = context.parameters.get("id") ?? ""
            let credential = try await self.credential(id, in: vault)
            let audit = try await self.audit(vault)
            let (history, journal) = try await self.blocking {
                (
                    try vault.history(credential.id),
                    try vault.pendingUpgrades().filter { $0.credentialID == credential.id }
                )
            }
            let facts = WebAppPages.ItemFacts(
                credential: credential,
                audit: audit.report.items.first { $0.id == credential.id.rawValue },
                history: history,
                journal: journal,
                runs: self.runs.active(for: credential.id).map(\.snapshot),
                passkeys: PasskeyFacts.matching(credential, audit.passkeys)
            )
            return Self.html(WebAppPages.item(facts, session: context.page, flash: self.flash(context)))
        }
        router.post("/items/{id}/upgrade") { request, context -> Response in
            _ = try await self.form(request, context)
            let vault = try await self.requireVault()
            let credential = try await self.credential(context.parameters.get("id") ?? "", in: vault)
            let run = try self.startUpgrade(credential, vault: vault)
            return Self.redirect(context.path("/upgrades/\(run.id)"))
        }
        router.post("/items/{id}/upgrade-to-passkey") { request, context -> Response in
            _ = try await self.form(request, context)
            let vault = try await self.requireVault()
            let credential = try await self.credential(context.parameters.get("id") ?? "", in: vault)
            let run = try self.startUpgrade(credential, vault: vault, toPasskey: true)
            return Self.redirect(context.path("/upgrades/\(run.id)"))
        }
        router.get("/upgrades/{id}") { _, context -> Response in
            _ = try await self.requireVault()
            guard let run = self.runs.run(context.parameters.get("id") ?? "") else {
                throw WebAppError(.notFound, "There is no such upgrade.")
            }
            return Self.html(WebAppPages.upgrade(run.snapshot, session: context.page))
        }
        router.post("/upgrades/{id}/cancel") { request, context -> Response in
            _ = try await self.form(request, context)
            guard let run = self.runs.run(context.parameters.get("id") ?? "") else {
                throw WebAppError(.notFound, "There is no such upgrade.")
            }
            run.cancel()
            return Self.redirect(context.path("/upgrades/\(run.id)"))
        }
    }

    static let listLimit = 200

    struct SearchResult: Sendable {
        var rows: [VaultRow]
        var matched: Int
        var total: Int
    }

    /// The credentials matching `query` (all when empty), from the audit's copy of the vault: no
    /// decryption per keystroke.
    func search(_ vault: Vault, query: String, limit: Int) async throws -> SearchResult {
        let audit = try await audit(vault)
        return Self.search(audit, query: query, limit: limit)
    }

    static func search(_ audit: AuditCache, query: String, limit: Int) -> SearchResult {
        let needle = query.trimmingCharacters(in: .whitespaces).lowercased()
        var rows: [VaultRow] = []
        var matched = 0
        for entry in audit.rows where needle.isEmpty || entry.text.contains(needle) {
            matched += 1
            if rows.count < limit { rows.append(entry.row) }
        }
        return SearchResult(rows: rows, matched: matched, total: audit.rows.count)
    }

    // MARK: Recommendations

    func addRecommendationRoutes(to router: Router<WebAppContext>) {
        router.get("/recommendations") { request, context -> Response in
            let vault = try await self.requireVault()
            let page = try await self.recommendationsPage(
                vault,
                expanded: Self.query(request)["group"],
                session: context.page,
                flash: self.flash(context)
            )
            return Self.html(page)
        }
        // Ignore hides a recommendation; restore ("Show again") brings it back.
        for (action, ignore) in [("ignore", true), ("restore", false)] {
            router.post(RouterPath("/recommendations/{id}/\(action)")) { request, context -> Response in
                _ = try await self.form(request, context)
                let vault = try await self.requireVault()
                let id = context.parameters.get("id") ?? ""
                guard let item = try await self.audit(vault).report.items.first(where: { $0.id == id }) else {
                    throw WebAppError(.notFound, "There is no such recommendation.")
                }
                try await self.setIgnored(item, ignore, vault)
                if ignore {
                    self.say(
                        context,
                        "Ignored the recommendation for \(item.title). It comes back if a new issue appears."
                    )
                }
                return Self.redirect(context.path("/recommendations"))
            }
        }
    }

    /// The recommendations page from the audit as far as it has got (the benchmark measures this):
    /// the offline findings at once, each site's answer added by the page's script as it comes.
    func recommendationsPage(
        _ vault: Vault,
        expanded: String?,
        session: WebAppPages.Session,
        flash: Flash?
    ) async throws -> HTML {
        let audit = try await audit(vault)
        let ignored = try await ignored(vault)
        return Self.recommendationsPage(
            audit,
            ignored: ignored,
            expanded: expanded,
            session: session,
            flash: flash
        )
    }

    static func recommendationsPage(
        _ audit: AuditCache,
        ignored: [String: IgnoredRecommendation],
        expanded: String?,
        session: WebAppPages.Session,
        flash: Flash?
    ) -> HTML {
        let report = audit.report
        guard audit.stage >= .offline else { return WebAppPages.checking(audit, session: session, flash: flash) }
        var shown: [AuditItem] = []
        var hidden: [AuditItem] = []
        for item in report.items where item.severity != .none {
            if let entry = ignored[item.id], Set(item.issues.map(\.rawValue)).isSubset(of: entry.issues) {
                hidden.append(item)
            } else {
                shown.append(item)
            }
        }
        return WebAppPages.recommendations(
            shown,
            ignored: hidden,
            summary: report.summary,
            expanded: expanded,
            status: WebAppPages.auditStatus(audit),
            session: session,
            flash: flash
        )
    }
}
