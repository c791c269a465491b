import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
public import Passkeys
import Synchronization
import _KeyhavenSupport
import _KeyhavenWeb

/// shiny as a WebAuthn relying party (issue 16), the way a Swift service mounts Keyhaven's
/// `PasskeyRelyingParty` kit: register a passkey on the account's page, sign in with one (a button,
/// and conditional UI on the user-name field), remove one, the W3C `/.well-known/passkey-endpoints`,
/// and the WebAuthn signals that keep authenticators in step (the account page lists the accepted
/// credentials and the current name; a sign-in with a passkey shiny does not know reports it).
///
/// The pages' script is `/assets/shiny-passkeys.js` (`Resources/shiny-passkeys.js`; no inline
/// script: the CSP allows shiny's own scripts only). The JSON calls carry the browser's CSRF token in `X-CSRF-Token` and must come
/// from shiny's own origin.
extension Shiny {
    static let challengeLifetime: TimeInterval = 5 * 60

    // MARK: Checks for tests and the demo

    /// The credential ids of `user`'s passkeys.
    public func passkeyCredentialIDs(user: String) throws -> [[UInt8]] {
        guard let found = try store.user(named: user) else { return [] }
        return try store.passkeys(for: found.id).map(\.credentialID)
    }

    /// Whether `passkey` signs in to `user`: an assertion made with it for a fresh challenge of
    /// shiny's, checked exactly as a sign-in page's is (its counter is recorded).
    public func signIn(user: String, passkey: PasskeyCredential) throws -> Bool {
        let challenge = passkeys.challenges.issue(.authentication, now: configuration.now())
        let (_, response) = try Authenticator(now: configuration.now).authenticate(
            AssertionRequest(rpID: passkeys.relyingParty.rpID, challenge: challenge),
            origin: publicOrigin.current,
            credential: passkey,
            userVerified: true
        )
        guard let found = try? passkeys.authenticate(response) else { return false }
        return found.name == user
    }

    /// The challenge a response's client data carries (the relying party checks it is this one).
    static func challenge(in credential: JSONValue) -> [UInt8]? {
        guard let data = credential["response"]?["clientDataJSON"]?.string.flatMap({ Base64URL.decode($0) }),
            let clientData = try? JSONValue.parse(Data(data)), let challenge = clientData["challenge"]?.string
        else { return nil }
        return Base64URL.decode(challenge)
    }

    /// A JSON call from shiny's own page in this browser: same origin, and the CSRF header equal to
    /// the browser's cookie.
    func jsonCall(_ request: Request) async throws(ShinyAPIError) -> JSONValue {
        guard isGenuine(request, token: request.headers[CSRF.header]) else {
            throw ShinyAPIError(.forbidden, "invalid_request", "reload the page and try again")
        }
        guard let body = try? await request.body.collect(upTo: 64 << 10),
            let json = try? JSONValue.parse(Data(body.readableBytesView))
        else { throw ShinyAPIError.invalidRequest("the body is not JSON") }
        return json
    }

    static func json(
        _ value: JSONValue,
        status: HTTPResponse.Status = .ok,
        headers: HTTPFields = [:]
    ) throws -> Response {
        try JSONResponse(value, status: status, headers: headers).response
    }

    func addPasskeys(to router: Router<ShinyRequestContext>) {
        router.get("/.well-known/passkey-endpoints") { _, _ in
            let origin = self.publicOrigin.current
            return try Self.json([
                "enroll": .string(origin + "/account/passkeys"), "manage": .string(origin + "/account/passkeys"),
            ])
        }
        router.get("/account/passkeys") { request, _ in
            guard let user = self.sessionUser(request) else { return Self.redirect("/signin") }
            let (token, headers) = self.formToken(request)
            let passkeys = (try? self.store.passkeys(for: user.id)) ?? []
            let handle = (try? self.store.passkeyHandle(for: user.id)) ?? []
            return Self.html(
                ShinyPages.passkeys(
                    csrf: token,
                    user: user.name,
                    rpID: self.passkeys.relyingParty.rpID,
                    userHandle: Base64URL.encode(handle),
                    passkeys: passkeys.map { (Base64URL.encode($0.credentialID), $0.created, $0.lastUsed) },
                    hasPassword: user.hasPassword
                ),
                headers: headers
            )
        }
        postForm("/account/passkeys/remove", to: router) { request, _, form in
            guard let user = self.sessionUser(request) else { return Self.redirect("/signin") }
            if let id = form["credential"].flatMap({ Base64URL.decode($0) }) {
                // The last way in is never removed: an account without a password keeps one passkey.
                let count = (try? self.store.passkeys(for: user.id).count) ?? 0
                if user.hasPassword || user.signInSubject != nil || count > 1 {
                    _ = try? self.store.removePasskey(credentialID: id, userID: user.id)
                }
            }
            return Self.redirect("/account/passkeys")
        }
        router.post("/passkeys/registration/options") { request, _ in
            _ = try await self.jsonCall(request)
            guard let user = self.sessionUser(request) else {
                throw ShinyAPIError(.unauthorized, "signed_out", "sign in first")
            }
            do {
                return try Self.json(try self.passkeys.creationOptions(for: user))
            } catch {
                throw ShinyAPIError.serverError("could not prepare the registration")
            }
        }
        router.post("/passkeys/registration") { request, _ in
            let body = try await self.jsonCall(request)
            guard let user = self.sessionUser(request) else {
                throw ShinyAPIError(.unauthorized, "signed_out", "sign in first")
            }
            let id = try self.passkeys.register(body["credential"] ?? .null, for: user)
            return try Self.json(["credentialId": .string(Base64URL.encode(id))], status: .created)
        }
        router.post("/passkeys/authentication/options") { request, _ in
            _ = try await self.jsonCall(request)
            let challenge = self.passkeys.challenges.issue(.authentication, now: self.configuration.now())
            return try Self.json([
                "rpId": .string(self.passkeys.relyingParty.rpID), "challenge": .string(Base64URL.encode(challenge)),
                "allowCredentials": [], "userVerification": "preferred", "timeout": 300_000,
            ])
        }
        router.post("/passkeys/authentication") { request, _ in
            let body = try await self.jsonCall(request)
            let user = try self.passkeys.authenticate(body["credential"] ?? .null)
            guard let token = try? self.store.createSession(for: user.id) else {
                throw ShinyAPIError.serverError("could not open a session")
            }
            return try Self.json(["redirect": "/account"], headers: self.sessionCookieHeader(token))
        }
    }
}

/// Challenges shiny issued and has not seen back: each works once, for what it was issued for,
/// within ``Shiny/challengeLifetime``.
final class PasskeyChallenges: Sendable {
    enum Purpose: Hashable, Sendable {
        case registration(userID: Int64)
        case authentication
    }

    private let issued = Mutex<[[UInt8]: (purpose: Purpose, expires: Date)]>([:])

    func issue(_ purpose: Purpose, now: Date) -> [UInt8] {
        let challenge = ShinyStore.randomBytes(32)
        issued.withLock { issued in
            issued = issued.filter { $0.value.expires > now }
            issued[challenge] = (purpose, now.addingTimeInterval(Shiny.challengeLifetime))
        }
        return challenge
    }

    /// The purpose of `challenge` if it is live; it is used up either way.
    func take(_ challenge: [UInt8], now: Date) -> Purpose? {
        issued.withLock { issued in
            guard let entry = issued.removeValue(forKey: challenge), entry.expires > now else { return nil }
            return entry.purpose
        }
    }
}

/// shiny's passkey rules in one place, for its pages and its account-modification extension: the
/// relying party for its public origin, creation options, registration and sign-in checks.
struct ShinyPasskeys: Sendable {
    let store: ShinyStore
    let challenges: PasskeyChallenges
    let publicOrigin: PublicOrigin
    let now: @Sendable () -> Date

    /// Whether browsers accept shiny's origin for passkeys: https, or `localhost` (an IP address
    /// cannot be an RP ID).
    var available: Bool {
        guard let origin = ServiceOrigin.of(url: publicOrigin.current) else { return false }
        let host = origin.host
        guard origin.scheme == .https || host == "localhost" else { return false }
        return host == "localhost" || !(host.contains(":") || host.allSatisfy { $0.isNumber || $0 == "." })
    }

    /// The relying party for shiny's public origin: the RP ID is its host.
    var relyingParty: PasskeyRelyingParty {
        let origin = publicOrigin.current
        return PasskeyRelyingParty(rpID: ServiceOrigin.of(url: origin)?.host ?? "localhost", origins: [origin])
    }

    /// Creation options for `user` (`PublicKeyCredentialCreationOptionsJSON`): ES256 or EdDSA,
    /// discoverable, attestation `none`, the account's passkeys excluded. The challenge is kept
    /// for ``challengeLifetime``, for this account's registration only.
    func creationOptions(for user: ShinyStore.User) throws -> JSONValue {
        let handle = try store.passkeyHandle(for: user.id)
        let challenge = challenges.issue(.registration(userID: user.id), now: now())
        let existing = try store.passkeys(for: user.id)
        return [
            "rp": ["id": .string(relyingParty.rpID), "name": "shiny"],
            "user": [
                "id": .string(Base64URL.encode(handle)), "name": .string(user.name), "displayName": .string(user.name),
            ],
            "challenge": .string(Base64URL.encode(challenge)),
            "pubKeyCredParams": [["type": "public-key", "alg": -7], ["type": "public-key", "alg": -8]],
            "timeout": 300_000,
            "excludeCredentials": .array(
                existing.map { ["type": "public-key", "id": .string(Base64URL.encode($0.credentialID))] }
            ),
            "authenticatorSelection": ["residentKey": "required", "userVerification": "preferred"],
            "attestation": "none",
        ]
    }

    /// Verifies a registration made with options from ``creationOptions(for:)`` and links the
    /// passkey to `user`.
    func register(_ credential: JSONValue, for user: ShinyStore.User) throws(ShinyAPIError) -> [UInt8] {
        guard let challenge = Shiny.challenge(in: credential),
            challenges.take(challenge, now: now()) == .registration(userID: user.id)
        else { throw ShinyAPIError(.badRequest, "invalid_challenge", "this registration expired; try again") }
        let registration: PasskeyRelyingParty.Registration
        do {
            registration = try relyingParty.verifyRegistration(credential, challenge: challenge)
        } catch {
            throw ShinyAPIError(.badRequest, "invalid_passkey", "the passkey was refused: \(error.message)")
        }
        do {
            guard try store.passkey(credentialID: registration.credentialID) == nil else {
                throw ShinyAPIError(.conflict, "exists", "this passkey is already registered")
            }
            try store.addPasskey(registration, for: user.id)
        } catch let error as ShinyAPIError {
            throw error
        } catch {
            throw ShinyAPIError.serverError("could not save the passkey")
        }
        return registration.credentialID
    }

    /// Verifies a sign-in; returns the account.
    func authenticate(_ credential: JSONValue) throws(ShinyAPIError) -> ShinyStore.User {
        guard let challenge = Shiny.challenge(in: credential),
            challenges.take(challenge, now: now()) == .authentication
        else { throw ShinyAPIError(.badRequest, "invalid_challenge", "this sign-in expired; try again") }
        guard let id = credential["rawId"]?.string.flatMap({ Base64URL.decode($0) }),
            let stored = try? store.passkey(credentialID: id)
        else {
            // The page tells the authenticator (signalUnknownCredential) so it stops offering it.
            throw ShinyAPIError(.notFound, "unknown_credential", "shiny does not know this passkey")
        }
        let verified: PasskeyRelyingParty.Authentication
        do {
            verified = try relyingParty.verifyAuthentication(
                credential,
                challenge: challenge,
                publicKey: stored.publicKey,
                storedSignCount: stored.signCount
            )
        } catch {
            throw ShinyAPIError(.unauthorized, "invalid_passkey", "the passkey sign-in was refused: \(error.message)")
        }
        guard let user = try? store.user(id: stored.userID),
            verified.userHandle == nil || verified.userHandle == (try? store.passkeyHandle(for: user.id))
        else { throw ShinyAPIError(.unauthorized, "invalid_passkey", "the passkey belongs to another account") }
        try? store.notePasskeyUse(credentialID: id, signCount: verified.newSignCount)
        return user
    }

}
