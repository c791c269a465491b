import Foundation
import OneTimeCodes
import _KeyhavenSupport

/// Signing in to the provider itself: on its page (a session cookie) or from Keyhaven (a device token).
extension IdentityProvider {
    /// Checks a person's password and, when their account has one, their one-time code.
    ///
    /// Attempts are counted per account and per client `address` (``SignInThrottle``) as they
    /// arrive, and refunded when they were not wrong guesses; while either counter is locked
    /// nothing is checked. An unknown e-mail address is counted and locked exactly like a known
    /// one, so lockouts do not tell which addresses exist either.
    ///
    /// A browser that signed in to this account before carries a known-device cookie
    /// (``rememberDevice(_:)``); passed as `knownDevice`, its attempts count against the device's own
    /// counter instead of the account's, so a stranger who locks the account (for unknown devices)
    /// does not lock its owner out. A Keyhaven installation that holds a current device token of
    /// this account (``createDeviceToken(_:name:)``; `keyhaven idp login` sends it when it signs in
    /// again) passes it as `deviceToken` and is exempt in exactly the same way.
    /// - Throws: ``ProviderError`` `.invalidCredentials` (the same for an unknown address and a wrong
    ///   password), `.secondFactorRequired` when the password was right and a code is needed,
    ///   `.tooManyAttempts` with the seconds to wait, or `.unavailable`.
    public func authenticate(
        email: String,
        password: String,
        code: String?,
        from address: String? = nil,
        knownDevice: String? = nil,
        deviceToken: String? = nil
    ) async throws -> Authentication {
        var device = try await knownDeviceHash(knownDevice, email: email)
        if device == nil { device = try await deviceTokenHash(deviceToken, email: email) }
        let keys = try await throttleKeys(email: email, address: address, device: device)
        try await chargeAttempt(keys)
        do {
            let authentication = try await checkCredentials(email: email, password: password, code: code)
            try await refundAttempt(keys, succeeded: true)
            return authentication
        } catch let error as ProviderError where error.code != .invalidCredentials {
            try await refundAttempt(keys, succeeded: false)  // not a wrong guess
            throw error
        } catch let error as ProviderError {
            await pruneAttempts()
            throw error
        }
    }

    func checkCredentials(email: String, password: String, code: String?) async throws -> Authentication {
        let user = try await user(email: email)
        // Hash even for unknown addresses, so timing does not tell which addresses exist.
        let verified = try await passwordHashing.verify(password, against: user?.passwordHash ?? decoyHash)
        guard let user, verified else {
            throw ProviderError(.invalidCredentials, "The e-mail address or password is not right.")
        }
        guard let stored = user.totpSecret else {
            return Authentication(userId: user.id, authTime: nowSeconds, secondFactor: false)
        }
        let secret = try unsealSecret(stored, userId: user.id)
        guard let code, !code.isEmpty else {
            throw ProviderError(.secondFactorRequired, "Enter the code from your authenticator app.")
        }
        guard let totp = try? TOTP(secret: secret), let step = totp.matchingStep(code, at: configuration.now()) else {
            throw ProviderError(.invalidCredentials, "The code is not right.")
        }
        // A code works once: only a step later than the last one used is accepted, claimed
        // atomically so two sign-ins racing with one code cannot both pass.
        let claimed = try await write { connection in
            try await connection.one(
                """
                UPDATE users SET totp_last_step = ? WHERE id = ? \
                AND (totp_last_step IS NULL OR totp_last_step < ?) RETURNING id
                """,
                .integer(step),
                .text(user.id),
                .integer(step)
            ) != nil
        }
        guard claimed else {
            throw ProviderError(.invalidCredentials, "That code was already used. Wait for the next one.")
        }
        return Authentication(userId: user.id, authTime: nowSeconds, secondFactor: true)
    }

    /// A hash at the configured cost that no password matches, checked when the address is unknown.
    var decoyHash: String {
        "$scrypt$ln=\(configuration.passwordLogN),r=8,p=1$\(Data(count: 16).base64EncodedString())$"
            + Data(count: 32).base64EncodedString()
    }

    /// Starts a browser session; returns the cookie value.
    public func startSession(_ authentication: Authentication) async throws -> String {
        let token = randomToken()
        let expires = nowMilliseconds + configuration.sessionLifetime * 1000
        try await write { connection in
            try await connection.insert(
                SessionRecord(
                    hash: Self.hash(token),
                    userId: authentication.userId,
                    authTime: authentication.authTime,
                    secondFactor: authentication.secondFactor,
                    expires: expires
                )
            )
        }
        return token
    }

    /// The session a cookie names, if it is current.
    public func session(_ token: String) async throws -> Authentication? {
        let now = nowMilliseconds
        return try await read { connection in
            try await connection.fetchOne(
                SignInRecord.self,
                "SELECT \(SignInRecord.columns) FROM sessions WHERE hash = ? AND expires > ?",
                .text(Self.hash(token)),
                .integer(now)
            )?.authentication
        }
    }

    public func endSession(_ token: String) async throws {
        try await write { try await $0.query("DELETE FROM sessions WHERE hash = ?", .text(Self.hash(token))) }
    }

    /// Remembers the browser a person just signed in with: returns the value of its known-device
    /// cookie (32 random bytes, hex), stored only as its SHA-256, valid for
    /// ``ProviderConfiguration/knownDeviceLifetime``. A person keeps at most 20 such devices (the
    /// oldest are forgotten).
    public func rememberDevice(_ authentication: Authentication) async throws -> String {
        let token = Hex.encode(configuration.randomBytes(32))
        let now = nowMilliseconds
        let expires = now + configuration.knownDeviceLifetime * 1000
        try await write { connection in
            try await connection.query(
                "DELETE FROM known_devices WHERE user_id = ? AND expires <= ?",
                .text(authentication.userId),
                .integer(now)
            )
            try await connection.query(
                "INSERT INTO known_devices (hash, user_id, created, expires) VALUES (?, ?, ?, ?)",
                .text(Self.hash(token)),
                .text(authentication.userId),
                .integer(now),
                .integer(expires)
            )
            let kept = try await connection.fetchAll(
                String.self,
                "SELECT hash FROM known_devices WHERE user_id = ? ORDER BY created DESC, hash",
                .text(authentication.userId)
            )
            for hash in kept.dropFirst(20) {
                try await connection.query("DELETE FROM known_devices WHERE hash = ?", .text(hash))
            }
        }
        return token
    }

    /// Whether `token` is a current known-device cookie of the person `userId`.
    public func isKnownDevice(_ token: String?, userId: String) async throws -> Bool {
        guard let token, let owner = try await knownDeviceOwner(token) else { return false }
        return constantTimeEqual(owner.userId, userId)
    }

    /// The hash of `token` when it is a current known-device cookie of the account `email`.
    func knownDeviceHash(_ token: String?, email: String) async throws -> String? {
        guard let token, let owner = try await knownDeviceOwner(token),
            let user = try await user(email: email), constantTimeEqual(owner.userId, user.id)
        else { return nil }
        return owner.hash
    }

    /// The device counter's name for `token` when it is a current (not revoked) device token of the
    /// account `email`.
    func deviceTokenHash(_ token: String?, email: String) async throws -> String? {
        guard let token, token.hasPrefix("kd_"), token.utf8.count <= 128, let owner = try await device(token),
            let user = try await user(email: email), constantTimeEqual(owner.userId, user.id)
        else { return nil }
        return "device-token|" + Self.hash(token)
    }

    /// The person a known-device cookie belongs to (looked up by its SHA-256, which is then compared
    /// in constant time), if it has not expired.
    func knownDeviceOwner(_ token: String) async throws -> (hash: String, userId: String)? {
        guard token.utf8.count == 64, token.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) })
        else { return nil }
        let hash = Self.hash(token)
        let now = nowMilliseconds
        let row = try await read { connection in
            try await connection.fetchOne(
                String.self,
                "SELECT user_id FROM known_devices WHERE hash = ? AND expires > ?",
                .text(hash),
                .integer(now)
            ).map { (hash, $0) }
        }
        guard let row else { return nil }
        return row
    }

    /// A value that ties a form to its session (CSRF): an HMAC of the session token.
    public func formToken(forSession token: String) -> String {
        Self.hash("form|" + token)
    }

    /// Signs a Keyhaven installation in (`keyhaven idp login`): a long-lived device token, stored
    /// only as a hash here and sealed in the person's vault there.
    public func createDeviceToken(_ authentication: Authentication, name: String) async throws -> String {
        let token = "kd_" + randomToken()
        let now = nowMilliseconds
        try await write { connection in
            try await connection.insert(
                DeviceTokenRecord(
                    hash: Self.hash(token),
                    userId: authentication.userId,
                    name: String(name.prefix(100)),
                    authTime: authentication.authTime,
                    secondFactor: authentication.secondFactor,
                    created: now
                )
            )
        }
        return token
    }

    /// The person a device token signs in, if it is not revoked.
    public func device(_ token: String) async throws -> Authentication? {
        try await read { connection in
            try await connection.fetchOne(
                SignInRecord.self,
                "SELECT \(SignInRecord.columns) FROM device_tokens WHERE hash = ? AND revoked IS NULL",
                .text(Self.hash(token))
            )?.authentication
        }
    }

    public func revokeDeviceToken(_ token: String) async throws {
        let now = nowMilliseconds
        try await write {
            try await $0.query(
                "UPDATE device_tokens SET revoked = ? WHERE hash = ?",
                .integer(now),
                .text(Self.hash(token))
            )
        }
    }
}

extension IdentityProvider {
    /// The person's own address.
    public func email(userId: String) async throws -> String? {
        try await read { try await self.user(userId, $0)?.email }
    }
}
