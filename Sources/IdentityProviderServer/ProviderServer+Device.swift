import Foundation
import HTTPTypes
import Hummingbird
import IdentityProvider
import KeyhavenJOSE

/// Keyhaven's device API (`/keyhaven/v1/…`, JSON): `keyhaven idp login` obtains a device token once;
/// with it, Keyhaven shows the consent step itself and obtains authorizations for sign-in upgrades
/// (as iOS does for apps), and manages the person's services.
///
/// `consent` and `authorize` name the client *and* the origin of the service being upgraded (which
/// Keyhaven read the manifest from); the client must be registered for that origin, so a service
/// cannot have Keyhaven authorize another service's client (security review High #1).
extension ProviderServer {
    struct LoginBody: Decodable {
        var email: String
        var password: String
        var code: String?
        var name: String?
    }

    struct AuthorizeBody: Decodable {
        var client_id: String
        /// The origin of the service being upgraded: one of the client's registered origins.
        var origin: String
        var scope: String?
        var state: String?
        var nonce: String?
        /// "share" or "hide"; required the first time the person authorizes the service.
        var email: String?
    }

    struct RelayBody: Decodable {
        var enabled: Bool
    }

    static func decode<T: Decodable>(_ type: T.Type, _ request: Request) async -> T? {
        guard let buffer = try? await request.body.collect(upTo: 64 << 10) else { return nil }
        return try? JSONDecoder().decode(T.self, from: Data(buffer.readableBytesView))
    }

    func device(_ request: Request) async -> Authentication? {
        guard let token = Self.bearer(request) else { return nil }
        return try? await provider.device(token)
    }

    static let unauthorized = OAuthError("invalid_token", "A valid device token is required.", status: 401)

    func addDeviceRoutes(to router: Router<ProviderRequestContext>) {
        let provider = self.provider
        router.post("/keyhaven/v1/login") { request, context in
            if let refusal = try self.deviceLoginRefusal(request) { return refusal }
            guard let body = await Self.decode(LoginBody.self, request) else {
                return try Self.error(.invalidRequest("Expected {email, password, code?, name?}."))
            }
            do {
                // A Keyhaven that holds a device token of this account (signing in again) counts
                // on its own counter, as a browser with a known-device cookie does.
                let authentication = try await provider.authenticate(
                    email: body.email,
                    password: body.password,
                    code: body.code,
                    from: self.clientAddress(request, context),
                    deviceToken: Self.bearer(request)
                )
                let token = try await provider.createDeviceToken(authentication, name: body.name ?? "Keyhaven")
                let email = try await provider.email(userId: authentication.userId) ?? body.email
                return try Self.json(.ok, ["device_token": token, "email": email])
            } catch let error as ProviderError {
                let code =
                    switch error.code {
                    case .secondFactorRequired: "second_factor_required"
                    case .tooManyAttempts: "too_many_attempts"
                    case .unavailable: "temporarily_unavailable"
                    default: "invalid_credentials"
                    }
                // The pages answer 200 to show the code field again; the device API's answer is an
                // error its client must see as one.
                let status = error.code == .secondFactorRequired ? 401 : Int(Self.signInStatus(error).code)
                return try Self.json(
                    HTTPResponse.Status(code: status),
                    OAuthError(code, error.message, status: status),
                    headers: Self.retryHeaders(error)
                )
            }
        }
        router.get("/keyhaven/v1/consent") { request, _ in
            guard let device = await self.device(request) else { return try Self.error(Self.unauthorized) }
            let query = try Self.query(request)
            let scopes = (query["scope"] ?? "").split(separator: " ").map(String.init)
            guard let origin = query["origin"], !origin.isEmpty else {
                return try Self.error(.invalidRequest("origin (the service being upgraded) is required."))
            }
            switch try await provider.nativeAuthorizationRequest(
                clientId: query["client_id"] ?? "",
                origin: origin,
                scopes: scopes,
                state: nil,
                nonce: nil
            ) {
            case .failure(let error): return try Self.error(error)
            case .success(let authorization):
                struct Answer: Encodable {
                    /// The service's registered name: Keyhaven names it even when consent exists.
                    var serviceName: String
                    var prompt: ConsentPrompt?
                    var state: CredentialState
                }
                let name = try await provider.client(authorization.clientId)?.name ?? authorization.clientId
                let prompt = try await provider.consentPrompt(authorization, userId: device.userId)
                let state = try await provider.credentialState(userId: device.userId, clientId: authorization.clientId)
                return try Self.json(.ok, Answer(serviceName: name, prompt: prompt, state: state))
            }
        }
        router.post("/keyhaven/v1/authorize") { request, _ in
            guard let device = await self.device(request) else { return try Self.error(Self.unauthorized) }
            guard let body = await Self.decode(AuthorizeBody.self, request) else {
                return try Self.error(.invalidRequest("Expected {client_id, origin, scope?, state?, nonce?, email?}."))
            }
            let scopes = (body.scope ?? "").split(separator: " ").map(String.init)
            switch try await provider.nativeAuthorizationRequest(
                clientId: body.client_id,
                origin: body.origin,
                scopes: scopes,
                state: body.state,
                nonce: body.nonce
            ) {
            case .failure(let error): return try Self.error(error)
            case .success(let authorization):
                let needsConsent = try await provider.consentPrompt(authorization, userId: device.userId) != nil
                if needsConsent && authorization.wantsEmail && !["share", "hide"].contains(body.email ?? "") {
                    return try Self.error(.invalidRequest("First authorization: email must be \"share\" or \"hide\"."))
                }
                let share: Bool? = body.email.map { $0 != "hide" }
                let response = try await provider.authorize(authorization, authentication: device, shareEmail: share)
                return try Self.json(.ok, response)
            }
        }
        router.get("/keyhaven/v1/services") { request, _ in
            guard let device = await self.device(request) else { return try Self.error(Self.unauthorized) }
            return try Self.json(.ok, try await provider.connectedServices(userId: device.userId))
        }
        router.post("/keyhaven/v1/services/:client/stop") { request, context in
            guard let device = await self.device(request) else { return try Self.error(Self.unauthorized) }
            return try await Self.outcome {
                try await provider.stopUsing(userId: device.userId, clientId: context.parameters.get("client") ?? "")
            }
        }
        router.post("/keyhaven/v1/services/:client/relay") { request, context in
            guard let device = await self.device(request) else { return try Self.error(Self.unauthorized) }
            guard let body = await Self.decode(RelayBody.self, request) else {
                return try Self.error(.invalidRequest("Expected {enabled}."))
            }
            return try await Self.outcome {
                try await provider.setRelayForwarding(
                    userId: device.userId,
                    clientId: context.parameters.get("client") ?? "",
                    enabled: body.enabled
                )
            }
        }
        router.post("/keyhaven/v1/account/delete") { request, _ in
            guard let device = await self.device(request) else { return try Self.error(Self.unauthorized) }
            return try await Self.outcome { try await provider.deleteAccount(userId: device.userId) }
        }
        router.post("/keyhaven/v1/logout") { request, _ in
            guard let token = Self.bearer(request) else { return try Self.error(Self.unauthorized) }
            try await provider.revokeDeviceToken(token)
            return try Self.json(.ok, ["status": "signed out"])
        }
    }

    /// Why `/keyhaven/v1/login` refuses a request before reading it, or nil (security review #7).
    ///
    /// The device login is for programs (`keyhaven idp login`), never for a web page, and a page
    /// must not be able to spend the account's sign-in attempts (a lockout): only
    /// `Content-Type: application/json` is read — a page can send that cross-site only after a
    /// CORS preflight, which this provider never grants — so `text/plain` and form posts get 415
    /// and are not counted; a request a browser marks as cross-site (`Sec-Fetch-Site` other than
    /// `same-origin` or `none`, or an `Origin` that is not the provider's) gets 403.
    func deviceLoginRefusal(_ request: Request) throws -> Response? {
        let mediaType = request.headers[.contentType]?.split(separator: ";").first
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        guard mediaType == "application/json" else {
            return try Self.error(
                OAuthError(
                    "invalid_request",
                    "The device login reads only Content-Type: application/json.",
                    status: 415
                )
            )
        }
        guard isSameOrigin(request) else {
            return try Self.error(
                OAuthError("invalid_request", "The device login is not for web pages of other sites.", status: 403)
            )
        }
        return nil
    }

    static func outcome(_ action: () async throws -> Void) async throws -> Response {
        do {
            try await action()
            return try json(.ok, ["status": "done"])
        } catch let error as ProviderError {
            return try Self.error(
                .init(
                    error.code == .notFound ? "not_found" : "invalid_request",
                    error.message,
                    status: error.code == .notFound ? 404 : 400
                )
            )
        }
    }
}
