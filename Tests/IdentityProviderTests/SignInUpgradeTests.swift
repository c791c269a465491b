import AccountModification
import Foundation
import IdentityProvider
import IdentityProviderServer
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
            let authority = DeviceSignInAuthority(session: setup.session) { prompt in
                #expect(prompt.serviceName == "Shiny (web)" && prompt.asksEmail)
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

    static func waitFor(_ condition: @Sendable () throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while try !condition() && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
    }
}
