import AccountModification
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import KeyhavenApp
import KeyhavenTesting
import NIOCore
import OneTimeCodes
import ShinyService
import Testing
import UpgradeHTTP
import Vault

/// Keyhaven's side against a live shiny over HTTP: the journal, the vault, step-up, cancel, and every
/// kind of misbehaving service.
struct UpgradeServiceTests {
    /// Runs `body` with shiny listening on a free loopback port.
    static func withShiny(
        _ configuration: ShinyConfiguration = .init(scryptLogN: 10),
        _ body: @escaping @Sendable (Shiny, String) async throws -> Void
    ) async throws {
        let shiny = try Shiny(configuration: configuration)
        let (origin, server) = try await shiny.start()
        defer { server.cancel() }
        try await body(shiny, origin)
    }

    /// A host that answers step-up pages with a TOTP code, or presses Cancel, or does nothing.
    struct ScriptedHost: ModificationHost {
        enum Behaviour: Sendable {
            case enterCode(String)
            case pressCancelOnPage
            /// The person sees the page and presses Ctrl-C in Keyhaven.
            case interrupt(TestFlag)
            case ignore
        }
        let behaviour: Behaviour

        func presentInterface(_ url: String) async {
            switch behaviour {
            case .enterCode(let secret):
                let code = try! TOTP(secret: secret).code(at: Date())
                _ = try? await PageForm.submit(url, [("code", code)])
            case .pressCancelOnPage:
                _ = try? await PageForm.submit(url + "/cancel", [], page: url)
            case .interrupt(let flag):
                flag.raise()
            case .ignore:
                break
            }
        }

        func obtainSignInAuthorization(_ request: SignInRequest) async -> SignInAuthorization {
            SignInAuthorization(error: "unsupported")
        }
    }

    static func coordinator(
        _ vault: Vault,
        host: ScriptedHost.Behaviour = .ignore,
        // Generous: the whole suite shares two cores, and these limits only matter when a test fails.
        timeout: Duration = .seconds(30),
        deadline: Duration = .seconds(60)
    ) -> UpgradeService {
        UpgradeService(
            vault: vault,
            environment: HTTPUpgradeEnvironment(requestTimeout: timeout),
            host: ScriptedHost(behaviour: host),
            pollInterval: .milliseconds(50),
            deadline: deadline
        )
    }

    @Test func noInteractionUpgradeUpdatesTheVault() async throws {
        try await Self.withShiny { shiny, origin in
            try shiny.createAccount(user: "alice", password: "Password1234")
            let test = try TestVault()
            let id = try test.vault.add(
                CredentialContent(services: [.init("\(origin)/signin")], user: "alice", password: "Password1234")
            )
            let result = await Self.coordinator(test.vault).upgradeToStrongPassword(id, service: origin)
            #expect(result == .upgraded(credential: id, substituted: false))
            let credential = try test.vault.credential(id)
            let password = try #require(credential.password)
            #expect(password != "Password1234")
            #expect(try shiny.signIn(user: "alice", password: password))
            #expect(try test.vault.history(id).map(\.password) == ["Password1234"])
            #expect(try test.vault.pendingUpgrades().isEmpty)
        }
    }

    @Test func stepUpWithTheCode() async throws {
        try await Self.withShiny { shiny, origin in
            let secret = try #require(try shiny.createAccount(user: "bob", password: "Welcome12345", totp: true))
            let test = try TestVault()
            let id = try test.vault.add(
                CredentialContent(services: [.init(origin)], user: "bob", password: "Welcome12345")
            )
            let result = await Self.coordinator(test.vault, host: .enterCode(secret)).upgradeToStrongPassword(
                id,
                service: origin
            )
            #expect(result == .upgraded(credential: id, substituted: false))
            let password = try #require(try test.vault.credential(id).password)
            #expect(try shiny.signIn(user: "bob", password: password, code: TOTP(secret: secret).code(at: Date())))
        }
    }

    @Test func cancelDuringStepUpReachesTheServiceAsCancelRequest() async throws {
        try await Self.withShiny { shiny, origin in
            try shiny.createAccount(user: "bob", password: "Welcome12345", totp: true)
            let test = try TestVault()
            let id = try test.vault.add(
                CredentialContent(services: [.init(origin)], user: "bob", password: "Welcome12345")
            )
            let pressed = TestFlag()
            let coordinator = Self.coordinator(test.vault, host: .interrupt(pressed))
            let result = await coordinator.upgradeToStrongPassword(id, service: origin) { pressed.isRaised }
            #expect(result == .failed(reason: "cancelled", code: .userCanceled))
            #expect(await shiny.cancelledRequests.count == 1)
            #expect(try test.vault.credential(id).password == "Welcome12345")
            #expect(try test.vault.pendingUpgrades().isEmpty)
        }
    }

    @Test func cancelOnTheServicesPageEndsAsUserCanceled() async throws {
        try await Self.withShiny { shiny, origin in
            try shiny.createAccount(user: "bob", password: "Welcome12345", totp: true)
            let test = try TestVault()
            let id = try test.vault.add(
                CredentialContent(services: [.init(origin)], user: "bob", password: "Welcome12345")
            )
            let result = await Self.coordinator(test.vault, host: .pressCancelOnPage).upgradeToStrongPassword(
                id,
                service: origin
            )
            guard case .failed(_, let code) = result else {
                Issue.record("expected a failure, got \(result)")
                return
            }
            #expect(code == .userCanceled)
            #expect(try test.vault.credential(id).password == "Welcome12345")
        }
    }

    @Test func aSubstitutedPasswordIsTheOneStored() async throws {
        var configuration = ShinyConfiguration(scryptLogN: 10)
        configuration.substitutePassword = { $0 + "-shiny" }
        try await Self.withShiny(configuration) { shiny, origin in
            try shiny.createAccount(user: "alice", password: "Password1234")
            let test = try TestVault()
            let id = try test.vault.add(
                CredentialContent(services: [.init(origin)], user: "alice", password: "Password1234")
            )
            let result = await Self.coordinator(test.vault).upgradeToStrongPassword(id, service: origin)
            #expect(result == .upgraded(credential: id, substituted: true))
            let password = try #require(try test.vault.credential(id).password)
            #expect(password.hasSuffix("-shiny"))
            #expect(try shiny.signIn(user: "alice", password: password))
        }
    }

    @Test func aFailureWithAReasonLeavesTheVaultUnchanged() async throws {
        try await Self.withShiny { shiny, origin in
            try shiny.createAccount(user: "alice", password: "Password1234")
            let test = try TestVault()
            // The vault's password is out of date: shiny refuses, with its reason.
            let id = try test.vault.add(
                CredentialContent(services: [.init(origin)], user: "alice", password: "Outdated-999")
            )
            let result = await Self.coordinator(test.vault).upgradeToStrongPassword(id, service: origin)
            #expect(result == .failed(reason: "The current user name or password is wrong.", code: .failed))
            #expect(try test.vault.credential(id).password == "Outdated-999")
            #expect(try test.vault.history(id).isEmpty)
            #expect(try test.vault.pendingUpgrades().isEmpty)
        }
    }

    @Test func aServiceThatIsDownChangesNothing() async throws {
        let test = try TestVault()
        let id = try test.vault.add(
            CredentialContent(services: [.init("http://127.0.0.1:1")], user: "alice", password: "pw")
        )
        let result = await Self.coordinator(test.vault).upgradeToStrongPassword(id, service: "http://127.0.0.1:1")
        guard case .failed(let reason, _) = result else {
            Issue.record("expected a failure, got \(result)")
            return
        }
        #expect(reason.contains("cannot reach"))
        #expect(try test.vault.credential(id).password == "pw")
        #expect(try test.vault.pendingUpgrades().isEmpty)
    }

    /// A service with a manifest whose protocol endpoints are slow or answer garbage.
    static func withBrokenService(
        _ behaviour: String,
        _ body: @escaping @Sendable (String) async throws -> Void
    ) async throws {
        let router = Router()
        router.get("/.well-known/account-modification") { _, _ in
            Response(
                status: .ok,
                headers: [.contentType: "application/json"],
                body: .init(
                    byteBuffer: ByteBuffer(
                        string:
                            #"{"endpoint":"/account-modification","supportsStrongPasswordChange":true,"supportsUpgradeToSignIn":false}"#
                    )
                )
            )
        }
        router.post("/account-modification/change-password") { _, _ -> Response in
            if behaviour == "slow" { try await Task.sleep(for: .seconds(5)) }
            return Response(
                status: .ok,
                headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: "<html>surprise</html>"))
            )
        }
        router.get("/account-modification/requests/:id") { _, _ -> Response in
            if behaviour == "slow" { try await Task.sleep(for: .seconds(5)) }
            return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: "garbage")))
        }
        router.post("/account-modification/requests/:id/cancel") { _, _ -> Response in
            if behaviour == "slow" { try await Task.sleep(for: .seconds(5)) }
            return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: "garbage")))
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { client in
            try await body("http://127.0.0.1:\(client.port!)")
        }
    }

    @Test(arguments: ["slow", "garbage"])
    func slowOrGarbageServicesChangeNothingAndStayJournaled(_ behaviour: String) async throws {
        try await Self.withBrokenService(behaviour) { origin in
            let test = try TestVault()
            let id = try test.vault.add(
                CredentialContent(services: [.init(origin)], user: "alice", password: "pw-before")
            )
            let result = await Self.coordinator(test.vault, timeout: .seconds(1)).upgradeToStrongPassword(
                id,
                service: origin
            )
            guard case .pending(let reason) = result else {
                Issue.record("expected an unconfirmed upgrade, got \(result)")
                return
            }
            #expect(
                reason.contains(
                    behaviour == "slow" ? "did not answer in time" : "not the account-modification protocol"
                )
            )
            // The account keeps its password; the generated one waits in the journal, not lost.
            #expect(try test.vault.credential(id).password == "pw-before")
            let pending = try test.vault.pendingUpgrades()
            #expect(pending.count == 1)
            #expect(pending.first?.oldPassword == "pw-before")
            #expect(pending.first?.newPassword != nil)
        }
    }

    @Test func reconciliationAppliesWhatTheServiceDid() async throws {
        try await Self.withShiny { shiny, origin in
            try shiny.createAccount(user: "alice", password: "Password1234")
            try shiny.createAccount(user: "carol", password: "Password5678")
            let test = try TestVault()
            let alice = try test.vault.add(
                CredentialContent(services: [.init(origin)], user: "alice", password: "Password1234")
            )
            let carol = try test.vault.add(
                CredentialContent(services: [.init(origin)], user: "carol", password: "Password5678")
            )
            // alice: the service applied the change but Keyhaven died before hearing it.
            let applied = UpgradeJournalEntry(
                credentialID: alice,
                kind: .strongPassword,
                service: origin,
                endpoint: "\(origin)/account-modification",
                requestId: "applied-1",
                oldPassword: "Password1234",
                newPassword: "Applied-Password-1x",
                started: Date()
            )
            try test.vault.beginUpgrade(applied)
            let transport = HTTPModificationTransport(endpoint: applied.endpoint)
            let done = try await transport.send(
                .changePassword(
                    ChangePasswordRequest(
                        requestId: "applied-1",
                        serviceIdentifier: origin,
                        existingCredential: .init(user: "alice", password: "Password1234"),
                        newPassword: "Applied-Password-1x",
                        userInfo: nil,
                        interaction: .none
                    )
                )
            )
            #expect(done.status == .completed)
            // carol: Keyhaven died before the request left.
            let unsent = UpgradeJournalEntry(
                credentialID: carol,
                kind: .strongPassword,
                service: origin,
                endpoint: "\(origin)/account-modification",
                requestId: "unsent-1",
                oldPassword: "Password5678",
                newPassword: "Never-Sent-Password-2y",
                started: Date()
            )
            try test.vault.beginUpgrade(unsent)

            let results = try await Self.coordinator(test.vault).reconcile()
            #expect(results.count == 2)
            // The service answers 404 for the request it never received: the transport's
            // `.unknownRequest` code, settled as a failure (not left pending).
            let carolResult = try #require(results.first { $0.entry.requestId == "unsent-1" }).result
            guard case .failed(let reason, _) = carolResult else {
                Issue.record("expected the unknown request to fail, got \(carolResult)")
                return
            }
            #expect(reason.contains("no record of the request"))
            #expect(try test.vault.credential(alice).password == "Applied-Password-1x")
            #expect(try test.vault.credential(carol).password == "Password5678")
            #expect(try shiny.signIn(user: "alice", password: "Applied-Password-1x"))
            #expect(try shiny.signIn(user: "carol", password: "Password5678"))
            #expect(try test.vault.pendingUpgrades().isEmpty)
        }
    }

    @Test func inAppRequestsUseTheSessionNotAPassword() async throws {
        try await Self.withShiny { shiny, origin in
            try shiny.createAccount(user: "dave", password: "Password1234")
            // The app signed in to shiny and holds a session token.
            let token = try #require(try shiny.startSession(user: "dave"))
            let test = try TestVault()
            // Review #16: dave's credential for another port of the same host is not this service's
            // and must not be the one updated.
            let elsewhere = try test.vault.add(
                CredentialContent(services: [.init("http://127.0.0.1:1/login")], user: "dave", password: "Password1234")
            )
            let server = LocalAPIServer(token: "secret-token") { request in
                await Self.coordinator(test.vault).inAppRequest(request)
            }
            try await Application(router: server.router()).test(.router) { client in
                let body = try JSONEncoder().encode(
                    InAppRequest(
                        type: .changePassword,
                        user: "dave",
                        serviceIdentifier: origin,
                        userInfo: ["sessionToken": token]
                    )
                )
                try await client.execute(uri: "/v1/requests", method: .post, body: ByteBuffer(bytes: body)) {
                    response in
                    #expect(response.status == .unauthorized)
                    let error = try JSONDecoder().decode(
                        ProtocolErrorBody.self,
                        from: Data(response.body.readableBytesView)
                    )
                    #expect(error.error == "unauthorized")
                }
                try await client.execute(
                    uri: "/v1/requests",
                    method: .post,
                    headers: [.authorization: "Bearer secret-token"],
                    body: ByteBuffer(bytes: body)
                ) { response in
                    #expect(response.status == .ok)
                    let result = try JSONDecoder().decode(InAppResult.self, from: Data(response.body.readableBytesView))
                    #expect(result.status == .completed)
                    #expect(result.credentialUpdated)
                }
            }
            // The vault did not know dave: it does now, with the password shiny accepted.
            let saved = try #require(
                try test.vault.credentials(forService: origin).credentials.first { $0.user == "dave" }
            )
            #expect(try shiny.signIn(user: "dave", password: saved.password ?? ""))
            #expect(saved.id != elsewhere)
            #expect(try test.vault.credential(elsewhere).password == "Password1234")
        }
    }
}
