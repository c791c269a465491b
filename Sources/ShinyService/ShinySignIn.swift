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
/// (by `state`, each bound to the browser that started it by a random value in its `shiny_signin`
/// cookie), the provider's answers waiting for their browser, and the notifications received.
final class ShinySignIn: Sendable {
    struct Pending: Sendable {
        var nonce: String
        /// The value of the starting browser's `shiny_signin` cookie.
        var browser: String
        var created: Date
    }

    /// The provider's answer to a sign-in, held until its browser comes back for it.
    struct Answer: Sendable {
        var state: String
        var code: String?
        var error: String?
        var created: Date
    }

    private let client = Mutex<(configuration: ShinySignInConfiguration, client: SignInClient)?>(nil)
    private let pending = Mutex<[String: Pending]>([:])
    private let answers = Mutex<[String: Answer]>([:])
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

    /// A new browser sign-in: its state, nonce and browser binding (valid ten minutes).
    func begin() -> (state: String, nonce: String, browser: String) {
        let state = Self.random()
        let nonce = Self.random()
        let browser = Self.random()
        pending.withLock { pending in
            let cutoff = Date().addingTimeInterval(-600)
            pending = pending.filter { $0.value.created > cutoff }
            pending[state] = Pending(nonce: nonce, browser: browser, created: Date())
        }
        return (state, nonce, browser)
    }

    /// Keeps the provider's answer for a sign-in in flight for a minute; returns the id its browser
    /// fetches it by, or nil for a state shiny did not issue (or that expired).
    func hold(state: String, code: String?, error: String?) -> String? {
        let known = pending.withLock { $0[state].map { $0.created > Date().addingTimeInterval(-600) } ?? false }
        guard known else { return nil }
        let id = Self.random()
        answers.withLock { answers in
            let cutoff = Date().addingTimeInterval(-60)
            answers = answers.filter { $0.value.created > cutoff }
            answers[id] = Answer(state: state, code: code, error: error, created: Date())
        }
        return id
    }

    /// The answer held under `handoff`; each works once.
    func take(handoff: String) -> Answer? {
        answers.withLock { answers in
            guard let answer = answers.removeValue(forKey: handoff), answer.created > Date().addingTimeInterval(-60)
            else { return nil }
            return answer
        }
    }

    /// The nonce of a sign-in in flight, if `browser` is the cookie of the browser that started it
    /// (compared in constant time). Each state works once, and a wrong browser uses it up too.
    func finish(state: String, browser: String) -> String? {
        pending.withLock { pending in
            guard let entry = pending.removeValue(forKey: state), entry.created > Date().addingTimeInterval(-600),
                constantTimeEqual(browser, entry.browser)
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
        switch (try? identify(context))
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
        switch (try? identify(context))
            ?? .failure(.init(code: .failed, localizedFailureReason: "shiny is unavailable."))
        {
        case .failure(let error):
            await context.cancelRequest(withError: error)
            return nil
        case .success(let user):
            guard user.totpSecret != nil else {
                // No second factor to ask for: convert as without interaction (Keyhaven shows the
                // person which service switches before it hands over the authorization).
                await convert(user, context: context)
                return nil
            }
            await stepUps.open(context.request.requestId, user: user, action: .convertToSignIn)
            return "/account-modification/step-up/\(context.request.requestId)"
        }
    }
}
