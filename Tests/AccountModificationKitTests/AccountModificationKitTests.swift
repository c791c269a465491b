import AccountModification
import AccountModificationKit
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Synchronization
import Testing

/// The kit on its own, with a small extension of the test's (shiny's use of it is in
/// ShinyServiceTests): the published manifest, request validation, idempotency by id, answers that
/// wait, cancellation, and answers that outlive a restart through the ledger.
struct AccountModificationKitTests {
    /// Accounts in memory; `hold` makes change-password requests wait until cancelled, `finish: false`
    /// returns without finishing them.
    final class Accounts: AccountModificationExtension {
        let passwords = Mutex(["alice": "Password1234"])
        let changes = Mutex(0)
        let cancelled = Mutex<[String]>([])
        let hold: Bool
        let finish: Bool

        init(hold: Bool = false, finish: Bool = true) {
            self.hold = hold
            self.finish = finish
        }

        func changePasswordWithoutUserInteraction(_ context: ModificationContext) async {
            changes.withLock { $0 += 1 }
            if hold {
                // Waits as a person would, until the request is cancelled (or 10 s pass).
                let deadline = ContinuousClock.now + .seconds(10)
                while await context.isOpen, ContinuousClock.now < deadline {
                    try? await Task.sleep(for: .milliseconds(10))
                }
                return
            }
            if !finish { return }
            guard let credential = context.request.existingCredential,
                passwords.withLock({ $0[credential.user] == credential.password }),
                let new = context.request.newPassword
            else {
                return await context.cancelRequest(
                    withError: .init(code: .failed, localizedFailureReason: "Wrong password")
                )
            }
            passwords.withLock { $0[credential.user] = new }
            await context.completeChangePasswordRequest(updatedCredential: nil)
        }

        func cancelRequest(_ context: ModificationContext) async {
            cancelled.withLock { $0.append(context.request.requestId) }
        }
    }

    /// Answers kept as a service's database would keep them.
    final class MemoryLedger: ModificationLedger {
        let entries = Mutex<[String: ModificationLedgerEntry]>([:])
        func save(_ entry: ModificationLedgerEntry) { entries.withLock { $0[entry.requestId] = entry } }
        func load(_ requestId: String) -> ModificationLedgerEntry? { entries.withLock { $0[requestId] } }
    }

    /// The service's public origin, from its configuration (never from request headers).
    static let origin = "https://service.example"

    static let manifest = AccountModificationManifest(
        endpoint: "/account-modification",
        supportsStrongPasswordChange: true,
        supportsUpgradeToSignIn: false,
        passwordGenerationRequirements: "minlength: 12;"
    )

    static func change(
        _ id: String,
        password: String = "Password1234",
        new: String = "Strong-Password-42x"
    )
        -> ChangePasswordRequest
    {
        ChangePasswordRequest(
            requestId: id,
            serviceIdentifier: "example.test",
            existingCredential: PasswordCredential(user: "alice", password: password),
            newPassword: new,
            userInfo: nil,
            interaction: .none
        )
    }

    static func app(_ kit: AccountModificationKit<some AccountModificationExtension>) -> some ApplicationProtocol {
        let router = Router()
        kit.addRoutes(to: router)
        return Application(router: router)
    }

    static func call(
        _ client: some TestClientProtocol,
        _ method: HTTPRequest.Method,
        _ path: String,
        _ body: (some Encodable)? = String?.none,
        headers: HTTPFields = [:]
    ) async throws -> (HTTPResponse.Status, String) {
        var headers = headers
        headers[.contentType] = "application/json"
        let buffer = try body.map { ByteBuffer(bytes: try JSONEncoder().encode($0)) }
        return try await client.execute(uri: path, method: method, headers: headers, body: buffer) {
            ($0.status, String(buffer: $0.body))
        }
    }

    static func response(_ text: String) throws -> ModificationResponse {
        try JSONDecoder().decode(ModificationResponse.self, from: Data(text.utf8))
    }

    @Test func theManifestNamesItsEndpointOnTheConfiguredOrigin() async throws {
        let published = Mutex(Self.manifest)
        let kit = AccountModificationKit(
            extension: Accounts(),
            manifest: { published.withLock { $0 } },
            origin: { Self.origin }
        )
        try await Self.app(kit).test(.router) { client in
            let (status, text) = try await Self.call(
                client,
                .get,
                "/.well-known/account-modification",
                headers: [HTTPField.Name("X-Forwarded-Proto")!: "https"]
            )
            #expect(status == .ok)
            let manifest = try JSONDecoder().decode(AccountModificationManifest.self, from: Data(text.utf8))
            // The configured origin, whatever the request's Host or X-Forwarded-* say (review L18).
            #expect(manifest.endpoint == "https://service.example/account-modification")
            #expect(manifest.passwordGenerationRequirements == "minlength: 12;")
            #expect(!manifest.supportsUpgradeToSignIn)

            // Read on each request: a service that turns sign-in upgrades on publishes it at once.
            published.withLock { $0.supportsUpgradeToSignIn = true }
            let (_, again) = try await Self.call(client, .get, "/.well-known/account-modification")
            #expect(
                try JSONDecoder().decode(AccountModificationManifest.self, from: Data(again.utf8))
                    .supportsUpgradeToSignIn
            )
        }
    }

    @Test func malformedRequestsAreRefusedBeforeTheExtensionRuns() async throws {
        let accounts = Accounts()
        try await Self.app(AccountModificationKit(extension: accounts, manifest: Self.manifest, origin: Self.origin))
            .test(.router) {
                client in
                for bad in [
                    Self.change("a/b"), Self.change(String(repeating: "x", count: 129)), Self.change(""),
                    Self.change("r-1", new: ""), Self.change("r-1", new: String(repeating: "p", count: 1025)),
                ] {
                    let (status, text) = try await Self.call(
                        client,
                        .post,
                        "/account-modification/change-password",
                        bad
                    )
                    #expect(status == .badRequest, "\(bad.requestId.prefix(10)): \(text)")
                    let body = try JSONDecoder().decode(ProtocolErrorBody.self, from: Data(text.utf8))
                    #expect(body.error == "invalid_request")
                }
                let (status, _) = try await Self.call(client, .post, "/account-modification/change-password", ["x": 1])
                #expect(status == .badRequest)
                let (unknown, text) = try await Self.call(client, .get, "/account-modification/requests/nope")
                #expect(unknown == .notFound && text.contains("unknown_request"))
            }
        #expect(accounts.changes.withLock { $0 } == 0)
        #expect(accounts.passwords.withLock { $0["alice"] } == "Password1234")
    }

    @Test func requestsAreIdempotentByIdAndConflictsAreRefused() async throws {
        let accounts = Accounts()
        try await Self.app(AccountModificationKit(extension: accounts, manifest: Self.manifest, origin: Self.origin))
            .test(.router) {
                client in
                let (status, first) = try await Self.call(
                    client,
                    .post,
                    "/account-modification/change-password",
                    Self.change("r-1")
                )
                #expect(status == .ok)
                #expect(try Self.response(first).status == .completed)
                // A retry (the client lost the answer) gets the recorded answer; nothing runs twice.
                let (_, retry) = try await Self.call(
                    client,
                    .post,
                    "/account-modification/change-password",
                    Self.change("r-1")
                )
                #expect(try Self.response(retry) == Self.response(first))
                #expect(accounts.changes.withLock { $0 } == 1)
                let (polled, answer) = try await Self.call(client, .get, "/account-modification/requests/r-1")
                #expect(polled == .ok)
                #expect(try Self.response(answer).status == .completed)
                // Another request under the same id.
                let (conflict, _) = try await Self.call(
                    client,
                    .post,
                    "/account-modification/change-password",
                    Self.change("r-1", new: "Another-Password-77")
                )
                #expect(conflict == .conflict)
                #expect(accounts.passwords.withLock { $0["alice"] } == "Strong-Password-42x")
                // A refusal carries the extension's reason.
                let (_, wrong) = try await Self.call(
                    client,
                    .post,
                    "/account-modification/change-password",
                    Self.change("r-2", password: "guess")
                )
                let refused = try Self.response(wrong)
                #expect(refused.status == .failed && refused.error?.localizedFailureReason == "Wrong password")
            }
    }

    @Test func aSlowExtensionAnswersPendingAndCancelReachesIt() async throws {
        let accounts = Accounts(hold: true)
        let kit = AccountModificationKit(
            extension: accounts,
            manifest: Self.manifest,
            origin: Self.origin,
            answerTimeout: .milliseconds(100)
        )
        try await Self.app(kit).test(.router) { client in
            let (_, started) = try await Self.call(
                client,
                .post,
                "/account-modification/change-password",
                Self.change("r-1")
            )
            #expect(try Self.response(started).status == .pending)
            #expect(await kit.context(for: "r-1")?.isOpen == true)
            let (_, cancelled) = try await Self.call(
                client,
                .post,
                "/account-modification/requests/r-1/cancel",
                [String: String]()
            )
            let answer = try Self.response(cancelled)
            #expect(answer.status == .failed && answer.error?.code == .userCanceled)
            #expect(accounts.cancelled.withLock { $0 } == ["r-1"])
            // Cancelling again changes nothing and does not call the extension again.
            let (_, again) = try await Self.call(
                client,
                .post,
                "/account-modification/requests/r-1/cancel",
                [String: String]()
            )
            #expect(try Self.response(again) == answer)
            #expect(accounts.cancelled.withLock { $0 } == ["r-1"])
        }
    }

    @Test func anExtensionThatNeverFinishesFailsTheRequest() async throws {
        let kit = AccountModificationKit(
            extension: Accounts(finish: false),
            manifest: Self.manifest,
            origin: Self.origin
        )
        try await Self.app(kit).test(.router) { client in
            let (_, text) = try await Self.call(
                client,
                .post,
                "/account-modification/change-password",
                Self.change("r-1")
            )
            let answer = try Self.response(text)
            #expect(answer.status == .failed && answer.error?.code == .failed)
            // The default for a kind the extension does not implement: a failure with a reason.
            let convert = ConvertToSignInRequest(
                requestId: "r-2",
                serviceIdentifier: "example.test",
                existingCredential: PasswordCredential(user: "alice", password: "Password1234"),
                userInfo: nil,
                interaction: .none
            )
            let (_, converted) = try await Self.call(client, .post, "/account-modification/convert-to-sign-in", convert)
            let refusal = try Self.response(converted)
            #expect(refusal.status == .failed)
            #expect(refusal.error?.localizedFailureReason?.contains("sign-in upgrades") == true)
        }
    }

    @Test func theLedgerAnswersForRequestsAServiceRestartForgot() async throws {
        let ledger = MemoryLedger()
        try await Self.app(
            AccountModificationKit(extension: Accounts(), manifest: Self.manifest, origin: Self.origin, ledger: ledger)
        )
        .test(.router) { client in
            _ = try await Self.call(client, .post, "/account-modification/change-password", Self.change("done"))
        }
        #expect(ledger.load("done")?.response.status == .completed)
        // One left open when the service stopped (saved as pending before the extension ran).
        ledger.save(
            ModificationLedgerEntry(response: ModificationResponse(requestId: "open", status: .pending), request: nil)
        )

        // The service restarts: a new kit, the same ledger.
        try await Self.app(
            AccountModificationKit(extension: Accounts(), manifest: Self.manifest, origin: Self.origin, ledger: ledger)
        )
        .test(.router) { client in
            let (_, done) = try await Self.call(client, .get, "/account-modification/requests/done")
            #expect(try Self.response(done).status == .completed)
            let (_, open) = try await Self.call(client, .get, "/account-modification/requests/open")
            let forgotten = try Self.response(open)
            #expect(
                forgotten.status == .failed
                    && forgotten.error?.localizedFailureReason?.contains("restarted") == true
            )
            let (unknown, _) = try await Self.call(client, .get, "/account-modification/requests/never")
            #expect(unknown == .notFound)
        }
    }
}
