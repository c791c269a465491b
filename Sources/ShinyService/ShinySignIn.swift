import AccountModification
import AccountModificationKit
import Foundation
import KeyhavenJOSE
import RelyingParty
import Synchronization
import _KeyhavenSupport

/// What shiny needs to offer "Sign in with Keyhaven": the provider, its registration there, and the
/// team key that signs its `client_secret`.
public struct ShinySignInConfiguration: Sendable {
    public var issuer: String
    /// Where the provider's endpoints are (the issuer when it is reachable there).
    public var providerURL: String
    public var clientId: String
    public var teamId: String
    public var keyId: String
    /// The team's `.p8` key (PKCS#8 PEM).
    public var privateKeyPEM: String
    /// shiny's callback, as registered with the provider.
    public var redirectURI: String

    public init(
        issuer: String,
        providerURL: String,
        clientId: String,
        teamId: String,
        keyId: String,
        privateKeyPEM: String,
        redirectURI: String
    ) {
        self.issuer = issuer
        self.providerURL = providerURL
        self.clientId = clientId
        self.teamId = teamId
        self.keyId = keyId
        self.privateKeyPEM = privateKeyPEM
        self.redirectURI = redirectURI
    }
}

/// shiny's relying-party state: the kit's client once configured, the browser sign-ins in flight
/// (kept server-side by `state`, because the provider's form_post callback is a cross-site POST
/// that carries no SameSite=Lax cookie), and the notifications received.
final class ShinySignIn: Sendable {
    struct Pending: Sendable {
        var nonce: String
        var created: Date
    }

    private let client = Mutex<(configuration: ShinySignInConfiguration, client: SignInClient)?>(nil)
    private let pending = Mutex<[String: Pending]>([:])
    let notifications = Mutex<[NotificationEvent]>([])

    var configured: (configuration: ShinySignInConfiguration, client: SignInClient)? { client.withLock { $0 } }

    func configure(_ configuration: ShinySignInConfiguration) throws {
        let key = try ES256SigningKey(kid: configuration.keyId, pemRepresentation: configuration.privateKeyPEM)
        let kit = SignInClient(
            configuration: .init(
                issuer: configuration.issuer,
                baseURL: configuration.providerURL,
                clientId: configuration.clientId,
                teamId: configuration.teamId,
                key: key
            )
        )
        client.withLock { $0 = (configuration, kit) }
    }

    static func random() -> String {
        var generator = SystemRandomNumberGenerator()
        return Base64URL.encode((0..<24).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// A new browser sign-in: its state and nonce (valid ten minutes).
    func begin() -> (state: String, nonce: String) {
        let state = Self.random()
        let nonce = Self.random()
        pending.withLock { pending in
            let cutoff = Date().addingTimeInterval(-600)
            pending = pending.filter { $0.value.created > cutoff }
            pending[state] = Pending(nonce: nonce, created: Date())
        }
        return (state, nonce)
    }

    /// The nonce of a sign-in in flight; each state works once.
    func finish(state: String) -> String? {
        pending.withLock { pending in
            guard let entry = pending.removeValue(forKey: state), entry.created > Date().addingTimeInterval(-600)
            else { return nil }
            return entry.nonce
        }
    }
}

extension ShinyExtension {
    /// The upgrade to sign-in: ask Keyhaven for an authorization with our state and nonce, redeem
    /// its code (a native code: no redirect URI), check the token, link the account to its `sub`,
    /// and drop the password: from now on only Sign in with Keyhaven opens this account.
    func convert(_ user: ShinyStore.User, context: ModificationContext) async {
        func fail(_ reason: String, _ code: ModificationErrorCode = .failed) async {
            await context.cancelRequest(withError: .init(code: code, localizedFailureReason: reason))
        }
        guard let (_, client) = signIn.configured else {
            return await fail("shiny is not registered with a Sign in with Keyhaven provider.")
        }
        let state = ShinySignIn.random()
        let nonce = ShinySignIn.random()
        let authorization: SignInAuthorization
        do {
            authorization = try await context.getSignInUpgradeAuthorization(state: state, nonce: nonce)
        } catch {
            return  // cancelled while waiting
        }
        if let error = authorization.error {
            return await fail(
                "No authorization from the provider (\(error)).",
                error == "user_cancelled_authorize" ? .userCanceled : .failed
            )
        }
        guard authorization.state == state, let code = authorization.authorizationCode else {
            return await fail("The authorization does not belong to this request.")
        }
        let subject: String
        do {
            let (_, claims) = try await client.exchange(code: code, redirectURI: nil, nonce: nonce)
            if let token = authorization.identityToken {
                let handed = try await client.verifier.verify(token, nonce: nonce)
                guard handed.sub == claims.sub else { return await fail("The identity token is for someone else.") }
            }
            subject = claims.sub
        } catch {
            return await fail("shiny could not verify the authorization: \(error)")
        }
        do {
            if let other = try store.user(signInSubject: subject), other.id != user.id {
                return await fail("This Keyhaven account already signs in to another shiny account.")
            }
            try store.linkSignIn(subject: subject, for: user.id)
            try store.endSessions(for: user.id)
        } catch {
            return await fail("shiny could not save the link.")
        }
        await context.completeUpgradeToSignIn()
    }

    func convertAccountToSignInWithoutUserInteraction(_ context: ModificationContext) async {
        switch (try? identify(context.request))
            ?? .failure(.init(code: .failed, localizedFailureReason: "shiny is unavailable."))
        {
        case .failure(let error):
            await context.cancelRequest(withError: error)
        case .success(let user):
            if user.totpSecret != nil {
                return await context.cancelRequest(withError: .init(code: .userInteractionRequired))
            }
            await convert(user, context: context)
        }
    }

    func prepareInterfaceToConvertAccountToSignIn(_ context: ModificationContext) async -> String? {
        switch (try? identify(context.request))
            ?? .failure(.init(code: .failed, localizedFailureReason: "shiny is unavailable."))
        {
        case .failure(let error):
            await context.cancelRequest(withError: error)
            return nil
        case .success(let user):
            await stepUps.open(context.request.requestId, user: user, action: .convertToSignIn)
            return "/account-modification/step-up/\(context.request.requestId)"
        }
    }
}
