import AccountModification
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import OneTimeCodes
import ShinyService
import Testing

/// The service kit, through shiny's router: manifest, no-UI changes, failures with reasons, step-up,
/// polling, cancel, idempotency, malformed input.
struct ShinyKitTests {
    static func post(
        _ client: some TestClientProtocol,
        _ path: String,
        _ body: some Encodable
    ) async throws
        -> (HTTPResponse.Status, ModificationResponse?)
    {
        let data = try JSONEncoder().encode(body)
        return try await client.execute(
            uri: path,
            method: .post,
            headers: [.contentType: "application/json"],
            body: ByteBuffer(bytes: data)
        ) {
            ($0.status, try? JSONDecoder().decode(ModificationResponse.self, from: Data($0.body.readableBytesView)))
        }
    }

    static func get(_ client: some TestClientProtocol, _ path: String) async throws -> (HTTPResponse.Status, String) {
        try await client.execute(uri: path, method: .get) { ($0.status, String(buffer: $0.body)) }
    }

    static func change(
        _ id: String,
        user: String = "alice",
        password: String = "Password1234",
        new: String = "Strong-Password-42x",
        interaction: Interaction = .none
    ) -> ChangePasswordRequest {
        ChangePasswordRequest(
            requestId: id,
            serviceIdentifier: "shiny.test",
            existingCredential: PasswordCredential(user: user, password: password),
            newPassword: new,
            userInfo: nil,
            interaction: interaction
        )
    }

    @Test func manifestAndNoInteractionChange() async throws {
        let shiny = try Shiny(configuration: .init(scryptLogN: 10))
        try shiny.createAccount(user: "alice", password: "Password1234")
        try await Application(router: shiny.router()).test(.router) { client in
            let (status, manifestText) = try await Self.get(client, "/.well-known/account-modification")
            #expect(status == .ok)
            let manifest = try JSONDecoder().decode(AccountModificationManifest.self, from: Data(manifestText.utf8))
            #expect(manifest.supportsStrongPasswordChange)
            #expect(manifest.endpoint.hasSuffix("/account-modification"))
            #expect(manifest.passwordGenerationRequirements?.contains("minlength: 12") == true)

            let (code, response) = try await Self.post(
                client,
                "/account-modification/change-password",
                Self.change("r-1")
            )
            #expect(code == .ok)
            #expect(response?.status == .completed)
            #expect(try shiny.signIn(user: "alice", password: "Strong-Password-42x"))
            #expect(try !shiny.signIn(user: "alice", password: "Password1234"))
            // The same request again: the recorded answer, nothing applied twice.
            let (_, again) = try await Self.post(client, "/account-modification/change-password", Self.change("r-1"))
            #expect(again?.status == .completed)
            let (_, status1) = try await Self.get(client, "/account-modification/requests/r-1")
            #expect(status1.contains("\"completed\""))
            // Another request with the same id is a conflict.
            let (conflict, _) = try await Self.post(
                client,
                "/account-modification/change-password",
                Self.change("r-1", new: "Other-Password-77a")
            )
            #expect(conflict == .conflict)
        }
    }

    @Test func failuresCarryReasons() async throws {
        let shiny = try Shiny(configuration: .init(scryptLogN: 10))
        try shiny.createAccount(user: "alice", password: "Password1234")
        try await Application(router: shiny.router()).test(.router) { client in
            let (_, wrong) = try await Self.post(
                client,
                "/account-modification/change-password",
                Self.change("r-2", password: "nope")
            )
            #expect(wrong?.status == .failed)
            #expect(wrong?.error?.code == .failed)
            #expect(wrong?.error?.localizedFailureReason == "The current user name or password is wrong.")
            let (_, weak) = try await Self.post(
                client,
                "/account-modification/change-password",
                Self.change("r-3", new: "short")
            )
            #expect(weak?.status == .failed)
            #expect(weak?.error?.localizedFailureReason?.contains("shiny cannot use this password") == true)
            #expect(try shiny.signIn(user: "alice", password: "Password1234"))
        }
    }

    @Test func malformedCallsAreClientErrors() async throws {
        let shiny = try Shiny(configuration: .init(scryptLogN: 10))
        try await Application(router: shiny.router()).test(.router) { client in
            // The protocol's error body, byte for byte (the kit's own encoder: sorted keys).
            let garbage = try await client.execute(
                uri: "/account-modification/change-password",
                method: .post,
                body: ByteBuffer(string: "{not json")
            ) {
                ($0.status, $0.headers[.contentType] ?? "", String(buffer: $0.body))
            }
            #expect(garbage.0 == .badRequest && garbage.1.hasPrefix("application/json"))
            #expect(garbage.2 == #"{"error":"invalid_request","message":"the body is not a change-password request"}"#)
            let (badID, _) = try await Self.post(
                client,
                "/account-modification/change-password",
                Self.change("bad id with spaces")
            )
            #expect(badID == .badRequest)
            let unknown = try await Self.get(client, "/account-modification/requests/nope")
            #expect(unknown.0 == .notFound)
            #expect(unknown.1 == #"{"error":"unknown_request","message":"no request with this id"}"#)
        }
    }

    @Test func totpAccountsStepUpOnThePage() async throws {
        let shiny = try Shiny(configuration: .init(scryptLogN: 10))
        let secret = try #require(try shiny.createAccount(user: "bob", password: "Welcome12345", totp: true))
        try await Application(router: shiny.router()).test(.router) { client in
            let (_, first) = try await Self.post(
                client,
                "/account-modification/change-password",
                Self.change("r-4", user: "bob", password: "Welcome12345")
            )
            #expect(first?.status == .userInteractionRequired)
            let (_, second) = try await Self.post(
                client,
                "/account-modification/change-password",
                Self.change("r-4", user: "bob", password: "Welcome12345", interaction: .allowed)
            )
            #expect(second?.status == .presentInterface)
            let url = try #require(second?.interfaceURL)
            #expect(url.hasSuffix("/account-modification/step-up/r-4"))
            let (_, pending) = try await Self.get(client, "/account-modification/requests/r-4")
            #expect(pending.contains("presentInterface"))

            let (pageStatus, page) = try await Self.get(client, "/account-modification/step-up/r-4")
            #expect(pageStatus == .ok && page.contains("id=\"code\""))
            let wrong = try await ShinyPagesTests.post(
                client,
                "/account-modification/step-up/r-4",
                [("code", "000000")]
            )
            .body
            #expect(wrong.contains("That code is not right"))
            let code = try TOTP(secret: secret).code(at: Date())
            let done = try await ShinyPagesTests.post(client, "/account-modification/step-up/r-4", [("code", code)])
                .body
            #expect(done.contains("Your password was changed"))
            let (_, final) = try await Self.get(client, "/account-modification/requests/r-4")
            #expect(final.contains("\"completed\""))
            #expect(try shiny.signIn(user: "bob", password: "Strong-Password-42x", code: code))
        }
    }

    @Test func cancelReachesTheExtension() async throws {
        let shiny = try Shiny(configuration: .init(scryptLogN: 10))
        try shiny.createAccount(user: "bob", password: "Welcome12345", totp: true)
        try await Application(router: shiny.router()).test(.router) { client in
            _ = try await Self.post(
                client,
                "/account-modification/change-password",
                Self.change("r-5", user: "bob", password: "Welcome12345")
            )
            _ = try await Self.post(
                client,
                "/account-modification/change-password",
                Self.change("r-5", user: "bob", password: "Welcome12345", interaction: .allowed)
            )
            let (_, canceled) = try await Self.post(
                client,
                "/account-modification/requests/r-5/cancel",
                [String: String]()
            )
            #expect(canceled?.status == .failed)
            #expect(canceled?.error?.code == .userCanceled)
            #expect(await shiny.cancelledRequests == ["r-5"])
            let (gone, _) = try await Self.get(client, "/account-modification/step-up/r-5")
            #expect(gone == .notFound)
            // The password is unchanged (and still needs the code).
            #expect(try shiny.signIn(user: "bob", password: "Welcome12345", code: nil) == false)
        }
    }

    @Test func answersSurviveARestartThroughTheLedger() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("shiny-\(UUID().uuidString).sqlite")
            .path
        let first = try Shiny(configuration: .init(databasePath: path, scryptLogN: 10))
        try first.createAccount(user: "alice", password: "Password1234")
        try await Application(router: first.router()).test(.router) { client in
            let (_, response) = try await Self.post(client, "/account-modification/change-password", Self.change("r-9"))
            #expect(response?.status == .completed)
        }
        // A new process on the same database: the kit's memory is gone, the ledger is not.
        let second = try Shiny(configuration: .init(databasePath: path, scryptLogN: 10))
        try await Application(router: second.router()).test(.router) { client in
            let (status, text) = try await Self.get(client, "/account-modification/requests/r-9")
            #expect(status == .ok)
            #expect(text.contains("\"completed\""))
            let (unknown, _) = try await Self.get(client, "/account-modification/requests/never-sent")
            #expect(unknown == .notFound)
        }
        #expect(try second.signIn(user: "alice", password: "Strong-Password-42x"))
    }

    @Test func changePasswordWellKnownRedirects() async throws {
        let shiny = try Shiny(configuration: .init(scryptLogN: 10))
        try await Application(router: shiny.router()).test(.router) { client in
            try await client.execute(uri: "/.well-known/change-password", method: .get) { response in
                #expect(response.status == .seeOther)
                #expect(response.headers[.location] == "/account/password")
            }
        }
    }
}
