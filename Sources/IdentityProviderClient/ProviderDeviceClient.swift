public import AccountModification
import AsyncHTTPClient
import Foundation
public import IdentityProvider
public import KeyhavenApp
import KeyhavenJOSE
import NIOCore
import NIOHTTP1
public import Vault
import _KeyhavenHTTPSupport
import _KeyhavenSupport

/// Keyhaven's client of a provider's device API (`/keyhaven/v1/…`).
public struct ProviderDeviceClient: Sendable {
    public init() {}

    func call(
        _ method: HTTPMethod,
        _ url: String,
        bearer: String? = nil,
        json: (any Encodable)? = nil
    ) async throws -> [UInt8] {
        var request = HTTPClientRequest(url: url)
        request.method = method
        request.headers.add(name: "Accept", value: "application/json")
        if let bearer { request.headers.add(name: "Authorization", value: "Bearer \(bearer)") }
        if let json {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try JSONEncoder().encode(json)))
        }
        let response: HTTPClientResponse
        let body: ByteBuffer
        do {
            let deadline = NIODeadline.now() + .seconds(20)
            response = try await OutboundHTTP.shared.execute(request, deadline: deadline)
            body = try await response.body.collect(upTo: 1 << 20, deadline: deadline)
        } catch {
            // Cancellation is the caller's, not the provider's failure: it is rethrown as such.
            switch OutboundFailure(error) {
            case .cancelled: throw CancellationError()
            case .unreachable:
                throw Failure(.unreachable, "the provider at \(url) could not be reached (nothing was sent)")
            case .timedOut:
                throw Failure(.unreachable, "the provider at \(url) did not answer in time; try again later")
            case .other:
                if Task.isCancelled { throw CancellationError() }
                throw Failure(.unreachable, "the connection to the provider at \(url) failed; try again later")
            }
        }
        guard (200..<300).contains(response.status.code) else {
            let error = try? JSONDecoder().decode(OAuthError.self, from: Data(body.readableBytesView))
            throw Failure(
                providerError: error?.error,
                error.map { $0.error_description } ?? "the provider answered HTTP \(response.status.code)"
            )
        }
        return Array(body.readableBytesView)
    }

    /// The provider's issuer and endpoint base, from the discovery document of the issuer the
    /// person typed (`url`: an https URL, plain http only on loopback; a bare host is https).
    ///
    /// The provider password goes to the base this returns, so it is checked before anything else
    /// is sent (security review Low #23): the document's `issuer` must be `url` itself (OpenID
    /// Connect Discovery §4.3) and its `authorization_endpoint` on the same origin. A document that
    /// names another issuer, or endpoints on another origin or over plain http, is refused with
    /// ``Failure/Code/crossOrigin``; only the discovery document itself was fetched.
    public func discover(_ url: String) async throws -> (issuer: String, baseURL: String) {
        var typed = url.trimmingCharacters(in: .whitespaces)
        while typed.hasSuffix("/") { typed.removeLast() }
        if !typed.contains("://") { typed = "https://" + typed }
        guard let origin = ServiceOrigin.of(url: typed), !typed.contains("?"), !typed.contains("#") else {
            throw Failure(.notAProvider, "\(url) is not a provider's URL (https://…)")
        }
        guard origin.isPotentiallyTrustworthy else {
            throw Failure(
                .crossOrigin,
                "\(typed) is plain http: the provider password is sent only over https (or http on loopback)"
            )
        }
        let body: [UInt8]
        do {
            body = try await call(.GET, typed + "/.well-known/openid-configuration")
        } catch let failure as Failure where failure.code == .rejected {
            throw Failure(.notAProvider, "\(typed) does not publish a Sign in with Keyhaven discovery document")
        }
        guard let document = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
            var issuer = document["issuer"] as? String,
            let authorize = document["authorization_endpoint"] as? String, authorize.hasSuffix("/auth/authorize")
        else {
            throw Failure(.notAProvider, "\(typed) does not publish a Sign in with Keyhaven discovery document")
        }
        while issuer.hasSuffix("/") { issuer.removeLast() }
        guard issuer == typed else {
            throw Failure(
                .crossOrigin,
                "\(typed)'s discovery document names another issuer (\(issuer)); refused: sign in with the "
                    + "provider's issuer URL"
            )
        }
        let base = String(authorize.dropLast("/auth/authorize".count))
        guard origin.isSameOrigin(as: authorize), !base.contains("?"), !base.contains("#") else {
            throw Failure(
                .crossOrigin,
                "\(typed)'s discovery document sends sign-ins to another origin (\(authorize)); refused"
            )
        }
        return (issuer, base)
    }

    /// Signs Keyhaven in: a device token for the person.
    ///
    /// The body is JSON (`Content-Type: application/json`, the only type the provider reads there).
    /// `deviceToken`, the token this Keyhaven already holds for the provider (signing in again), is
    /// sent as `Authorization: Bearer`: when it is a current token of that account, the provider
    /// counts this sign-in on the device's own counter, so a stranger who locked the account does
    /// not lock this Keyhaven out.
    public func login(
        baseURL: String,
        email: String,
        password: String,
        code: String?,
        name: String,
        deviceToken: String? = nil
    ) async throws -> (
        token: String, email: String
    ) {
        struct Body: Encodable {
            var email, password: String
            var code: String?
            var name: String
        }
        // `baseURL` comes from ``discover(_:)``; never send a password in clear off loopback.
        guard ServiceOrigin.of(url: baseURL)?.isPotentiallyTrustworthy == true else {
            throw Failure(.crossOrigin, "\(baseURL) is not https: the provider password is not sent there")
        }
        let body = try await call(
            .POST,
            baseURL + "/keyhaven/v1/login",
            bearer: deviceToken,
            json: Body(email: email, password: password, code: code, name: name)
        )
        guard let answer = try? JSONDecoder().decode([String: String].self, from: Data(body)),
            let token = answer["device_token"]
        else { throw Failure(.badResponse, "the provider's answer has no device token") }
        return (token, answer["email"] ?? email)
    }

    public struct ConsentAnswer: Decodable, Sendable {
        /// The name the client is registered under.
        public var serviceName: String
        /// The provider's consent step; nil when the person already authorized the client.
        public var prompt: ConsentPrompt?
        public var state: CredentialState
    }

    /// What the consent step shows for `clientId`, asked for the service at `origin` (the one being
    /// upgraded; the provider refuses a client not registered for it).
    public func consent(
        _ session: ProviderSession,
        clientId: String,
        origin: String,
        scope: String
    ) async throws -> ConsentAnswer {
        let query = FormURLEncoding.encode([("client_id", clientId), ("origin", origin), ("scope", scope)])
        let body = try await call(.GET, session.baseURL + "/keyhaven/v1/consent?" + query, bearer: session.deviceToken)
        guard let answer = try? JSONDecoder().decode(ConsentAnswer.self, from: Data(body)) else {
            throw Failure(.badResponse, "the provider's consent answer is not understood")
        }
        return answer
    }

    /// A native authorization for `clientId`, for the service at `origin` (the one being upgraded).
    public func authorize(
        _ session: ProviderSession,
        clientId: String,
        origin: String,
        scope: String,
        state: String?,
        nonce: String?,
        email: String?
    ) async throws -> AuthorizationResponse {
        struct Body: Encodable {
            var client_id, origin, scope: String
            var state, nonce, email: String?
        }
        let body = try await call(
            .POST,
            session.baseURL + "/keyhaven/v1/authorize",
            bearer: session.deviceToken,
            json: Body(client_id: clientId, origin: origin, scope: scope, state: state, nonce: nonce, email: email)
        )
        guard let response = try? JSONDecoder().decode(AuthorizationResponse.self, from: Data(body)) else {
            throw Failure(.badResponse, "the provider's authorization is not understood")
        }
        return response
    }

    public func services(_ session: ProviderSession) async throws -> [ConnectedService] {
        let body = try await call(.GET, session.baseURL + "/keyhaven/v1/services", bearer: session.deviceToken)
        return (try? JSONDecoder().decode([ConnectedService].self, from: Data(body))) ?? []
    }

    public func stopUsing(_ session: ProviderSession, clientId: String) async throws {
        _ = try await call(
            .POST,
            session.baseURL + "/keyhaven/v1/services/\(FormURLEncoding.escape(clientId))/stop",
            bearer: session.deviceToken
        )
    }

    public func setRelayForwarding(_ session: ProviderSession, clientId: String, enabled: Bool) async throws {
        _ = try await call(
            .POST,
            session.baseURL + "/keyhaven/v1/services/\(FormURLEncoding.escape(clientId))/relay",
            bearer: session.deviceToken,
            json: ["enabled": enabled]
        )
    }

    public func logout(_ session: ProviderSession) async throws {
        _ = try await call(.POST, session.baseURL + "/keyhaven/v1/logout", bearer: session.deviceToken)
    }
}

/// What Keyhaven shows the person before switching a service to Sign in with Keyhaven: always the
/// service being switched and the provider's client it is registered as; the provider's consent
/// step (the e-mail question) only the first time.
public struct SignInConsent: Sendable, Hashable {
    /// The origin of the service being switched (where Keyhaven read its manifest).
    public var service: String
    /// The provider.
    public var issuer: String
    /// The client the provider authorizes (the manifest's `signIn.clientId`), and its registered name.
    public var clientId: String
    public var serviceName: String
    /// The provider's consent step; nil when the person already authorized this client (their
    /// earlier e-mail choice stands).
    public var prompt: ConsentPrompt?

    public init(service: String, issuer: String, clientId: String, serviceName: String, prompt: ConsentPrompt?) {
        self.service = service
        self.issuer = issuer
        self.clientId = clientId
        self.serviceName = serviceName
        self.prompt = prompt
    }
}

/// The upgrade's consent step and authorization through the device API. `choose` shows the
/// ``SignInConsent`` (every time, consent or not) and answers "share" or "hide" (the e-mail
/// question; any answer when there is none), or nil to decline.
///
/// The provider is told the origin of the service being upgraded and authorizes only a client
/// registered for it.
public struct DeviceSignInAuthority: SignInAuthority {
    public let session: ProviderSession
    let choose: @Sendable (SignInConsent) async -> String?
    public var issuer: String { session.issuer }

    public init(session: ProviderSession, choose: @escaping @Sendable (SignInConsent) async -> String?) {
        self.session = session
        self.choose = choose
    }

    public func authorize(_ request: SignInRequest, service: String) async -> SignInAuthorization {
        guard let clientId = request.clientId else { return SignInAuthorization(error: "invalid_client") }
        guard let origin = ServiceOrigin(service: service), origin.isPotentiallyTrustworthy else {
            return SignInAuthorization(error: "invalid_request")
        }
        let client = ProviderDeviceClient()
        let scope = "name email"
        do {
            let answer = try await client.consent(session, clientId: clientId, origin: origin.serialized, scope: scope)
            let consent = SignInConsent(
                service: origin.serialized,
                issuer: session.issuer,
                clientId: clientId,
                serviceName: answer.serviceName,
                prompt: answer.prompt
            )
            guard let choice = await choose(consent) else {
                return SignInAuthorization(error: "user_cancelled_authorize")
            }
            let response = try await client.authorize(
                session,
                clientId: clientId,
                origin: origin.serialized,
                scope: scope,
                state: request.state,
                nonce: request.nonce,
                email: answer.prompt == nil ? nil : choice
            )
            if let error = response.error { return SignInAuthorization(error: error) }
            let claims = response.id_token.flatMap { try? CompactJWS($0).claims(as: IdentityTokenClaims.self) }
            return SignInAuthorization(
                user: claims?.sub,
                identityToken: response.id_token,
                authorizationCode: response.code,
                state: response.state,
                email: claims?.email,
                fullName: nil
            )
        } catch {
            return SignInAuthorization(error: "\(error)")
        }
    }
}
