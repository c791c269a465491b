import Crypto
import Foundation
import KeyhavenJOSE
import Synchronization

extension IdentityProvider {
    /// Skew tolerated on a `client_secret`'s `iat` (seconds).
    static let clientSecretLeeway: Int64 = 60

    /// Authenticates `client_id` + `client_secret` (an ES256 JWT signed with one of the team's
    /// registered keys: `iss` = team, `aud` = issuer, `sub` = client id, `exp` within six months of
    /// `iat`). Every failure is `invalid_client`.
    ///
    /// A verified secret is remembered for a minute by its SHA-256, with the client it authenticated,
    /// so a service that reuses its secret (as they do, for months) costs one ES256 verification and
    /// one client lookup a minute, not one per request. (A revoked team key or a moved client takes
    /// effect within that minute.)
    func authenticateClient(_ form: [String: String]) async throws -> Client {
        guard let clientId = form["client_id"], !clientId.isEmpty else {
            throw OAuthError.invalidClient("client_id is missing.")
        }
        guard let secret = form["client_secret"], !secret.isEmpty else {
            throw OAuthError.invalidClient("client_secret is missing.")
        }
        let now = nowSeconds
        let fingerprint = Self.hash(secret)
        let remembered = secretCache.withLock { $0[fingerprint] }
        if let remembered, remembered.client.id == clientId, remembered.expires > now, now - remembered.checked < 60 {
            return remembered.client
        }
        guard let client = try await client(clientId) else {
            throw OAuthError.invalidClient("The client is not registered.")
        }
        let token: CompactJWS
        do {
            token = try CompactJWS(secret)
        } catch {
            throw OAuthError.invalidClient("client_secret is not a JWT.")
        }
        guard token.header.alg == "ES256", let kid = token.header.kid else {
            throw OAuthError.invalidClient("client_secret must be an ES256 JWT with a kid.")
        }
        let pem = try await read { connection in
            try await connection.fetchOne(
                String.self,
                "SELECT public_pem FROM team_keys WHERE team_id = ? AND key_id = ? AND revoked IS NULL",
                .text(client.teamId),
                .text(kid)
            )
        }
        guard let pem, let key = try? ES256PublicKey(pemRepresentation: pem) else {
            throw OAuthError.invalidClient("client_secret names a key the client's team has not registered.")
        }
        let claims: ClientSecretClaims
        do {
            try token.verify(with: key)
            claims = try token.claims(as: ClientSecretClaims.self)
        } catch {
            throw OAuthError.invalidClient("client_secret is not valid: \(error.code).")
        }
        guard claims.iss == client.teamId else {
            throw OAuthError.invalidClient("client_secret iss is not the client's team.")
        }
        guard claims.aud == configuration.issuer else {
            throw OAuthError.invalidClient("client_secret aud is not \(configuration.issuer).")
        }
        guard claims.sub == clientId else {
            throw OAuthError.invalidClient("client_secret sub is not the client_id.")
        }
        guard claims.exp > now else { throw OAuthError.invalidClient("client_secret has expired.") }
        guard claims.iat <= now + Self.clientSecretLeeway else {
            throw OAuthError.invalidClient("client_secret is issued in the future.")
        }
        guard claims.exp - claims.iat <= ClientSecretClaims.maximumLifetime else {
            throw OAuthError.invalidClient("client_secret exp is more than 6 months after iat.")
        }
        secretCache.withLock { cache in
            if cache.count > 10_000 { cache.removeAll() }
            cache[fingerprint] = CachedSecret(client: client, expires: claims.exp, checked: now)
        }
        return client
    }
}
