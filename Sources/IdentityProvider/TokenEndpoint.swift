import Crypto
import Foundation
import KeyhavenJOSE
import Synchronization
public import _KeyhavenSupport

/// `/auth/token`'s 200 answer.
public struct TokenResponse: Sendable, Hashable, Codable, JSONObjectWritable {
    public var access_token: String
    public var token_type = "Bearer"
    public var expires_in: Int64
    public var refresh_token: String?
    public var id_token: String?

    public func writeJSON(into writer: inout JSONWriter) {
        writer.string("access_token", access_token)
        writer.string("token_type", token_type)
        writer.integer("expires_in", expires_in)
        writer.string("refresh_token", refresh_token)
        writer.string("id_token", id_token)
    }
}

extension IdentityProvider {
    /// `POST /auth/token` with the form's fields.
    public func token(_ form: [String: String]) async -> Result<TokenResponse, OAuthError> {
        do {
            let grantType = form["grant_type"] ?? ""
            guard ["authorization_code", "refresh_token", "client_credentials"].contains(grantType) else {
                return .failure(
                    .init(
                        "unsupported_grant_type",
                        grantType.isEmpty ? "grant_type is required." : "Unsupported grant_type: \(grantType)"
                    )
                )
            }
            let client = try await authenticateClient(form)
            switch grantType {
            case "authorization_code": return .success(try await redeemCode(form, client: client))
            case "refresh_token": return .success(try await refresh(form, client: client))
            default: return .success(try await migrationToken(form, client: client))
            }
        } catch let error as OAuthError {
            return .failure(error)
        } catch {
            return .failure(.init("server_error", "The request could not be completed."))
        }
    }

    enum Redemption: Sendable {
        case granted(
            grantId: String,
            refreshToken: String,
            userId: String,
            scopes: [String],
            nonce: String?,
            authTime: Int64,
            realUserStatus: Int
        )
        case refused(OAuthError)
    }

    func redeemCode(_ form: [String: String], client: Client) async throws -> TokenResponse {
        guard let code = form["code"], !code.isEmpty else { throw OAuthError.invalidRequest("code is required.") }
        let hash = Self.hash(code)
        let now = nowMilliseconds
        let grantId = randomToken(16)
        let refreshToken = "r." + randomToken()
        let redemption: Redemption = try await write { connection in
            guard
                let row = try await connection.fetchOne(
                    CodeRecord.self,
                    "\(CodeRecord.select) WHERE hash = ?",
                    .text(hash)
                )
            else {
                return .refused(.codeExpired)
            }
            guard row.clientId == client.id else {
                return .refused(.invalidGrant("The code was issued to another client_id."))
            }
            guard row.redirectURI == form["redirect_uri"].flatMap({ $0.isEmpty ? nil : $0 }) else {
                return .refused(.invalidClient("redirect_uri does not match the authorization request."))
            }
            if row.used == nil, row.expires <= now { return .refused(.codeExpired) }
            let claimed = try await connection.query(
                "UPDATE codes SET used = ? WHERE hash = ? AND used IS NULL RETURNING hash",
                .integer(now),
                .text(hash)
            )
            guard !claimed.isEmpty else {
                // A second redemption: what the first one issued is revoked too.
                try await connection.query(
                    "UPDATE grants SET revoked = ? WHERE code_hash = ? AND revoked IS NULL",
                    .integer(now),
                    .text(hash)
                )
                return .refused(.codeUsed)
            }
            let userId = row.userId
            let scope = row.scope
            try await connection.insert(
                GrantRecord(
                    id: grantId,
                    refreshHash: Self.hash(refreshToken),
                    clientId: client.id,
                    userId: userId,
                    codeHash: hash,
                    scope: scope,
                    authTime: row.authTime,
                    realUserStatus: row.realUserStatus,
                    created: now
                )
            )
            return .granted(
                grantId: grantId,
                refreshToken: refreshToken,
                userId: userId,
                scopes: scope.split(separator: " ").map(String.init),
                nonce: row.nonce,
                authTime: row.authTime,
                realUserStatus: Int(row.realUserStatus)
            )
        }
        switch redemption {
        case .refused(let error):
            throw error
        case .granted(let grantId, let refreshToken, let userId, let scopes, let nonce, let authTime, let status):
            let accessToken = try await accessToken(grantId: grantId)
            let idToken = try await identityToken(
                client: client,
                userId: userId,
                grant: TokenGrant(
                    scopes: scopes,
                    nonce: nonce,
                    authTime: authTime,
                    realUserStatus: status,
                    accessToken: accessToken
                )
            )
            return TokenResponse(
                access_token: accessToken,
                expires_in: configuration.accessTokenLifetime,
                refresh_token: refreshToken,
                id_token: idToken
            )
        }
    }

    /// A refresh: a new access token and id_token; the refresh token itself is not rotated.
    func refresh(_ form: [String: String], client: Client) async throws -> TokenResponse {
        guard let token = form["refresh_token"], !token.isEmpty else {
            throw OAuthError.invalidRequest("refresh_token is required.")
        }
        /// The grant and what the id_token says about its person, in one query: a refresh is the
        /// provider's hottest call, and each statement is a hop to the database's own threads.
        struct RefreshRow: Decodable {
            var id: String
            var clientId: String
            var userId: String
            var scope: String
            var authTime: Int64
            var realUserStatus: Int64
            /// Nil when the user no longer exists (the join found no row).
            var facts: IdentityFacts?

            enum CodingKeys: String, CodingKey {
                case id, scope, email
                case clientId = "client_id"
                case userId = "user_id"
                case authTime = "auth_time"
                case realUserStatus = "real_user_status"
            }

            init(from decoder: any Decoder) throws {
                let container = try decoder.container(keyedBy: CodingKeys.self)
                id = try container.decode(String.self, forKey: .id)
                clientId = try container.decode(String.self, forKey: .clientId)
                userId = try container.decode(String.self, forKey: .userId)
                scope = try container.decode(String.self, forKey: .scope)
                authTime = try container.decode(Int64.self, forKey: .authTime)
                realUserStatus = try container.decode(Int64.self, forKey: .realUserStatus)
                // The same row carries the facts' columns.
                facts = try container.decodeNil(forKey: .email) ? nil : try IdentityFacts(from: decoder)
            }
        }
        let window = (nowSeconds - configuration.transferWindow) * 1000
        let row = try await read { connection in
            try await connection.fetchOne(
                RefreshRow.self,
                """
                SELECT g.id AS id, g.client_id AS client_id, g.user_id AS user_id, g.scope AS scope, \
                g.auth_time AS auth_time, g.real_user_status AS real_user_status, \
                \(IdentityFacts.columns) \
                FROM grants g LEFT JOIN users u ON u.id = g.user_id \
                \(IdentityFacts.joins) \
                WHERE g.refresh_hash = ? AND g.revoked IS NULL
                """,
                .text(client.teamId),
                .integer(window),
                .text(client.teamId),
                .text(client.id),
                .text(Self.hash(token))
            )
        }
        guard let row else {
            throw OAuthError.invalidGrant("The refresh token is invalid or has been revoked.")
        }
        guard row.clientId == client.id else {
            throw OAuthError.invalidGrant("The refresh token was issued to another client_id.")
        }
        guard let facts = row.facts else {
            throw OAuthError.invalidGrant("The user no longer exists.")
        }
        let accessToken = try await accessToken(grantId: row.id)
        let idToken = try await identityToken(
            client: client,
            facts: facts,
            grant: TokenGrant(
                scopes: row.scope.split(separator: " ").map(String.init),
                nonce: nil,
                authTime: row.authTime,
                realUserStatus: Int(row.realUserStatus),
                accessToken: accessToken
            )
        )
        return TokenResponse(
            access_token: accessToken,
            expires_in: configuration.accessTokenLifetime,
            id_token: idToken
        )
    }

    /// What an id_token says about the person (from users, subjects, consents and transfers).
    struct IdentityFacts: Decodable {
        var email: String
        var sub: String?
        var relayEmail: String?
        var shareEmail: Bool?
        var transferSub: String?

        enum CodingKeys: String, CodingKey {
            case email, sub
            case relayEmail = "relay_email"
            case shareEmail = "share_email"
            case transferSub = "transfer_sub"
        }

        /// The selected columns, for a query that has `u` (users) and ``joins``; its binds start
        /// with the client's team id and the transfer window's start (milliseconds).
        static let columns = """
            u.email AS email, s.sub AS sub, s.relay_email AS relay_email, c.share_email AS share_email, \
            (SELECT t.transfer_sub FROM transfers t WHERE t.user_id = u.id AND t.to_team = ? AND t.created > ? \
            ORDER BY t.created DESC LIMIT 1) AS transfer_sub
            """

        /// The joins, binding the client's team id and then its id.
        static let joins = """
            LEFT JOIN subjects s ON s.user_id = u.id AND s.team_id = ? \
            LEFT JOIN consents c ON c.user_id = u.id AND c.client_id = ?
            """
    }

    /// What a grant puts in an id_token besides the person: the scopes, the nonce, when and how the
    /// person authenticated, and the hashes binding the token to its code or access token.
    struct TokenGrant: Sendable {
        var scopes: [String]
        var nonce: String?
        var authTime: Int64
        var realUserStatus: Int
        var codeHash: String? = nil
        var accessToken: String? = nil
    }

    /// Builds and signs an id_token with the claims Sign in with Apple sends, reading what it says
    /// about the person first.
    func identityToken(client: Client, userId: String, grant: TokenGrant) async throws -> String {
        let window = (nowSeconds - configuration.transferWindow) * 1000
        let facts = try await read { connection in
            try await connection.fetchOne(
                IdentityFacts.self,
                "SELECT \(IdentityFacts.columns) FROM users u \(IdentityFacts.joins) WHERE u.id = ?",
                .text(client.teamId),
                .integer(window),
                .text(client.teamId),
                .text(client.id),
                .text(userId)
            )
        }
        guard let facts else {
            throw OAuthError.invalidGrant("The user no longer exists.")
        }
        return try await identityToken(client: client, facts: facts, grant: grant)
    }

    /// Builds and signs an id_token from `facts`.
    func identityToken(client: Client, facts row: IdentityFacts, grant: TokenGrant) async throws -> String {
        let scopes = grant.scopes
        let address = row.email
        let sub = row.sub
        let transferSub = row.transferSub
        var email: (address: String, isPrivate: Bool)?
        if scopes.contains("email") {
            let shares = row.shareEmail ?? true
            email = !shares ? row.relayEmail.map { ($0, true) } ?? (address, false) : (address, false)
        }
        guard let sub else {
            throw OAuthError.invalidGrant("The user has not authorized this client's team; authorize again.")
        }
        let now = nowSeconds
        let asString = configuration.stringBooleans
        let claims = IdentityTokenClaims(
            iss: configuration.issuer,
            sub: sub,
            aud: client.id,
            iat: now,
            exp: now + configuration.idTokenLifetime,
            nonce: grant.nonce,
            nonce_supported: true,
            c_hash: grant.codeHash,
            at_hash: grant.accessToken.map(IdentityTokenClaims.halfHash),
            email: email?.address,
            email_verified: email.map { _ in BoolClaim(true, asString: asString) },
            is_private_email: email?.isPrivate == true ? BoolClaim(true, asString: asString) : nil,
            auth_time: grant.authTime,
            real_user_status: grant.realUserStatus,
            transfer_sub: transferSub
        )
        return try JWS.sign(claims, with: try await keys().signing)
    }

    // MARK: Access tokens

    /// Access tokens are stateless: `a.<grant>.<expiry>.<HMAC>` under a key kept in the database,
    /// so issuing one writes nothing; revoking the grant revokes them all.
    func accessToken(grantId: String) async throws -> String {
        let expires = nowSeconds + configuration.accessTokenLifetime
        let body = "a.\(grantId).\(expires)"
        let mac = HMAC<SHA256>.authenticationCode(for: Array(body.utf8), using: try await cachedAccessKey())
        return body + "." + Base64URL.encode(Array(mac))
    }

    /// The grant an access token belongs to, if its MAC is right and it has not expired.
    func grant(forAccessToken token: String) async throws -> String? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "a", let expires = Int64(parts[2]), expires > nowSeconds,
            let mac = Base64URL.decode(parts[3])
        else { return nil }
        let body = parts[0..<3].joined(separator: ".")
        guard
            HMAC<SHA256>.isValidAuthenticationCode(
                mac,
                authenticating: Array(body.utf8),
                using: try await cachedAccessKey()
            )
        else { return nil }
        return String(parts[1])
    }

    func cachedAccessKey() async throws -> SymmetricKey {
        if let key = accessKeyCache.withLock({ $0 }) { return key }
        let key = try await accessTokenKey()
        accessKeyCache.withLock { $0 = key }
        return key
    }
}
