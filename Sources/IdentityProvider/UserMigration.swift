import Foundation
import _KeyhavenSupport

/// What `/auth/usermigrationinfo` answers: `{"transfer_sub"}` to the sending team, `{"sub", "email",
/// "is_private_email"}` to the recipient.
public struct MigrationInfo: Sendable, Hashable, Codable {
    public var transfer_sub: String?
    public var sub: String?
    public var email: String?
    public var is_private_email: Bool?
}

extension IdentityProvider {
    /// `client_credentials` with `scope=user.migration`: a one-hour, single-use access token for the
    /// client's team.
    func migrationToken(_ form: [String: String], client: Client) async throws -> TokenResponse {
        guard form["scope"] == "user.migration" else {
            throw OAuthError.invalidScope("client_credentials is only for scope=user.migration.")
        }
        let token = "m." + randomToken()
        let expires = nowMilliseconds + configuration.accessTokenLifetime * 1000
        try await write { connection in
            try await connection.insert(
                MigrationTokenRecord(
                    hash: Self.hash(token),
                    teamId: client.teamId,
                    clientId: client.id,
                    expires: expires
                )
            )
        }
        return TokenResponse(access_token: token, expires_in: configuration.accessTokenLifetime)
    }

    /// `POST /auth/usermigrationinfo` with `Authorization: Bearer <migration token>`.
    /// - The sending team posts `sub` and `target` (the recipient team) and gets a `transfer_sub`,
    ///   stable for that pair.
    /// - The recipient team, after the app moved to it, posts `transfer_sub` and gets the person's
    ///   new `sub`, and their e-mail (a new relay address when they hide theirs).
    public func userMigrationInfo(_ form: [String: String], bearer: String?) async -> Result<MigrationInfo, OAuthError>
    {
        do {
            let client = try await authenticateClient(form)
            guard let bearer, !bearer.isEmpty else {
                return .failure(.invalidRequest("An Authorization: Bearer access token is required."))
            }
            let now = nowMilliseconds
            let used = try await write { connection in
                try await connection.query(
                    """
                    UPDATE migration_tokens SET used = ? \
                    WHERE hash = ? AND client_id = ? AND used IS NULL AND expires > ? RETURNING team_id
                    """,
                    .integer(now),
                    .text(Self.hash(bearer)),
                    .text(client.id),
                    .integer(now)
                )
            }
            guard !used.isEmpty else {
                return .failure(.invalidGrant("The access token has expired or has already been used."))
            }
            if let sub = form["sub"], !sub.isEmpty {
                guard let target = form["target"], !target.isEmpty else {
                    return .failure(.invalidRequest("target is required with sub."))
                }
                return try await transferSub(sub: sub, target: target, client: client)
            }
            if let transferSub = form["transfer_sub"], !transferSub.isEmpty {
                return try await exchange(transferSub: transferSub, client: client)
            }
            return .failure(.invalidRequest("Either sub and target, or transfer_sub, is required."))
        } catch let error as OAuthError {
            return .failure(error)
        } catch {
            return .failure(.init("server_error", "The request could not be completed."))
        }
    }

    func transferSub(sub: String, target: String, client: Client) async throws -> Result<MigrationInfo, OAuthError> {
        let candidate =
            String(format: "%06d", Int(configuration.randomBytes(2).reduce(0) { $0 << 8 | Int($1) }))
            + "." + Hex.encode(configuration.randomBytes(16)) + ".t"
        let now = nowMilliseconds
        return try await write { connection in
            guard
                let subject = try await connection.fetchOne(
                    SubjectRecord.self,
                    "\(SubjectRecord.select) WHERE sub = ?",
                    .text(sub)
                ), subject.teamId == client.teamId
            else { return .failure(.invalidRequest("The sub is not a user of this team.")) }
            let userId = subject.userId
            guard target != client.teamId,
                try await connection.one("SELECT id FROM teams WHERE id = ?", .text(target)) != nil
            else { return .failure(.invalidRequest("target is not another registered team.")) }
            guard try await self.state(userId: userId, clientId: client.id, connection) == .authorized else {
                return .failure(.invalidRequest("The user has revoked this app."))
            }
            try await connection.insert(
                TransferRecord(
                    transferSub: candidate,
                    userId: userId,
                    fromTeam: client.teamId,
                    toTeam: target,
                    oldSub: sub,
                    created: now
                ),
                "ON CONFLICT (old_sub, to_team) DO NOTHING"
            )
            let existing = try await connection.fetchOne(
                String.self,
                "SELECT transfer_sub FROM transfers WHERE old_sub = ? AND to_team = ?",
                .text(sub),
                .text(target)
            )
            return .success(MigrationInfo(transfer_sub: existing))
        }
    }

    func exchange(transferSub: String, client: Client) async throws -> Result<MigrationInfo, OAuthError> {
        let now = nowMilliseconds
        let window = now - configuration.transferWindow * 1000
        let relay = randomAlphanumeric(10) + "@" + configuration.relayDomain
        return try await write { connection in
            guard
                let transfer = try await connection.fetchOne(
                    TransferRecord.self,
                    "\(TransferRecord.select) WHERE transfer_sub = ? AND to_team = ? AND created > ?",
                    .text(transferSub),
                    .text(client.teamId),
                    .integer(window)
                ), let user = try await self.user(transfer.userId, connection)
            else { return .failure(.invalidRequest("The transfer_sub is unknown, expired or for another team.")) }
            let userId = transfer.userId
            let hidden =
                try await connection.fetchOne(
                    String?.self,
                    "SELECT relay_email FROM subjects WHERE user_id = ? AND team_id = ?",
                    .text(userId),
                    .text(transfer.fromTeam)
                ).flatMap { $0 } != nil
            try await self.ensureSubject(userId: userId, teamId: client.teamId, relay: hidden ? relay : nil, connection)
            let subject = try await connection.fetchOne(
                SubjectRecord.self,
                "\(SubjectRecord.select) WHERE user_id = ? AND team_id = ?",
                .text(userId),
                .text(client.teamId)
            )
            try await connection.query(
                "UPDATE transfers SET exchanged = ? WHERE transfer_sub = ?",
                .integer(now),
                .text(transferSub)
            )
            let email = hidden ? subject?.relayEmail : user.email
            return .success(MigrationInfo(sub: subject?.sub, email: email, is_private_email: hidden))
        }
    }
}
