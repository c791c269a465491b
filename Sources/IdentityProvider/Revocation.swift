import Foundation

extension IdentityProvider {
    /// `POST /auth/revoke`: ends the client's authorization for the person the token belongs to
    /// (the service leaves their "apps using Sign in with Keyhaven" list and the next sign-in is a
    /// first one again). Unknown or already revoked tokens succeed too, as at Apple.
    public func revoke(_ form: [String: String]) async -> Result<Void, OAuthError> {
        do {
            let client = try await authenticateClient(form)
            guard let token = form["token"], !token.isEmpty else {
                return .failure(.invalidRequest("token is required."))
            }
            if let hint = form["token_type_hint"], !hint.isEmpty, !["refresh_token", "access_token"].contains(hint) {
                return .failure(.invalidRequest("token_type_hint must be refresh_token or access_token."))
            }
            var grantId = try await read { connection in
                try await connection.fetchOne(
                    String.self,
                    "SELECT id FROM grants WHERE refresh_hash = ? AND client_id = ?",
                    .text(Self.hash(token)),
                    .text(client.id)
                )
            }
            if grantId == nil { grantId = try await grant(forAccessToken: token) }
            guard let grantId else { return .success(()) }
            let now = nowMilliseconds
            try await write { connection in
                guard
                    let userId = try await connection.fetchOne(
                        String.self,
                        "SELECT user_id FROM grants WHERE id = ? AND client_id = ?",
                        .text(grantId),
                        .text(client.id)
                    )
                else { return }
                try await self.endAuthorization(userId: userId, clientId: client.id, now: now, connection)
            }
            return .success(())
        } catch let error as OAuthError {
            return .failure(error)
        } catch {
            return .failure(.init("server_error", "The request could not be completed."))
        }
    }

    /// Revokes every grant of a person for a client and marks the consent revoked (the name is sent
    /// again on the next first authorization).
    func endAuthorization(userId: String, clientId: String, now: Int64, _ connection: any SQLConnection) async throws {
        try await connection.query(
            "UPDATE grants SET revoked = ? WHERE user_id = ? AND client_id = ? AND revoked IS NULL",
            .integer(now),
            .text(userId),
            .text(clientId)
        )
        try await connection.query(
            """
            UPDATE consents SET state = 'revoked', name_delivered = 0, updated = ? \
            WHERE user_id = ? AND client_id = ?
            """,
            .integer(now),
            .text(userId),
            .text(clientId)
        )
    }

    /// The relationship between a person (by their team-scoped `sub`) and a client, for the
    /// relying-party kit: `authorized`, `revoked`, `notFound` or `transferred`.
    public func credentialState(_ form: [String: String]) async -> Result<CredentialState, OAuthError> {
        do {
            let client = try await authenticateClient(form)
            guard let sub = form["sub"] ?? form["user"], !sub.isEmpty else {
                return .failure(.invalidRequest("sub is required."))
            }
            return .success(
                try await read { connection in
                    guard
                        let subject = try await connection.fetchOne(
                            SubjectRecord.self,
                            "\(SubjectRecord.select) WHERE sub = ?",
                            .text(sub)
                        )
                    else { return .notFound }
                    let userId = subject.userId
                    if subject.teamId != client.teamId {
                        let moved = try await connection.one(
                            "SELECT transfer_sub FROM transfers WHERE old_sub = ? AND to_team = ?",
                            .text(sub),
                            .text(client.teamId)
                        )
                        return moved == nil ? .notFound : .transferred
                    }
                    return try await self.state(userId: userId, clientId: client.id, connection)
                }
            )
        } catch let error as OAuthError {
            return .failure(error)
        } catch {
            return .failure(.init("server_error", "The request could not be completed."))
        }
    }

    func state(userId: String, clientId: String, _ connection: any SQLConnection) async throws -> CredentialState {
        let state = try await connection.fetchOne(
            String.self,
            "SELECT state FROM consents WHERE user_id = ? AND client_id = ?",
            .text(userId),
            .text(clientId)
        )
        switch state {
        case "authorized": return .authorized
        case "revoked": return .revoked
        default: return .notFound
        }
    }

    /// The credential state of a signed-in person for a client (Keyhaven's view).
    public func credentialState(userId: String, clientId: String) async throws -> CredentialState {
        try await read { try await self.state(userId: userId, clientId: clientId, $0) }
    }
}
