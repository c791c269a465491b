import Crypto
import Foundation
import KeyhavenJOSE
import _KeyhavenSupport

/// One-time-code secrets at rest. Unlike passwords they cannot be hashed (the provider must
/// compute codes from them), so with a secrets key (``ProviderConfiguration/secretsKey``, kept
/// outside the database) they are stored sealed with AES-256-GCM: `sealed:v1:<base64url nonce ‖
/// ciphertext ‖ tag>`, the user's id as associated data so a sealed secret cannot be moved to
/// another account. Without a key they are stored as they are, as most providers do.
extension IdentityProvider {
    static let sealedPrefix = "sealed:v1:"

    /// The form of `secret` to store for `userId`.
    func sealSecret(_ secret: String, userId: String) throws -> String {
        guard let key = configuration.secretsKey else { return secret }
        let nonce = try AES.GCM.Nonce(data: configuration.randomBytes(12))
        let box = try AES.GCM.seal(Array(secret.utf8), using: key, nonce: nonce, authenticating: Array(userId.utf8))
        guard let combined = box.combined else { throw StorageError(.sealingFailed, "cannot seal a secret") }
        return Self.sealedPrefix + Base64URL.encode(Array(combined))
    }

    /// The secret a stored value holds.
    /// - Throws: ``ProviderError`` when it is sealed and this provider has no key, or the wrong one.
    func unsealSecret(_ stored: String, userId: String) throws -> String {
        guard stored.hasPrefix("sealed:") else { return stored }
        guard let key = configuration.secretsKey else {
            throw ProviderError(
                .unavailable,
                "Sign-in with a one-time code is unavailable: the provider was started without its secrets key."
            )
        }
        guard stored.hasPrefix(Self.sealedPrefix),
            let bytes = Base64URL.decode(String(stored.dropFirst(Self.sealedPrefix.count))),
            let box = try? AES.GCM.SealedBox(combined: bytes),
            let opened = try? AES.GCM.open(box, using: key, authenticating: Array(userId.utf8))
        else {
            throw ProviderError(
                .unavailable,
                "Sign-in with a one-time code is unavailable: the provider's secrets key is not the one that sealed it."
            )
        }
        return String(decoding: opened, as: UTF8.self)
    }

    /// Seals every secret still stored in the clear (a key was added to an existing provider).
    /// Returns how many were sealed.
    @discardableResult
    public func sealStoredSecrets() async throws -> Int {
        guard configuration.secretsKey != nil else { return 0 }
        return try await write { connection in
            let rows = try await connection.fetchAll(
                UserRecord.self,
                "\(UserRecord.select) WHERE totp_secret IS NOT NULL AND totp_secret NOT LIKE 'sealed:%'"
            )
            for row in rows {
                guard let secret = row.totpSecret else { continue }
                let id = row.id
                // Only if it is still that secret (another instance may be sealing, or it changed).
                try await connection.query(
                    "UPDATE users SET totp_secret = ? WHERE id = ? AND totp_secret = ?",
                    .text(try self.sealSecret(secret, userId: id)),
                    .text(id),
                    .text(secret)
                )
            }
            return rows.count
        }
    }
}
