public import Foundation
public import KeyhavenJOSE

/// A service's side of Sign in with Keyhaven (or Sign in with Apple: nothing here is specific to
/// our provider but the URLs).
public struct SignInClient: Sendable {
    public struct Configuration: Sendable {
        /// The provider's issuer (`iss` of its tokens, `aud` of our client secrets).
        public var issuer: String
        /// Where its endpoints are: `{baseURL}/auth/token`…; the issuer when nil.
        public var baseURL: String?
        public var clientId: String
        /// Further client ids whose tokens this service accepts (an app's bundle id next to its web
        /// Services ID).
        public var otherAudiences: [String] = []
        public var teamId: String
        /// The team's ES256 key (its `kid` is the key id the provider knows).
        public var key: ES256SigningKey
        /// Lifetime of generated client secrets (at most six months).
        public var secretLifetime: Int64 = 180 * 86_400
        public var now: @Sendable () -> Date = { Date() }

        public init(issuer: String, baseURL: String? = nil, clientId: String, teamId: String, key: ES256SigningKey) {
            self.issuer = issuer
            self.baseURL = baseURL
            self.clientId = clientId
            self.teamId = teamId
            self.key = key
        }

        var base: String {
            var url = baseURL ?? issuer
            while url.hasSuffix("/") { url.removeLast() }
            return url
        }
    }

    /// `/auth/token`'s answer.
    public struct Tokens: Sendable, Hashable, Decodable {
        public var access_token: String
        public var token_type: String
        public var expires_in: Int64
        public var refresh_token: String?
        public var id_token: String?
    }

    public let configuration: Configuration
    public let transport: any RelyingPartyTransport
    public let verifier: IdentityTokenVerifier

    public init(configuration: Configuration, transport: any RelyingPartyTransport = HTTPRelyingPartyTransport()) {
        self.configuration = configuration
        self.transport = transport
        var verifier = IdentityTokenVerifier(
            issuer: configuration.issuer,
            audiences: Set([configuration.clientId] + configuration.otherAudiences),
            keys: JWKSCache(url: configuration.base + "/auth/keys", transport: transport)
        )
        verifier.now = configuration.now
        self.verifier = verifier
    }

    /// A fresh `client_secret`: ES256, `iss` team, `aud` issuer, `sub` client id.
    public func clientSecret() throws -> String {
        let now = Int64(configuration.now().timeIntervalSince1970)
        let claims = ClientSecretClaims(
            iss: configuration.teamId,
            iat: now,
            exp: now + min(configuration.secretLifetime, ClientSecretClaims.maximumLifetime),
            aud: configuration.issuer,
            sub: configuration.clientId
        )
        return try JWS.sign(claims, with: configuration.key)
    }

    /// Redeems an authorization code (with the redirect URI only if the authorization used one)
    /// and verifies the id_token it brings, nonce included when given.
    public func exchange(
        code: String,
        redirectURI: String?,
        nonce: String?
    ) async throws -> (
        tokens: Tokens, claims: IdentityTokenClaims
    ) {
        var fields = [("grant_type", "authorization_code"), ("code", code)]
        if let redirectURI { fields.append(("redirect_uri", redirectURI)) }
        let tokens = try await tokenRequest(fields)
        guard let idToken = tokens.id_token else {
            throw RelyingPartyError(.transport, "the token response has no id_token")
        }
        do {
            let claims = try await verifier.verify(idToken, nonce: nonce)
            if let atHash = claims.at_hash, atHash != IdentityTokenClaims.halfHash(tokens.access_token) {
                throw JOSEError(.invalidClaim, "at_hash does not match the access token")
            }
            return (tokens, claims)
        } catch let error as JOSEError {
            throw RelyingPartyError(.token, "the id_token did not verify: \(error)", token: error)
        }
    }

    /// Checks a refresh token (at most daily, as Apple advises): a revoked user gives `invalid_grant`.
    public func refresh(_ refreshToken: String) async throws -> Tokens {
        try await tokenRequest([("grant_type", "refresh_token"), ("refresh_token", refreshToken)])
    }

    /// Revokes a refresh or access token (the person's authorization for this service ends).
    public func revoke(_ token: String, hint: String = "refresh_token") async throws {
        let (status, body) = try await transport.postForm(
            configuration.base + "/auth/revoke",
            fields: try authenticated([("token", token), ("token_type_hint", hint)]),
            bearer: nil
        )
        guard status == 200 else { throw Self.providerError(status, body) }
    }

    /// `authorized`, `revoked`, `notFound` or `transferred` for a person's `sub`.
    public func credentialState(sub: String) async throws -> String {
        let (status, body) = try await transport.postForm(
            configuration.base + "/auth/credentialstate",
            fields: try authenticated([("sub", sub)]),
            bearer: nil
        )
        guard status == 200 else { throw Self.providerError(status, body) }
        guard let answer = try? JSONDecoder().decode([String: String].self, from: Data(body)),
            let state = answer["state"]
        else { throw RelyingPartyError(.transport, "the provider's answer has no state") }
        return state
    }

    func authenticated(_ fields: [(String, String)]) throws -> [(String, String)] {
        [("client_id", configuration.clientId), ("client_secret", try clientSecret())] + fields
    }

    func tokenRequest(_ fields: [(String, String)]) async throws -> Tokens {
        let (status, body) = try await transport.postForm(
            configuration.base + "/auth/token",
            fields: try authenticated(fields),
            bearer: nil
        )
        guard status == 200 else { throw Self.providerError(status, body) }
        guard let tokens = try? JSONDecoder().decode(Tokens.self, from: Data(body)) else {
            throw RelyingPartyError(.transport, "the provider's token response is not JSON")
        }
        return tokens
    }

    static func providerError(_ status: Int, _ body: [UInt8]) -> RelyingPartyError {
        struct ErrorBody: Decodable {
            var error: String
            var error_description: String?
        }
        guard let decoded = try? JSONDecoder().decode(ErrorBody.self, from: Data(body)) else {
            return RelyingPartyError(.transport, "the provider answered HTTP \(status)")
        }
        return RelyingPartyError(
            .provider,
            "\(decoded.error): \(decoded.error_description ?? "")",
            oauthError: decoded.error
        )
    }
}
