import Foundation
public import KeyhavenJOSE
import Synchronization

extension IdentityProvider {
    /// Creates the first RS256 key and the access-token key on an empty database, sealed with the
    /// secrets key when there is one (after checking it is the database's). Instances that start
    /// together agree through a unique row: only one of them creates the key.
    func ensureKeys() async throws {
        let key = try RSASigningKey.generate(kid: randomAlphanumeric(10, uppercase: true))
        let accessKey = try sealed(randomToken(32), context: SealContext.accessTokenKey)
        let privatePEM = try sealed(key.pemRepresentation, context: SealContext.signingKey(key.kid))
        let now = nowMilliseconds
        try await write { connection in
            try await self.verifySecretsKey(connection)
            try await connection.query(
                "INSERT INTO idp_meta (name, value) VALUES ('access-token-key', ?) ON CONFLICT (name) DO NOTHING",
                .text(accessKey)
            )
            let first = try await connection.query(
                "INSERT INTO idp_meta (name, value) VALUES ('first-signing-key', ?) ON CONFLICT (name) DO NOTHING RETURNING name",
                .text(key.kid)
            )
            if !first.isEmpty {
                try await connection.insert(SigningKeyRecord(kid: key.kid, privatePEM: privatePEM, created: now))
            }
        }
    }

    /// The key that signs now (the newest not retired) and every published public key. Cached for
    /// ten seconds, so a rotation made through another instance is picked up quickly.
    func keys() async throws -> KeyCache {
        let now = nowMilliseconds
        if let cached = keyCache.withLock({ $0 }), now - cached.loaded < 10_000 { return cached }
        let rows = try await read { connection in
            try await connection.fetchAll(
                SigningKeyRecord.self,
                "\(SigningKeyRecord.select) WHERE retired IS NULL ORDER BY created DESC, kid"
            )
        }
        guard let newest = rows.first else {
            throw StorageError(.notPrepared, "no signing key: run the provider once to create one")
        }
        func signingKey(_ row: SigningKeyRecord) throws -> RSASigningKey {
            let pem = try unsealed(row.privatePEM, context: SealContext.signingKey(row.kid), what: "signing key")
            return try RSASigningKey(kid: row.kid, pemRepresentation: pem)
        }
        var published: [JWK] = []
        for row in rows { published.append(try signingKey(row).publicJWK) }
        let cache = KeyCache(signing: try signingKey(newest), published: published, loaded: now)
        keyCache.withLock { $0 = cache }
        return cache
    }

    /// `/auth/keys`: every key not retired, newest first.
    public func jwks() async throws -> JWKSet {
        JWKSet(keys: try await keys().published)
    }

    /// Adds a new signing key, used from now on; older keys stay published until retired.
    @discardableResult
    public func rotateSigningKey() async throws -> String {
        let key = try RSASigningKey.generate(kid: randomAlphanumeric(10, uppercase: true))
        let privatePEM = try sealed(key.pemRepresentation, context: SealContext.signingKey(key.kid))
        let now = nowMilliseconds
        try await write { connection in
            try await connection.insert(SigningKeyRecord(kid: key.kid, privatePEM: privatePEM, created: now))
        }
        keyCache.withLock { $0 = nil }
        return key.kid
    }

    /// Stops publishing `kid` (tokens it signed no longer verify). The last key cannot be retired.
    public func retireSigningKey(_ kid: String) async throws {
        let now = nowMilliseconds
        try await write { connection in
            let active = try await connection.fetchAll(
                String.self,
                "SELECT kid FROM signing_keys WHERE retired IS NULL"
            )
            guard active.contains(kid) else {
                throw ProviderError(.notFound, "no published signing key \(kid)")
            }
            guard active.count > 1 else {
                throw ProviderError(.invalidArgument, "\(kid) is the only signing key: rotate first")
            }
            try await connection.query("UPDATE signing_keys SET retired = ? WHERE kid = ?", .integer(now), .text(kid))
        }
        keyCache.withLock { $0 = nil }
    }

    /// The published key ids, newest first.
    public func signingKeyIDs() async throws -> [String] {
        try await jwks().keys.compactMap(\.kid)
    }

    /// `/.well-known/openid-configuration`, as Apple's; endpoints under `baseURL` (the configured
    /// public URL by default).
    public func discoveryDocument(baseURL: String? = nil) -> [String: DiscoveryValue] {
        let base = baseURL ?? configuration.baseURL
        return [
            "issuer": .string(configuration.issuer),
            "authorization_endpoint": .string(base + "/auth/authorize"),
            "token_endpoint": .string(base + "/auth/token"),
            "revocation_endpoint": .string(base + "/auth/revoke"),
            "jwks_uri": .string(base + "/auth/keys"),
            "response_types_supported": .strings(["code", "code id_token"]),
            "response_modes_supported": .strings(["query", "fragment", "form_post"]),
            "subject_types_supported": .strings(["pairwise"]),
            "id_token_signing_alg_values_supported": .strings(["RS256"]),
            "scopes_supported": .strings(["openid", "email", "name"]),
            "token_endpoint_auth_methods_supported": .strings(["client_secret_post"]),
            "grant_types_supported": .strings(["authorization_code", "refresh_token", "client_credentials"]),
            "claims_supported": .strings([
                "aud", "email", "email_verified", "exp", "iat", "is_private_email", "iss", "nonce",
                "nonce_supported", "real_user_status", "sub", "transfer_sub", "at_hash", "c_hash", "auth_time",
            ]),
        ]
    }
}

/// A value of the discovery document.
public enum DiscoveryValue: Encodable, Sendable, Hashable {
    case string(String)
    case strings([String])

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .strings(let values): try container.encode(values)
        }
    }
}
