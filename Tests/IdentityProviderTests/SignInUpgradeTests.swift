import AccountModification
import Foundation
import IdentityProvider
import IdentityProviderClient
import IdentityProviderTestSupport
import KeyhavenApp
import KeyhavenJOSE
import KeyhavenTesting
import Logging
import ShinyService
import Testing
import UpgradeHTTP
import Vault

/// The one-tap upgrade to Sign in with Keyhaven, end to end in one process: a provider, shiny
/// registered with it, Keyhaven's vault and device session.
@Suite(.offCooperativePool)
struct SignInUpgradeTests {
    struct Setup: Sendable {
        let harness: ProviderHarness
        let shiny: Shiny
        let origin: String
        let vault: TestVault
        let session: ProviderSession
    }

    /// A provider; shiny on a free port, registered (redirect + notification URL) and signed up;
    /// a vault with shiny's credential and a device session for the person.
    static func with(_ body: @escaping @Sendable (Setup) async throws -> Void) async throws {
        try await ProviderHarness.with(notificationURL: nil) { harness in
            let shiny = try Shiny(configuration: .init(scryptLogN: 10))
            let (origin, server) = try await shiny.start()
            defer { server.cancel() }
            try await harness.provider.registerClient(
                id: "com.example.shiny.web",
                teamId: harness.teamId,
                name: "Shiny (web)",
                redirectURIs: [origin + Shiny.signInCallbackPath],
                notificationURL: origin + Shiny.notificationPath
            )
            try shiny.enableSignIn(
                ShinySignInConfiguration(
                    issuer: harness.provider.configuration.issuer,
                    providerURL: harness.baseURL,
                    clientId: "com.example.shiny.web",
                    teamId: harness.teamId,
                    keyId: harness.teamKey.kid,
                    privateKeyPEM: harness.teamKey.pemRepresentation,
                    redirectURI: origin + Shiny.signInCallbackPath
                )
            )
            try shiny.createAccount(user: "ada", password: "Welcome12345")
            let vault = try TestVault()
            try vault.vault.add(CredentialContent(services: [.init(origin)], user: "ada", password: "Welcome12345"))
            let authentication = try await harness.provider.authenticate(
                email: harness.email,
                password: harness.password,
                code: nil
            )
            let token = try await harness.provider.createDeviceToken(authentication, name: "test")
            let session = ProviderSession(
                issuer: harness.provider.configuration.issuer,
                baseURL: harness.baseURL,
                email: harness.email,
                deviceToken: token,
                created: Date()
            )
            try await body(Setup(harness: harness, shiny: shiny, origin: origin, vault: vault, session: session))
        }
    }

    struct NoHost: ModificationHost {
        func presentInterface(_ url: String) async {}
        func obtainSignInAuthorization(_ request: SignInRequest) async -> SignInAuthorization {
            SignInAuthorization(error: "not this host")
        }
    }

    static func coordinator(_ setup: Setup) -> UpgradeService {
        UpgradeService(
            vault: setup.vault.vault,
            environment: HTTPUpgradeEnvironment(requestTimeout: .seconds(30)),
            host: NoHost(),
            pollInterval: .milliseconds(50),
            deadline: .seconds(60)
        )
    }

    @Test func upgradeLinksTheAccountAndRetiresThePassword() async throws {
        try await Self.with { setup in
            let id = try #require(try setup.vault.vault.credentials(forService: setup.origin).credentials.first?.id)
            let prompts = TestFlag()
            let authority = DeviceSignInAuthority(session: setup.session) { consent in
                #expect(consent.service == setup.origin && consent.clientId == "com.example.shiny.web")
                #expect(consent.serviceName == "Shiny (web)" && consent.prompt?.asksEmail == true)
                prompts.raise()
                return "hide"
            }
            let result = await Self.coordinator(setup).upgradeToSignIn(id, service: setup.origin, authority: authority)
            #expect(result == .upgraded(credential: id, substituted: false))
            #expect(prompts.isRaised, "the consent step was shown")

            let credential = try setup.vault.vault.credential(id)
            #expect(credential.password == nil)
            let subject = try #require(try setup.shiny.linkedSubject(user: "ada"))
            #expect(credential.content.signIn?.subject == subject)
            #expect(credential.content.signIn?.issuer == setup.harness.provider.configuration.issuer)
            #expect(try setup.vault.vault.history(id).map(\.password) == ["Welcome12345"])
            #expect(try setup.vault.vault.pendingUpgrades().isEmpty)
            #expect(try !setup.shiny.signIn(user: "ada", password: "Welcome12345"), "the password no longer signs in")
            #expect(try !setup.shiny.hasPassword(user: "ada"))

            // The person stops using Sign in with Keyhaven: shiny hears consent-revoked and ends sessions.
            _ = try setup.shiny.startSession(user: "ada")
            let user = try #require(try await setup.harness.provider.user(email: setup.harness.email))
            try await setup.harness.provider.stopUsing(userId: user.id, clientId: "com.example.shiny.web")
            try await Self.waitFor { setup.shiny.receivedNotifications.count == 1 }
            #expect(setup.shiny.receivedNotifications.first?.type == "consent-revoked")
            #expect(setup.shiny.receivedNotifications.first?.sub == subject)
            #expect(try setup.shiny.sessionCount(user: "ada") == 0)
        }
    }

    @Test func declinedConsentChangesNothing() async throws {
        try await Self.with { setup in
            let id = try #require(try setup.vault.vault.credentials(forService: setup.origin).credentials.first?.id)
            let authority = DeviceSignInAuthority(session: setup.session) { _ in nil }
            let result = await Self.coordinator(setup).upgradeToSignIn(id, service: setup.origin, authority: authority)
            guard case .failed(_, let code) = result else {
                Issue.record("expected a failure, got \(result)")
                return
            }
            #expect(code == .userCanceled)
            #expect(try setup.vault.vault.credential(id).password == "Welcome12345")
            #expect(try setup.shiny.signIn(user: "ada", password: "Welcome12345"))
            #expect(try setup.shiny.linkedSubject(user: "ada") == nil)
            #expect(try setup.vault.vault.pendingUpgrades().isEmpty)
        }
    }

    @Test func deletingTheProviderAccountUnlinksIt() async throws {
        try await Self.with { setup in
            let id = try #require(try setup.vault.vault.credentials(forService: setup.origin).credentials.first?.id)
            let authority = DeviceSignInAuthority(session: setup.session) { _ in "share" }
            _ = await Self.coordinator(setup).upgradeToSignIn(id, service: setup.origin, authority: authority)
            #expect(try setup.shiny.linkedSubject(user: "ada") != nil)
            let user = try #require(try await setup.harness.provider.user(email: setup.harness.email))
            try await setup.harness.provider.deleteAccount(userId: user.id)
            try await Self.waitFor { setup.shiny.receivedNotifications.contains { $0.type == "account-delete" } }
            #expect(try setup.shiny.linkedSubject(user: "ada") == nil)
        }
    }

    /// The person already authorized shiny's client (in the browser, say): the upgrade still names
    /// the service being switched, with no e-mail question, and asks the person; declining there
    /// changes nothing.
    @Test func theServiceIsNamedEvenWhenConsentExists() async throws {
        try await Self.with { setup in
            let id = try #require(try setup.vault.vault.credentials(forService: setup.origin).credentials.first?.id)
            try await Self.consentEarlier(setup, clientId: "com.example.shiny.web", origin: setup.origin)
            let declined = DeviceSignInAuthority(session: setup.session) { consent in
                #expect(consent.service == setup.origin && consent.serviceName == "Shiny (web)")
                #expect(consent.prompt == nil, "no e-mail question: it was answered before")
                return nil
            }
            let refused = await Self.coordinator(setup).upgradeToSignIn(id, service: setup.origin, authority: declined)
            guard case .failed(_, let code) = refused else {
                Issue.record("expected a refusal, got \(refused)")
                return
            }
            #expect(code == .userCanceled)
            #expect(try setup.vault.vault.credential(id).password == "Welcome12345")

            let shown = TestFlag()
            let accepted = DeviceSignInAuthority(session: setup.session) { consent in
                #expect(consent.service == setup.origin && consent.prompt == nil)
                shown.raise()
                return "share"
            }
            let result = await Self.coordinator(setup).upgradeToSignIn(id, service: setup.origin, authority: accepted)
            #expect(result == .upgraded(credential: id, substituted: false))
            #expect(shown.isRaised, "the service was named although consent existed")
        }
    }

    /// Security review High #1, the exploit as the review ran it. Ada already authorized shiny
    /// (the "bank"). Another service, evil, registered at the same provider as `com.evil.web`, is
    /// being upgraded; it answers `convert-to-sign-in` with `needsSignInAuthorization` for shiny's
    /// client id and a nonce of its choosing — or its manifest names shiny's client id outright.
    /// Either way Keyhaven obtains nothing: no code and no id_token is issued, evil receives none,
    /// the consent step is not even shown, and the record keeps its password.
    @Test(arguments: ["com.evil.web", "com.example.shiny.web"])
    func aServiceCannotObtainAnotherServicesAuthorization(manifestClientId: String) async throws {
        try await Self.with { setup in
            let provider = setup.harness.provider
            let evilTeam = try await provider.createTeam(name: "Evil Inc")
            try await provider.registerClient(
                id: "com.evil.web",
                teamId: evilTeam.id,
                name: "Evil",
                redirectURIs: [EvilService.origin + "/auth/callback"]
            )
            try await Self.consentEarlier(setup, clientId: "com.example.shiny.web", origin: setup.origin)
            let codesBefore = try await Self.codeCount(provider)
            let id = try setup.vault.vault.add(
                CredentialContent(services: [.init(EvilService.origin)], user: "ada", password: "evil-password")
            )
            let evil = EvilService(
                manifest: AccountModificationManifest(
                    endpoint: EvilService.origin + "/account-modification",
                    supportsStrongPasswordChange: false,
                    supportsUpgradeToSignIn: true,
                    signIn: SignInConfiguration(issuer: provider.configuration.issuer, clientId: manifestClientId)
                ),
                asks: SignInRequest(
                    state: "bank-state",
                    nonce: "attacker-chosen-nonce",
                    clientId: "com.example.shiny.web"
                )
            )
            let shown = TestFlag()
            let authority = DeviceSignInAuthority(session: setup.session) { _ in
                shown.raise()
                return "share"
            }
            let coordinator = UpgradeService(
                vault: setup.vault.vault,
                environment: evil,
                host: NoHost(),
                pollInterval: .milliseconds(20),
                deadline: .seconds(30)
            )
            let result = await coordinator.upgradeToSignIn(id, service: EvilService.origin, authority: authority)
            guard case .failed = result else {
                Issue.record("the upgrade was not refused: \(result)")
                return
            }
            let handed = await evil.recorder.authorizations
            #expect(handed.allSatisfy { $0.authorizationCode == nil && $0.identityToken == nil && $0.user == nil })
            #expect(try await Self.codeCount(provider) == codesBefore, "no code was issued")
            #expect(!shown.isRaised, "nothing was shown for a client the service does not own")
            #expect(try setup.vault.vault.credential(id).password == "evil-password")
            #expect(try setup.vault.vault.credential(id).content.signIn == nil)
            #expect(try setup.vault.vault.pendingUpgrades().isEmpty)

            // The provider's device API itself: shiny's client for evil's origin is refused, and
            // the same call for shiny's own origin is what succeeds.
            let device = ProviderDeviceClient()
            await #expect(throws: ProviderDeviceClient.Failure(.rejected, "")) {
                _ = try await device.authorize(
                    setup.session,
                    clientId: "com.example.shiny.web",
                    origin: EvilService.origin,
                    scope: "name email",
                    state: "bank-state",
                    nonce: "attacker-chosen-nonce",
                    email: "share"
                )
            }
            await #expect(throws: ProviderDeviceClient.Failure(.rejected, "")) {
                _ = try await device.consent(
                    setup.session,
                    clientId: "com.example.shiny.web",
                    origin: EvilService.origin,
                    scope: "name email"
                )
            }
            #expect(try await Self.codeCount(provider) == codesBefore)
            let own = try await device.authorize(
                setup.session,
                clientId: "com.example.shiny.web",
                origin: setup.origin,
                scope: "name email",
                state: "s",
                nonce: "n",
                email: nil
            )
            #expect(own.code != nil && own.id_token != nil)
        }
    }

    /// Native authorizations cap `state` and `nonce` at 2048 bytes, as `/auth/authorize` does
    /// (security review, Info).
    @Test func nativeStateAndNonceAreCapped() async throws {
        try await ProviderHarness.with { harness in
            for (state, nonce) in [
                (String(repeating: "s", count: 2049), "n"), ("s", String(repeating: "n", count: 2049)),
            ] {
                let result = try await harness.provider.nativeAuthorizationRequest(
                    clientId: harness.clientId,
                    origin: "https://shiny.example.com",
                    scopes: ["email"],
                    state: state,
                    nonce: nonce
                )
                guard case .failure(let error) = result else {
                    Issue.record("a 2049-byte state or nonce was accepted")
                    continue
                }
                #expect(error.error == "invalid_request")
            }
        }
    }

    /// Ada authorizes `clientId` for the service at `origin` outside any upgrade (the browser flow).
    static func consentEarlier(_ setup: Setup, clientId: String, origin: String) async throws {
        let provider = setup.harness.provider
        let request = try await provider.nativeAuthorizationRequest(
            clientId: clientId,
            origin: origin,
            scopes: ["name", "email"],
            state: nil,
            nonce: nil
        ).get()
        let authentication = try await provider.authenticate(
            email: setup.harness.email,
            password: setup.harness.password,
            code: nil
        )
        _ = try await provider.authorize(request, authentication: authentication, shareEmail: true)
    }

    static func codeCount(_ provider: IdentityProvider) async throws -> Int {
        try await provider.database.read { try await $0.fetchOne(Int.self, "SELECT COUNT(*) AS n FROM codes") } ?? 0
    }

    /// A hostile service, scripted: it publishes `manifest` and answers `convert-to-sign-in` by asking
    /// for an authorization with `asks` (someone else's client id and state), keeping whatever it is
    /// handed and claiming to be done.
    struct EvilService: UpgradeEnvironment, ModificationTransport {
        static let origin = "https://evil.example"
        actor Recorder {
            var authorizations: [SignInAuthorization] = []
            func record(_ authorization: SignInAuthorization) { authorizations.append(authorization) }
        }

        let manifest: AccountModificationManifest
        let asks: SignInRequest
        let recorder = Recorder()

        func manifest(for service: String) async throws -> AccountModificationManifest { manifest }
        func transport(endpoint: String) -> any ModificationTransport { self }

        func send(_ request: ModificationFlow.Request) async throws -> ModificationResponse {
            guard case .convertToSignIn(let body) = request else {
                return ModificationResponse(requestId: "", status: .failed)
            }
            return ModificationResponse(
                requestId: body.requestId,
                status: .needsSignInAuthorization,
                signInRequest: asks
            )
        }

        func status(requestId: String) async throws -> ModificationResponse {
            ModificationResponse(requestId: requestId, status: .pending)
        }

        func cancel(requestId: String) async throws -> ModificationResponse {
            ModificationResponse(requestId: requestId, status: .failed)
        }

        func authorize(requestId: String, _ authorization: SignInAuthorization) async throws -> ModificationResponse {
            await recorder.record(authorization)
            return ModificationResponse(requestId: requestId, status: .completed)
        }
    }

    static func waitFor(_ condition: @Sendable () throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while try !condition() && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
    }
}
