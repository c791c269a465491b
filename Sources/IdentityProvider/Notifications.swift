import Foundation
import KeyhavenJOSE

/// Sends one notification: `POST url` with a JSON body. Returns the HTTP status, or nil when the
/// receiver could not be reached or did not answer in time.
public protocol NotificationTransport: Sendable {
    func post(url: String, body: [UInt8]) async -> Int?
}

/// What one delivery round did.
public struct DeliveryRound: Sendable, Hashable {
    public var attempted = 0
    public var delivered = 0
    public var failed = 0
}

/// The outbox at a glance.
public struct OutboxSummary: Sendable, Hashable, Codable {
    public var pending: Int
    public var delivered: Int
    /// Every POST made, successful or not.
    public var attempts: Int
    /// Rows that reached the retry limit and wait for an operator.
    public var abandoned: Int
}

extension IdentityProvider {
    /// Delivers what is due: claims up to `limit` rows (so two instances never post the same row at
    /// once), signs each event freshly (`iat` now, `exp` a day later, the row id as `jti`), posts
    /// `{"payload": "<JWS>"}`, and records the result. A non-2xx answer or no answer schedules a
    /// retry with backoff; delivery is at least once.
    @discardableResult
    public func deliverDueNotifications(
        using transport: any NotificationTransport,
        limit: Int = 32
    ) async throws
        -> DeliveryRound
    {
        let now = nowMilliseconds
        let policy = configuration.notificationRetry
        // One statement claims the due rows by moving them past a lease. On PostgreSQL, rows another
        // instance is claiming are skipped rather than waited for (no lock-order cycles between
        // claimers); SQLite's writers are serialized anyway.
        let skipLocked = database.dialect == .postgres ? " FOR UPDATE SKIP LOCKED" : ""
        let claimed = try await write { connection in
            try await connection.fetchAll(
                OutboxRecord.self,
                """
                UPDATE outbox SET next_attempt = ? WHERE id IN (SELECT id FROM outbox WHERE delivered IS NULL \
                AND next_attempt <= ? AND attempts < ? ORDER BY next_attempt, id LIMIT ?\(skipLocked)) \
                AND delivered IS NULL RETURNING \(OutboxRecord.columns)
                """,
                .integer(now + policy.lease),
                .integer(now),
                .integer(policy.giveUpAfter),
                .integer(Int64(limit))
            )
        }
        guard !claimed.isEmpty else { return DeliveryRound() }
        let key = try await keys().signing
        let issuer = configuration.issuer
        let seconds = now / 1000
        let results = await withTaskGroup(of: (String, Int64, Int?).self) { group in
            for row in claimed {
                let (id, url, attempts) = (row.id, row.url, row.attempts)
                let claims = NotificationClaims(
                    iss: issuer,
                    aud: row.clientId,
                    iat: seconds,
                    exp: seconds + 86_400,
                    jti: id,
                    events: row.event
                )
                group.addTask {
                    guard let jws = try? JWS.sign(claims, with: key),
                        let body = try? JSONEncoder().encode(["payload": jws])
                    else { return (id, attempts, nil) }
                    return (id, attempts, await transport.post(url: url, body: [UInt8](body)))
                }
            }
            var results: [(String, Int64, Int?)] = []
            for await result in group { results.append(result) }
            return results
        }
        var round = DeliveryRound()
        let finished = nowMilliseconds
        let jitter = Double(configuration.randomBytes(1)[0]) / 255
        try await write { connection in
            // In id order, so two rounds recording overlapping rows (a lease that ran out) take
            // their row locks in the same order.
            for (id, attempts, status) in results.sorted(by: { $0.0 < $1.0 }) {
                if let status, (200..<300).contains(status) {
                    try await connection.query(
                        "UPDATE outbox SET delivered = ?, attempts = ?, last_error = NULL WHERE id = ?",
                        .integer(finished),
                        .integer(attempts + 1),
                        .text(id)
                    )
                } else {
                    try await connection.query(
                        "UPDATE outbox SET attempts = ?, next_attempt = ?, last_error = ? WHERE id = ?",
                        .integer(attempts + 1),
                        .integer(finished + policy.delay(afterAttempt: attempts + 1, jitter: jitter)),
                        .text(status.map { "HTTP \($0)" } ?? "no answer"),
                        .text(id)
                    )
                }
            }
        }
        for (_, _, status) in results {
            round.attempted += 1
            if let status, (200..<300).contains(status) { round.delivered += 1 } else { round.failed += 1 }
        }
        return round
    }

    /// When the next undelivered row is due (ms since 1970), if any.
    public func nextNotificationDue() async throws -> Int64? {
        let limit = configuration.notificationRetry.giveUpAfter
        return try await read { connection in
            try await connection.fetchOne(
                Int64?.self,
                "SELECT MIN(next_attempt) AS due FROM outbox WHERE delivered IS NULL AND attempts < ?",
                .integer(limit)
            ) ?? nil
        }
    }

    public func outboxSummary() async throws -> OutboxSummary {
        let limit = configuration.notificationRetry.giveUpAfter
        return try await read { connection in
            struct Counts: Decodable {
                var pending: Int?
                var delivered: Int?
                var attempts: Int?
                var abandoned: Int?
            }
            let row = try await connection.fetchOne(
                Counts.self,
                """
                SELECT \
                CAST(SUM(CASE WHEN delivered IS NULL AND attempts < ? THEN 1 ELSE 0 END) AS BIGINT) AS pending, \
                CAST(SUM(CASE WHEN delivered IS NOT NULL THEN 1 ELSE 0 END) AS BIGINT) AS delivered, \
                CAST(SUM(CASE WHEN delivered IS NULL AND attempts >= ? THEN 1 ELSE 0 END) AS BIGINT) AS abandoned, \
                CAST(SUM(attempts) AS BIGINT) AS attempts FROM outbox
                """,
                .integer(limit),
                .integer(limit)
            )
            return OutboxSummary(
                pending: row?.pending ?? 0,
                delivered: row?.delivered ?? 0,
                attempts: row?.attempts ?? 0,
                abandoned: row?.abandoned ?? 0
            )
        }
    }
}
