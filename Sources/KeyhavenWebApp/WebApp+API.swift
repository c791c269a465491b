import AutoFill
import Foundation
import HTTPTypes
import Hummingbird
import OneTimeCodes
import PasswordStrength
import SecurityRecommendations
import Synchronization
import Vault
import _KeyhavenSupport
import _KeyhavenWeb

/// `/api/…`: the JSON the page's own scripts use — the same documents the CLI prints with `--json`
/// (`/api/audit` is `keyhaven audit --json`), so nothing is computed twice. Cookie + CSRF header.
extension WebApp {
    func addAPIRoutes(to router: Router<WebAppContext>) {
        router.get("/api/status") { _, _ -> Response in
            try Self.json(await self.agent.status())
        }
        router.get("/api/audit") { _, _ -> Response in
            let vault = try await self.requireVault()
            let audit = try await self.audit(vault)
            guard audit.waitingFor == nil else {
                var response = try Self.json(
                    ["message": "The audit of the vault as it is now is still running: ask again in a moment."],
                    status: .serviceUnavailable
                )
                response.headers[.retryAfter] = "1"
                return response
            }
            return try Self.json(audit.report)
        }
        // What the page's script polls while the audit progresses: never waits.
        router.get("/api/audit/updates") { request, _ -> Response in
            let vault = try await self.requireVault()
            let since = Self.query(request)["since"].flatMap { Int($0) } ?? 0
            return try Self.json(AuditUpdates(try await self.audit(vault, patience: .zero), since: since))
        }
        router.get("/api/items") { request, _ -> Response in
            let vault = try await self.requireVault()
            let query = Self.query(request)["q"] ?? ""
            let limit = Self.query(request)["limit"].flatMap { Int($0) }.map { min(max($0, 1), 1000) }
            let result = try await self.search(vault, query: query, limit: limit ?? Self.listLimit)
            struct Body: Encodable {
                var items: [VaultRow]
                var matched: Int
                var total: Int
            }
            return try Self.json(Body(items: result.rows, matched: result.matched, total: result.total))
        }
        router.get("/api/items/{id}/password") { request, context -> Response in
            try self.requireCSRFHeader(request, context)
            let vault = try await self.requireVault()
            let credential = try await self.credential(context.parameters.get("id") ?? "", in: vault)
            var password = credential.password
            if let position = Self.query(request)["history"].flatMap({ Int($0) }) {
                let history = try await self.blocking { try vault.history(credential.id) }
                guard history.indices.contains(position) else { throw WebAppError(.notFound, "No such entry.") }
                password = history[position].password
            }
            return try Self.json(["password": password ?? ""])
        }
        router.get("/api/items/{id}/otp") { request, context -> Response in
            try self.requireCSRFHeader(request, context)
            let vault = try await self.requireVault()
            let credential = try await self.credential(context.parameters.get("id") ?? "", in: vault)
            guard let secret = credential.totp, let totp = try? TOTP(secret: secret) else {
                throw WebAppError(.notFound, "This password has no one-time code.")
            }
            let now = self.now
            struct Body: Encodable {
                var code: String
                var secondsRemaining: Int
                var period: Int
            }
            return try Self.json(
                Body(code: totp.code(at: now), secondsRemaining: totp.secondsRemaining(at: now), period: totp.period)
            )
        }
        router.post("/api/strength") { request, _ -> Response in
            _ = try await self.requireVault()
            let body = try await request.body.collect(upTo: 16 << 10)
            guard let parsed = try? JSONValue.parse(Data(body.readableBytesView)),
                let password = parsed["password"]?.string
            else { throw WebAppError(.badRequest, "Send {\"password\": \"…\"}.") }
            let userInputs = parsed["userInputs"]?.array?.compactMap(\.string) ?? []
            let estimate = StrengthEstimator.shared.estimate(password, userInputs: userInputs)
            struct Body: Encodable {
                var score: Int
                var words: String
                var warning: String
                var suggestions: [String]
            }
            return try Self.json(
                Body(
                    score: estimate.score,
                    words: StrengthWords.all[estimate.score],
                    warning: estimate.feedback.warning,
                    suggestions: estimate.feedback.suggestions
                )
            )
        }
        router.get("/api/upgrades/{id}") { _, context -> Response in
            guard let run = self.runs.run(context.parameters.get("id") ?? "") else {
                throw WebAppError(.notFound, "There is no such upgrade.")
            }
            return try Self.json(run.snapshot)
        }
        router.get("/api/pairing/code") { request, context -> Response in
            try self.requireCSRFHeader(request, context)
            _ = try await self.requireVault()
            let code = await self.agent.waitForPairingCode(timeout: 0)
            return try Self.json(["code": code?.code ?? "", "client": code?.name ?? ""])
        }
    }

    /// Reads of secrets want the CSRF header even though they are GETs: only the app's own scripts
    /// can send it.
    func requireCSRFHeader(_ request: Request, _ context: WebAppContext) throws {
        guard CSRF.matches(request.headers[CSRF.header], context.csrf) else { throw WebAppError.staleForm }
    }
}

/// `/api/audit/updates?since=GENERATION`: where the audit is, and the actions of the items that
/// changed after `GENERATION` (the page's script adds them to the recommendations it shows).
struct AuditUpdates: Encodable {
    struct Change: Encodable {
        var id: String
        var changePasswordURL: String?
        var upgrade: UpgradeOffer?
    }

    /// The background run the page's report came from (another one means the vault changed), and
    /// how many times its report changed.
    var run, generation: Int
    /// Whether the findings answer for the vault as it is now, and whether sites are being asked.
    var ready, lookingUp: Bool
    var pendingSites, unreachableSites: Int
    /// The page's status line (empty once there is nothing to wait for).
    var status: String
    var notices: [String]
    var changes: [Change]

    init(_ audit: AuditCache, since: Int) {
        run = audit.run
        generation = audit.generation
        ready = audit.waitingFor == nil
        lookingUp = audit.lookingUp
        pendingSites = audit.report.summary.pendingSites
        unreachableSites = audit.report.summary.unreachableSites
        status = WebAppPages.auditStatusText(audit) ?? ""
        notices = audit.report.summary.notices
        changes = audit.report.items.compactMap { item in
            guard (audit.actionsChanged[item.id] ?? 0) > since else { return nil }
            return Change(id: item.id, changePasswordURL: item.actions.changePasswordURL, upgrade: item.actions.upgrade)
        }
    }
}
