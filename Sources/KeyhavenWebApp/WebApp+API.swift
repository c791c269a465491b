import AutoFill
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import OneTimeCodes
import PasswordStrength
import Synchronization
import Vault
import _KeyhavenSupport
import _KeyhavenWeb

/// `/api/…`: the JSON the page's own scripts use — the same documents the CLI prints with `--json`
/// (`/api/audit` is `keyhaven audit --json`), so nothing is computed twice. Cookie + CSRF header.
extension WebApp {
    func addAPIRoutes(to router: Router<WebAppContext>) {
        router.get("/api/status") { _, _ -> Response in
            Response(
                status: .ok,
                headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(bytes: await self.agent.status().encoded()))
            )
        }
        router.get("/api/audit") { _, _ -> Response in
            let vault = try await self.requireVault()
            return try Self.json(try await self.audit(vault).report)
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
