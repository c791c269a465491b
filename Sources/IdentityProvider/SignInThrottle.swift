import Foundation

/// How many wrong guesses a sign-in key (one account, or one client address) may make before it
/// is locked out, and for how long.
///
/// Failures are counted per key; once they reach ``allowedFailures`` every further failure locks
/// the key for `firstLockout · 2^(failures − allowedFailures)`, at most ``maxLockout``. A key that
/// stays quiet for ``forgetAfter`` after its last failure (or the end of its lockout) starts
/// over. While a key is locked no password is checked at all, so a locked account cannot be
/// guessed however fast someone tries.
public struct SignInThrottle: Sendable, Hashable {
    public var allowedFailures: Int64
    /// Milliseconds.
    public var firstLockout: Int64
    /// Milliseconds.
    public var maxLockout: Int64
    /// Milliseconds.
    public var forgetAfter: Int64

    public init(allowedFailures: Int64, firstLockout: Int64, maxLockout: Int64, forgetAfter: Int64) {
        self.allowedFailures = allowedFailures
        self.firstLockout = firstLockout
        self.maxLockout = maxLockout
        self.forgetAfter = forgetAfter
    }

    /// Per account: 5 wrong guesses, then 30 s, 1 min, 2 min … at most 15 min; forgotten after
    /// 15 quiet minutes. At most ~100 guesses a day for one account.
    public static let account = SignInThrottle(
        allowedFailures: 5,
        firstLockout: 30_000,
        maxLockout: 900_000,
        forgetAfter: 900_000
    )

    /// Per client address (many accounts from one place): 50 wrong guesses, then the same ladder.
    public static let address = SignInThrottle(
        allowedFailures: 50,
        firstLockout: 30_000,
        maxLockout: 900_000,
        forgetAfter: 900_000
    )

    /// No limit (tests that sign in many times, or a provider behind a gateway that limits).
    public static let unlimited = SignInThrottle(
        allowedFailures: .max,
        firstLockout: 0,
        maxLockout: 0,
        forgetAfter: 0
    )

    /// How long a key is locked after its `failures`-th failure (0: not locked).
    public func lockout(afterFailures failures: Int64) -> Int64 {
        guard failures >= allowedFailures, firstLockout > 0 else { return 0 }
        let exponent = min(failures - allowedFailures, 40)
        let raw = Double(firstLockout) * pow(2, Double(exponent))
        return Int64(min(raw, Double(maxLockout)))
    }
}

extension IdentityProvider {
    /// The throttle keys of one sign-in attempt. Addresses and client addresses are stored only as
    /// hashes, so the table names no one.
    func throttleKeys(email: String, address: String?) -> [(key: String, policy: SignInThrottle)] {
        var keys = [("account:" + Self.hash(email.lowercased()), configuration.accountThrottle)]
        if let address, !address.isEmpty {
            keys.append(("address:" + Self.hash(address), configuration.addressThrottle))
        }
        return keys.filter { $0.1 != .unlimited }
    }

    /// Throws ``ProviderError`` `.tooManyAttempts` while any of the keys is locked.
    func checkThrottle(_ keys: [(key: String, policy: SignInThrottle)]) async throws {
        guard !keys.isEmpty else { return }
        let now = nowMilliseconds
        let names = keys.map { SQLValue.text($0.key) }
        let lockedUntil = try await read { connection in
            try await connection.query(
                "SELECT locked_until FROM sign_in_attempts WHERE throttle_key IN (\(names.map { _ in "?" }.joined(separator: ", ")))",
                names
            ).compactMap { $0.integer("locked_until") }.max() ?? 0
        }
        guard lockedUntil > now else { return }
        let seconds = (lockedUntil - now + 999) / 1000
        throw ProviderError(
            .tooManyAttempts,
            "Too many sign-in attempts. Try again in \(Self.describe(seconds: seconds)).",
            retryAfter: seconds
        )
    }

    /// Counts one failure against every key (atomically, so instances sharing a database count
    /// together) and locks the keys that reached their limit. Keys are always taken account first,
    /// then address, so concurrent sign-ins never wait on each other in a cycle.
    func recordFailure(_ keys: [(key: String, policy: SignInThrottle)]) async throws {
        guard !keys.isEmpty else { return }
        let now = nowMilliseconds
        try await write { connection in
            for (key, policy) in keys {
                let row = try await connection.one(
                    """
                    INSERT INTO sign_in_attempts (throttle_key, failures, locked_until, forget_after) VALUES (?, 1, 0, ?) \
                    ON CONFLICT (throttle_key) DO UPDATE SET failures = CASE \
                    WHEN sign_in_attempts.forget_after < ? THEN 1 ELSE sign_in_attempts.failures + 1 END \
                    RETURNING failures
                    """,
                    .text(key),
                    .integer(now + policy.forgetAfter),
                    .integer(now)
                )
                let failures = row?.integer("failures") ?? 1
                let lockedUntil = now + policy.lockout(afterFailures: failures)
                try await connection.query(
                    "UPDATE sign_in_attempts SET locked_until = ?, forget_after = ? WHERE throttle_key = ?",
                    .integer(lockedUntil),
                    .integer(lockedUntil + policy.forgetAfter),
                    .text(key)
                )
            }
        }
        // Keys nobody has tried for a while carry no information; keep the table small. In a
        // transaction of its own, and on PostgreSQL skipping rows another sign-in holds, so it
        // never waits in a cycle with one.
        let sql =
            database.dialect == .postgres
            ? """
            DELETE FROM sign_in_attempts WHERE throttle_key IN (SELECT throttle_key FROM sign_in_attempts \
            WHERE forget_after < ? FOR UPDATE SKIP LOCKED)
            """
            : "DELETE FROM sign_in_attempts WHERE forget_after < ?"
        try await write { try await $0.query(sql, .integer(now)) }
    }

    /// A successful sign-in clears its account's count (not its address's: one good password must
    /// not reset the count of someone guessing many accounts).
    func clearFailures(email: String) async throws {
        let key = "account:" + Self.hash(email.lowercased())
        try await write { try await $0.query("DELETE FROM sign_in_attempts WHERE throttle_key = ?", .text(key)) }
    }

    static func describe(seconds: Int64) -> String {
        if seconds < 60 { return seconds == 1 ? "1 second" : "\(seconds) seconds" }
        let minutes = (seconds + 59) / 60
        return minutes == 1 ? "1 minute" : "\(minutes) minutes"
    }
}
