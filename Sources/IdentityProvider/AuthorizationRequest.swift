import _KeyhavenSupport

/// A validated `/auth/authorize` request.
public struct AuthorizationRequest: Sendable, Hashable, Codable {
    public enum ResponseMode: String, Sendable, Hashable, Codable {
        case query
        case fragment
        case formPost = "form_post"
    }

    public var clientId: String
    /// Nil for native (Keyhaven) authorizations, whose codes are redeemed without one.
    public var redirectURI: String?
    public var includeIDToken: Bool
    public var responseMode: ResponseMode
    public var scopes: [String]
    public var state: String?
    public var nonce: String?
    /// For native authorizations: the origin of the service Keyhaven is upgrading, one of the
    /// client's registered origins (``Client/isRegistered(origin:)``). Nil for browser requests,
    /// which the redirect URI binds to the service.
    public var origin: String?

    public var wantsEmail: Bool { scopes.contains("email") }
    public var wantsName: Bool { scopes.contains("name") }

    public init(
        clientId: String,
        redirectURI: String?,
        includeIDToken: Bool,
        responseMode: ResponseMode,
        scopes: [String],
        state: String?,
        nonce: String?,
        origin: String? = nil
    ) {
        self.clientId = clientId
        self.redirectURI = redirectURI
        self.includeIDToken = includeIDToken
        self.responseMode = responseMode
        self.scopes = scopes
        self.state = state
        self.nonce = nonce
        self.origin = origin
    }

    /// The parameters that reproduce this request (hidden fields of the sign-in and consent forms).
    public var parameters: [(String, String)] {
        var result: [(String, String)] = [
            ("client_id", clientId),
            ("response_type", includeIDToken ? "code id_token" : "code"),
            ("response_mode", responseMode.rawValue),
        ]
        if let redirectURI { result.append(("redirect_uri", redirectURI)) }
        if !scopes.isEmpty { result.append(("scope", scopes.joined(separator: " "))) }
        if let state { result.append(("state", state)) }
        if let nonce { result.append(("nonce", nonce)) }
        return result
    }
}

extension IdentityProvider {
    /// Applies Sign in with Apple's parameter rules: a registered client and redirect URI;
    /// `response_type` `code` or `code id_token`; `response_mode` `fragment`/`form_post` when an
    /// id_token is requested and `form_post` when a scope is; scopes among `name`, `email`, `openid`.
    public func validateAuthorization(
        _ parameters: [String: String]
    ) async throws -> Result<
        AuthorizationRequest, OAuthError
    > {
        guard let clientId = parameters["client_id"], !clientId.isEmpty else {
            return .failure(.invalidRequest("client_id is required."))
        }
        guard let redirectURI = parameters["redirect_uri"], !redirectURI.isEmpty else {
            return .failure(.invalidRequest("redirect_uri is required."))
        }
        guard let client = try await client(clientId), client.redirectURIs.contains(redirectURI) else {
            return .failure(.invalidClient("Invalid client id or web redirect url."))
        }
        guard let responseType = parameters["response_type"], !responseType.isEmpty else {
            return .failure(.invalidRequest("response_type is required."))
        }
        let types = Set(responseType.split(separator: " ").map(String.init))
        guard types == ["code"] || types == ["code", "id_token"] else {
            return .failure(.init("unsupported_response_type", "Unsupported response_type: \(responseType)"))
        }
        let includeIDToken = types.contains("id_token")
        let scopes = (parameters["scope"] ?? "").split(whereSeparator: { $0 == " " || $0 == "+" }).map(String.init)
        if let unknown = scopes.first(where: { !["name", "email", "openid"].contains($0) }) {
            return .failure(.invalidScope("Invalid scope: \(unknown)"))
        }
        let mode: AuthorizationRequest.ResponseMode
        if let given = parameters["response_mode"], !given.isEmpty {
            guard let parsed = AuthorizationRequest.ResponseMode(rawValue: given) else {
                return .failure(.invalidRequest("Invalid response mode"))
            }
            mode = parsed
        } else {
            mode = includeIDToken ? .fragment : .query
        }
        if includeIDToken && mode == .query { return .failure(.invalidRequest("Invalid response mode")) }
        if (scopes.contains("name") || scopes.contains("email")) && mode != .formPost {
            return .failure(
                .invalidRequest("response_mode must be form_post when name or email scope is requested.")
            )
        }
        for name in ["state", "nonce"] where (parameters[name]?.utf8.count ?? 0) > 2048 {
            return .failure(.invalidRequest("\(name) is longer than 2048 bytes."))
        }
        return .success(
            AuthorizationRequest(
                clientId: clientId,
                redirectURI: redirectURI,
                includeIDToken: includeIDToken,
                responseMode: mode,
                scopes: scopes,
                state: parameters["state"].flatMap { $0.isEmpty ? nil : $0 },
                nonce: parameters["nonce"].flatMap { $0.isEmpty ? nil : $0 }
            )
        )
    }
}

extension IdentityProvider {
    /// A native authorization for Keyhaven (the system asks on the person's behalf, as iOS does for
    /// an app): no redirect URI, so the code is redeemed without one; an id_token with `c_hash`.
    ///
    /// `origin` is the service Keyhaven is upgrading (the origin it read the manifest from). It
    /// must be one of the client's registered origins: a service can never obtain an authorization,
    /// a code or an id_token for another service's client id (security review High #1).
    public func nativeAuthorizationRequest(
        clientId: String,
        origin: String,
        scopes: [String],
        state: String?,
        nonce: String?
    ) async throws -> Result<AuthorizationRequest, OAuthError> {
        guard let client = try await client(clientId) else {
            return .failure(.invalidClient("Invalid client id."))
        }
        guard let service = ServiceOrigin.of(url: origin), client.isRegistered(origin: service.serialized) else {
            return .failure(
                .invalidClient(
                    "\(clientId) is not registered for the service being upgraded (\(origin)): a service "
                        + "obtains authorizations for its own client id only."
                )
            )
        }
        if let unknown = scopes.first(where: { !["name", "email", "openid"].contains($0) }) {
            return .failure(.invalidScope("Invalid scope: \(unknown)"))
        }
        for (name, value) in [("state", state), ("nonce", nonce)] where (value?.utf8.count ?? 0) > 2048 {
            return .failure(.invalidRequest("\(name) is longer than 2048 bytes."))
        }
        return .success(
            AuthorizationRequest(
                clientId: clientId,
                redirectURI: nil,
                includeIDToken: true,
                responseMode: .formPost,
                scopes: scopes,
                state: state,
                nonce: nonce,
                origin: service.serialized
            )
        )
    }
}
