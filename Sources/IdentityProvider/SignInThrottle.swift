import Crypto
import Foundation
public import _KeyhavenSupport

@_exported public import struct _KeyhavenSupport.ThrottlePolicy

/// How many wrong guesses a sign-in key (one account, or one client address) may make before it
/// is locked out, and for how long (``ThrottlePolicy``: the ladder, its presets ``ThrottlePolicy/account``,
/// ``ThrottlePolicy/address`` and ``ThrottlePolicy/unlimited``, shared with shiny).
///
/// Attempts are counted per key as they arrive, before the password is checked (so a burst of
/// concurrent guesses is counted, not let through), and refunded when they turn out right. Once
/// the count reaches ``ThrottlePolicy/allowedFailures`` every further one locks the key for
/// `firstLockout · 2^(failures − allowedFailures)`, at most ``ThrottlePolicy/maxLockout``. A key
/// that stays quiet for ``ThrottlePolicy/forgetAfter`` after its last failure (or the end of its
/// lockout) starts over. While a key is locked no password is checked at all, so a locked account
/// cannot be guessed however fast someone tries.
public typealias SignInThrottle = ThrottlePolicy

extension SignInThrottle {
    /// Failed token and revocation calls per client address (across clients): 30, then 10 s,
    /// 20 s … at most 5 min; forgotten after a quiet hour.
    public static let tokenAddress = SignInThrottle(
        allowedFailures: 30,
        firstLockout: 10_000,
        maxLockout: 300_000,
        forgetAfter: 3_600_000
    )

    /// Failed token and revocation calls per client id from one address: 10, then the same ladder.
    /// Never per client id alone: anyone can send a client's id, and must not lock that client out.
    public static let tokenClient = SignInThrottle(
        allowedFailures: 10,
        firstLockout: 10_000,
        maxLockout: 300_000,
        forgetAfter: 3_600_000
    )
}

/// One counter an attempt is charged to.
struct ThrottleKey: Sendable {
    var key: String
    var policy: SignInThrottle
}

extension IdentityProvider {
    /// The counters of one sign-in attempt: the account (the address as typed, lowercased, as
    /// accounts are looked up) and the client address. Stored as HMACs under the provider's own
    /// key, so the table names no one, even to someone who guesses e-mail or IP addresses.
    ///
    /// With `device` (the hash of a known-device cookie this account was given on an earlier
    /// success), the device's own counter takes the account's place: the account's counter limits
    /// unknown devices only, so a stranger who exhausts it does not lock the owner out (security
    /// review M9).
    func throttleKeys(email: String, address: String?, device: String? = nil) async throws -> [ThrottleKey] {
        let secret = try await cachedAccessKey()
        func mac(_ text: String) -> String {
            Hex.encode(HMAC<SHA256>.authenticationCode(for: Array(("sign-in-throttle|" + text).utf8), using: secret))
        }
        var keys = [
            device.map { ThrottleKey(key: "device:" + mac("device|" + $0), policy: configuration.deviceThrottle) }
                ?? ThrottleKey(key: "account:" + mac(email.lowercased()), policy: configuration.accountThrottle)
        ]
        if let address = address.map(Self.throttleAddress), !address.isEmpty {
            keys.append(ThrottleKey(key: "address:" + mac(address), policy: configuration.addressThrottle))
        }
        return keys.filter { $0.policy != .unlimited }
    }

    /// The counters of a call to `/auth/token` or `/auth/revoke`: the client address, and the
    /// client id at that address (never the client id alone, which anyone can send).
    func tokenThrottleKeys(clientId: String, address: String?) async throws -> [ThrottleKey] {
        guard let address = address.map(Self.throttleAddress), !address.isEmpty else { return [] }
        let secret = try await cachedAccessKey()
        func mac(_ text: String) -> String {
            Hex.encode(HMAC<SHA256>.authenticationCode(for: Array(("token-throttle|" + text).utf8), using: secret))
        }
        return [
            ThrottleKey(key: "token-address:" + mac(address), policy: configuration.tokenAddressThrottle),
            ThrottleKey(
                key: "token-client:" + mac(clientId + "|" + address),
                policy: configuration.tokenClientThrottle
            ),
        ].filter { $0.policy != .unlimited }
    }

    /// An IPv6 address counts by its /64 (what one subscriber usually holds); others as they are.
    static func throttleAddress(_ address: String) -> String {
        guard address.contains(":") else { return address }
        var storage = in6_addr()
        guard inet_pton(AF_INET6, address, &storage) == 1 else { return address }
        let bytes = withUnsafeBytes(of: storage) { Array($0.prefix(8)) }
        return Hex.encode(bytes) + "::/64"
    }

    struct Locked: Error {
        var until: Int64
    }

    /// Charges this attempt to every key before anything is checked, or throws ``ProviderError``
    /// `.tooManyAttempts` (charging nothing) while one is locked. One transaction, keys taken account
    /// first then address, so concurrent sign-ins never wait on each other in a cycle.
    func chargeAttempt(_ keys: [ThrottleKey]) async throws {
        guard !keys.isEmpty else { return }
        let now = nowMilliseconds
        do {
            try await write { connection in
                for key in keys {
                    // No row back: the key is locked (the update's WHERE refused), nothing changed.
                    guard
                        let failures = try await connection.fetchOne(
                            Int64.self,
                            """
                            INSERT INTO sign_in_attempts (throttle_key, failures, locked_until, forget_after) \
                            VALUES (?, 1, 0, ?) ON CONFLICT (throttle_key) DO UPDATE SET failures = CASE \
                            WHEN sign_in_attempts.forget_after < ? THEN 1 ELSE sign_in_attempts.failures + 1 END \
                            WHERE sign_in_attempts.locked_until <= ? RETURNING failures
                            """,
                            .text(key.key),
                            .integer(now + key.policy.forgetAfter),
                            .integer(now),
                            .integer(now)
                        )
                    else {
                        let until = try await connection.fetchOne(
                            Int64.self,
                            "SELECT locked_until FROM sign_in_attempts WHERE throttle_key = ?",
                            .text(key.key)
                        )
                        throw Locked(until: until ?? now + 1000)  // rolls back the keys charged before
                    }
                    let lockedUntil = now + key.policy.lockout(afterFailures: failures)
                    try await connection.query(
                        "UPDATE sign_in_attempts SET locked_until = ?, forget_after = ? WHERE throttle_key = ?",
                        .integer(lockedUntil),
                        .integer(max(now, lockedUntil) + key.policy.forgetAfter),
                        .text(key.key)
                    )
                }
            }
        } catch let locked as Locked {
            let seconds = max(1, (locked.until - now + 999) / 1000)
            throw ProviderError(
                .tooManyAttempts,
                "Too many sign-in attempts. Try again in \(ThrottlePolicy.describe(seconds: seconds)).",
                details: seconds  // retryAfter
            )
        }
    }

    /// Settles a charged attempt that was not a wrong guess. A success clears its account's (or
    /// known device's) count; otherwise (the right password, its code still to come) the account is refunded. The
    /// address is only refunded: one good password must not clear the count of someone guessing
    /// many accounts from there. A lock the refunded attempt set is lifted.
    func refundAttempt(_ keys: [ThrottleKey], succeeded: Bool) async throws {
        guard !keys.isEmpty else { return }
        try await write { connection in
            for key in keys {
                if succeeded && (key.key.hasPrefix("account:") || key.key.hasPrefix("device:")) {
                    try await connection.query("DELETE FROM sign_in_attempts WHERE throttle_key = ?", .text(key.key))
                } else {
                    try await connection.query(
                        """
                        UPDATE sign_in_attempts SET failures = failures - 1, locked_until = CASE \
                        WHEN failures - 1 < ? THEN 0 ELSE locked_until END WHERE throttle_key = ? AND failures > 0
                        """,
                        .integer(key.policy.allowedFailures),
                        .text(key.key)
                    )
                }
            }
        }
    }

    /// Forgets keys nobody has tried for a while (they carry no information), best effort. In a
    /// transaction of its own, and on PostgreSQL skipping rows a sign-in holds, so it never waits in
    /// a cycle with one.
    func pruneAttempts() async {
        let sql =
            database.dialect == .postgres
            ? """
            DELETE FROM sign_in_attempts WHERE throttle_key IN (SELECT throttle_key FROM sign_in_attempts \
            WHERE forget_after < ? FOR UPDATE SKIP LOCKED)
            """
            : "DELETE FROM sign_in_attempts WHERE forget_after < ?"
        let now = nowMilliseconds
        _ = try? await write { try await $0.query(sql, .integer(now)) }
    }
}
