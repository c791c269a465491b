import Foundation
import KeyhavenJOSE

/// What a person does from their account page (or from Keyhaven): each change is recorded together
/// with the notification it owes the service, in one transaction.
extension IdentityProvider {
    /// The services the person signed in to, with what each sees.
    public func connectedServices(userId: String) async throws -> [ConnectedService] {
        try await read { connection in
            guard let user = try await self.user(userId, connection) else { return [] }
            var result: [ConnectedService] = []
            for record in try await connection.fetchAll(
                ConsentRecord.self,
                "\(ConsentRecord.select) WHERE user_id = ? ORDER BY created",
                .text(userId)
            ) {
                let consent = Consent(record)
                guard let client = try await self.client(consent.clientId, connection) else { continue }
                let email = try await self.emailFor(user: user, client: client, connection)
                result.append(
                    ConnectedService(
                        clientId: client.id,
                        name: client.name,
                        state: consent.state,
                        email: email.address,
                        hidesEmail: email.isPrivate,
                        relayForwarding: consent.relayForwarding
                    )
                )
            }
            return result
        }
    }

    /// "Stop using Sign in with Keyhaven" for one service: its grants end and it gets `consent-revoked`.
    public func stopUsing(userId: String, clientId: String) async throws {
        let now = nowMilliseconds
        let jti = randomToken(16)
        try await write { connection in
            guard let client = try await self.client(clientId, connection),
                try await self.state(userId: userId, clientId: clientId, connection) == .authorized
            else { throw ProviderError(.notFound, "you do not use Sign in with Keyhaven with \(clientId)") }
            try await self.endAuthorization(userId: userId, clientId: clientId, now: now, connection)
            try await self.enqueue(.consentRevoked, userId: userId, client: client, id: jti, now: now, connection)
        }
    }

    /// Turns forwarding from the relay address to the person's inbox off or on; the service gets
    /// `email-disabled` or `email-enabled`. Only for services that see a relay address.
    public func setRelayForwarding(userId: String, clientId: String, enabled: Bool) async throws {
        let now = nowMilliseconds
        let jti = randomToken(16)
        try await write { connection in
            guard let client = try await self.client(clientId, connection),
                let user = try await self.user(userId, connection),
                try await self.state(userId: userId, clientId: clientId, connection) == .authorized
            else { throw ProviderError(.notFound, "you do not use Sign in with Keyhaven with \(clientId)") }
            let email = try await self.emailFor(user: user, client: client, connection)
            guard email.isPrivate else {
                throw ProviderError(.invalidArgument, "\(client.name) sees your own address, not a relay address")
            }
            let changed = try await connection.query(
                """
                UPDATE consents SET relay_forwarding = ?, updated = ? \
                WHERE user_id = ? AND client_id = ? AND relay_forwarding <> ? RETURNING client_id
                """,
                SQLValue(enabled),
                .integer(now),
                .text(userId),
                .text(clientId),
                SQLValue(enabled)
            )
            guard !changed.isEmpty else { return }
            try await self.enqueue(
                enabled ? .emailEnabled : .emailDisabled,
                userId: userId,
                client: client,
                id: jti,
                now: now,
                connection,
                email: email.address
            )
        }
    }

    /// Deletes the person's account: every service they used gets `account-delete`, then their
    /// data goes (the outbox keeps only what the notifications need).
    public func deleteAccount(userId: String) async throws {
        let now = nowMilliseconds
        try await write { connection in
            guard try await self.user(userId, connection) != nil else {
                throw ProviderError(.notFound, "no such account")
            }
            let clientIds = try await connection.fetchAll(
                String.self,
                "SELECT client_id FROM consents WHERE user_id = ?",
                .text(userId)
            )
            for clientId in clientIds {
                guard let client = try await self.client(clientId, connection) else { continue }
                let id = self.randomToken(16)
                try await self.enqueue(.accountDelete, userId: userId, client: client, id: id, now: now, connection)
            }
            for table in [
                "grants", "codes", "consents", "sessions", "device_tokens", "known_devices", "subjects", "transfers",
            ] {
                try await connection.query("DELETE FROM \(table) WHERE user_id = ?", .text(userId))
            }
            try await connection.query("DELETE FROM users WHERE id = ?", .text(userId))
        }
    }

    /// Records a notification for `client` (nothing when it has no notification URL).
    func enqueue(
        _ kind: NotificationEvent.Kind,
        userId: String,
        client: Client,
        id: String,
        now: Int64,
        _ connection: any SQLConnection,
        email: String? = nil
    ) async throws {
        guard let url = client.notificationURL,
            let sub = try await connection.fetchOne(
                String.self,
                "SELECT sub FROM subjects WHERE user_id = ? AND team_id = ?",
                .text(userId),
                .text(client.teamId)
            )
        else { return }
        let event = NotificationEvent(
            type: kind,
            sub: sub,
            eventTime: now,
            email: email,
            isPrivateEmail: email == nil ? nil : true
        )
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        try await connection.insert(
            OutboxRecord(
                id: id,
                clientId: client.id,
                url: url,
                event: String(decoding: try encoder.encode(event), as: UTF8.self),
                eventType: kind.rawValue,
                created: now,
                attempts: 0,
                nextAttempt: now
            )
        )
    }
}
