public import Crypto
import Foundation
import KeyhavenJOSE
import _KeyhavenSupport

/// Secrets at rest (security review M4). With a secrets key (``ProviderConfiguration/secretsKey``,
/// kept outside the database) every secret the provider must be able to use again is stored
/// sealed with AES-256-GCM as `sealed:v1:<base64url nonce ‖ ciphertext ‖ tag>`:
///
/// | What | Where | Associated data |
/// |---|---|---|
/// | one-time-code secrets | `users.totp_secret` | the user's id |
/// | RS256 signing keys (PEM) | `signing_keys.private_pem` | `keyhaven-idp signing-key <kid>` |
/// | the access-token and throttle HMAC key | `idp_meta` `access-token-key` | `keyhaven-idp access-token-key` |
///
/// The associated data binds each value to its row, so a sealed value cannot be moved to another
/// account or key. A check value (`idp_meta` `secrets-key-check`) sealed with the key lets the
/// provider refuse, at ``IdentityProvider/prepare()``, a key that is not the database's, or a
/// start without a key once the database is sealed. Passwords and tokens are hashed instead
/// (they only need comparing).
///
/// Without a key (tests, in-memory databases, libraries that choose so) values are stored as
/// they are; `keyhaven idp` always has one (it creates `idp.secrets-key` when none is given).
/// Adding a key seals what was in the clear (``IdentityProvider/sealStoredSecrets()``);
/// ``IdentityProvider/resealSecrets(under:)`` moves everything to a new key.
extension IdentityProvider {
    static let sealedPrefix = "sealed:v1:"

    /// The associated data of each kind of sealed value.
    enum SealContext {
        /// One-time-code secrets: the user id alone, as since they were first sealed.
        static func totp(userId: String) -> String { userId }
        static func signingKey(_ kid: String) -> String { "keyhaven-idp signing-key " + kid }
        static let accessTokenKey = "keyhaven-idp access-token-key"
        static let keyCheck = "keyhaven-idp secrets-key-check"
    }

    static let keyCheckName = "secrets-key-check"
    static let keyCheckValue = "the identity provider's secrets key"

    static func seal(
        _ plaintext: String,
        context: String,
        key: SymmetricKey,
        randomBytes: (Int) -> [UInt8]
    ) throws -> String {
        let nonce = try AES.GCM.Nonce(data: randomBytes(12))
        let box = try AES.GCM.seal(Array(plaintext.utf8), using: key, nonce: nonce, authenticating: Array(context.utf8))
        guard let combined = box.combined else { throw StorageError(.sealingFailed, "cannot seal a secret") }
        return sealedPrefix + Base64URL.encode(Array(combined))
    }

    /// The plaintext of a `sealed:v1:` value, or nil when `key` or `context` is not the one it was
    /// sealed with (or the value is damaged).
    static func open(_ stored: String, context: String, key: SymmetricKey) -> String? {
        guard stored.hasPrefix(sealedPrefix),
            let bytes = Base64URL.decode(String(stored.dropFirst(sealedPrefix.count))),
            let box = try? AES.GCM.SealedBox(combined: bytes),
            let opened = try? AES.GCM.open(box, using: key, authenticating: Array(context.utf8))
        else { return nil }
        return String(decoding: opened, as: UTF8.self)
    }

    /// `value` as it is stored: sealed when there is a secrets key.
    func sealed(_ value: String, context: String) throws -> String {
        guard let key = configuration.secretsKey else { return value }
        return try Self.seal(value, context: context, key: key, randomBytes: configuration.randomBytes)
    }

    /// The value a stored key (signing, access-token) holds.
    /// - Throws: ``StorageError`` `secretsKeyRequired` or `wrongSecretsKey`; the message names
    ///   what, never a value.
    func unsealed(_ stored: String, context: String, what: String) throws -> String {
        guard stored.hasPrefix("sealed:") else { return stored }
        guard let key = configuration.secretsKey else {
            throw StorageError(.secretsKeyRequired, "the provider's \(what) is sealed and it has no secrets key")
        }
        guard let value = Self.open(stored, context: context, key: key) else {
            throw StorageError(.wrongSecretsKey, "the provider's \(what) is sealed with another secrets key")
        }
        return value
    }

    /// The form of the one-time-code `secret` to store for `userId`.
    func sealSecret(_ secret: String, userId: String) throws -> String {
        try sealed(secret, context: SealContext.totp(userId: userId))
    }

    /// The one-time-code secret a stored value holds.
    /// - Throws: ``ProviderError`` when it is sealed and this provider has no key, or the wrong one.
    func unsealSecret(_ stored: String, userId: String) throws -> String {
        guard stored.hasPrefix("sealed:") else { return stored }
        guard let key = configuration.secretsKey else {
            throw ProviderError(
                .unavailable,
                "Sign-in with a one-time code is unavailable: the provider was started without its secrets key."
            )
        }
        guard let opened = Self.open(stored, context: SealContext.totp(userId: userId), key: key) else {
            throw ProviderError(
                .unavailable,
                "Sign-in with a one-time code is unavailable: the provider's secrets key is not the one that sealed it."
            )
        }
        return opened
    }

    /// Whether `key` opens the database's check value (false when the database has none). Reads
    /// only; the database must have been prepared once.
    public func secretsKeyMatches(_ key: SymmetricKey) async throws -> Bool {
        guard let check = try await read({ try await self.meta(Self.keyCheckName, $0) }) else { return false }
        return Self.open(check, context: SealContext.keyCheck, key: key) == Self.keyCheckValue
    }

    /// Checks that this provider's secrets key is the database's, inside a transaction: with a
    /// key, the database's check value must open with it (a database without one gets it now, so
    /// the first key to seal anything is the database's key); without a key, the database must
    /// not have one.
    func verifySecretsKey(_ connection: any SQLConnection) async throws {
        let check = try await meta(Self.keyCheckName, connection)
        guard let key = configuration.secretsKey else {
            if check != nil {
                throw StorageError(
                    .secretsKeyRequired,
                    "the provider's secrets are sealed: open it with the secrets key that sealed them"
                )
            }
            return
        }
        var stored = check
        if stored == nil {
            let sealedCheck = try Self.seal(
                Self.keyCheckValue,
                context: SealContext.keyCheck,
                key: key,
                randomBytes: configuration.randomBytes
            )
            let inserted = try await connection.query(
                "INSERT INTO idp_meta (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING RETURNING name",
                .text(Self.keyCheckName),
                .text(sealedCheck)
            )
            // Another instance stored its check meanwhile: that key is the database's.
            stored = inserted.isEmpty ? try await meta(Self.keyCheckName, connection) : sealedCheck
        }
        guard let stored, Self.open(stored, context: SealContext.keyCheck, key: key) == Self.keyCheckValue else {
            throw StorageError(
                .wrongSecretsKey,
                "the provider's secrets are sealed with another secrets key than the one it was given"
            )
        }
    }

    /// Seals every secret still stored in the clear (a key was given to a provider that had none,
    /// or a Keyhaven before signing keys were sealed made the database). Returns how many were
    /// sealed. Part of ``prepare()``.
    @discardableResult
    public func sealStoredSecrets() async throws -> Int {
        guard configuration.secretsKey != nil else { return 0 }
        let sealed = try await write { connection in
            try await self.verifySecretsKey(connection)
            var count = 0
            // Each update only if the value is still the clear one (another instance may be sealing).
            let users = try await connection.fetchAll(
                UserRecord.self,
                "\(UserRecord.select) WHERE totp_secret IS NOT NULL AND totp_secret NOT LIKE 'sealed:%'"
            )
            for row in users {
                guard let secret = row.totpSecret else { continue }
                try await connection.query(
                    "UPDATE users SET totp_secret = ? WHERE id = ? AND totp_secret = ?",
                    .text(try self.sealSecret(secret, userId: row.id)),
                    .text(row.id),
                    .text(secret)
                )
                count += 1
            }
            let keys = try await connection.fetchAll(
                SigningKeyRecord.self,
                "\(SigningKeyRecord.select) WHERE private_pem NOT LIKE 'sealed:%'"
            )
            for row in keys {
                try await connection.query(
                    "UPDATE signing_keys SET private_pem = ? WHERE kid = ? AND private_pem = ?",
                    .text(try self.sealed(row.privatePEM, context: SealContext.signingKey(row.kid))),
                    .text(row.kid),
                    .text(row.privatePEM)
                )
                count += 1
            }
            if let accessKey = try await self.meta("access-token-key", connection), !accessKey.hasPrefix("sealed:") {
                try await connection.query(
                    "UPDATE idp_meta SET value = ? WHERE name = 'access-token-key' AND value = ?",
                    .text(try self.sealed(accessKey, context: SealContext.accessTokenKey)),
                    .text(accessKey)
                )
                count += 1
            }
            return count
        }
        if sealed > 0 { try await forgetReplacedValues() }
        return sealed
    }

    /// SQLite: no copy of a replaced value stays in the WAL (``SQLiteDatabase`` also zeroes freed
    /// space). PostgreSQL keeps old row versions until `VACUUM` (docs/sign-in-with-keyhaven.md).
    func forgetReplacedValues() async throws {
        try await (database as? SQLiteDatabase)?.truncateWriteAheadLog()
    }

    /// Re-seals every secret under `newKey`, in one transaction: either all of them move to the
    /// new key or none does. The provider's own key must be the database's (or the database has
    /// none yet: then this seals what was in the clear). Returns how many values were re-sealed.
    ///
    /// Afterwards this provider, and every other instance on the database, still holds the old
    /// key and can no longer open the secrets: stop them before, and start them again with
    /// `newKey` (`keyhaven idp secrets rotate` does this for the key file).
    @discardableResult
    public func resealSecrets(under newKey: SymmetricKey) async throws -> Int {
        let random = configuration.randomBytes
        let count = try await write { connection in
            try await self.verifySecretsKey(connection)
            func reseal(_ plaintext: String, _ context: String) throws -> String {
                try Self.seal(plaintext, context: context, key: newKey, randomBytes: random)
            }
            var count = 0
            let users = try await connection.fetchAll(
                UserRecord.self,
                "\(UserRecord.select) WHERE totp_secret IS NOT NULL"
            )
            for row in users {
                guard let stored = row.totpSecret else { continue }
                let context = SealContext.totp(userId: row.id)
                try await connection.query(
                    "UPDATE users SET totp_secret = ? WHERE id = ?",
                    .text(try reseal(try self.unsealSecret(stored, userId: row.id), context)),
                    .text(row.id)
                )
                count += 1
            }
            for row in try await connection.fetchAll(SigningKeyRecord.self, SigningKeyRecord.select) {
                let context = SealContext.signingKey(row.kid)
                let pem = try self.unsealed(row.privatePEM, context: context, what: "signing key \(row.kid)")
                try await connection.query(
                    "UPDATE signing_keys SET private_pem = ? WHERE kid = ?",
                    .text(try reseal(pem, context)),
                    .text(row.kid)
                )
                count += 1
            }
            if let stored = try await self.meta("access-token-key", connection) {
                let context = SealContext.accessTokenKey
                let accessKey = try self.unsealed(stored, context: context, what: "access-token key")
                try await connection.query(
                    "UPDATE idp_meta SET value = ? WHERE name = 'access-token-key'",
                    .text(try reseal(accessKey, context))
                )
                count += 1
            }
            let check = try reseal(Self.keyCheckValue, SealContext.keyCheck)
            try await connection.query(
                "INSERT INTO idp_meta (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                .text(Self.keyCheckName),
                .text(check)
            )
            return count
        }
        try await forgetReplacedValues()
        return count
    }
}
