import AccountModification
import AccountModificationKit
import AsyncHTTPClient
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import NIOHTTP1
import ShinyService
import Synchronization
import Testing

/// Security review L18 (issue 13 #12): the kit's manifest and interface URLs come from the service's
/// configured origin, never from what a client puts in `Host` or `X-Forwarded-*`; and making room in
/// the kit's request book drops only finished requests, oldest first.
struct KitOriginAndEvictionTests {
    static let client = HTTPClient(
        eventLoopGroup: HTTPClient.defaultEventLoopGroup,
        configuration: .init(redirectConfiguration: .disallow)
    )

    /// A request with the headers a poisoning client (or a proxy passing them on) would send.
    static func send(
        _ url: String,
        method: HTTPMethod = .GET,
        json: (some Encodable)? = String?.none,
        headers: [(String, String)]
    ) async throws -> (status: UInt, body: String) {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.replaceOrAdd(name: name, value: value) }
        if let json {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try JSONEncoder().encode(json)))
        }
        let response = try await client.execute(request, timeout: .seconds(30))
        return (response.status.code, String(buffer: try await response.body.collect(upTo: 1 << 20)))
    }

    static let forged = [
        ("Host", "evil.example"),
        ("X-Forwarded-Host", "evil.example"),
        ("X-Forwarded-Proto", "http"),
        ("Forwarded", "host=evil.example;proto=http"),
    ]

    @Test func forgedHostHeadersDoNotMoveTheManifestOrTheStepUpPage() async throws {
        let shiny = try Shiny(configuration: .init(publicURL: "https://shiny.example", scryptLogN: 10))
        try shiny.createAccount(user: "bob", password: "Welcome12345", totp: true)
        let (origin, server) = try await shiny.start()
        defer { server.cancel() }

        let manifest = try await Self.send(origin + "/.well-known/account-modification", headers: Self.forged)
        #expect(manifest.status == 200)
        let published = try JSONDecoder().decode(AccountModificationManifest.self, from: Data(manifest.body.utf8))
        #expect(published.endpoint == "https://shiny.example/account-modification")
        #expect(!manifest.body.contains("evil.example"))

        // The step-up page's URL, which Keyhaven opens in the person's browser, stays on shiny too.
        let request = ChangePasswordRequest(
            requestId: "forged-host-1",
            serviceIdentifier: "shiny.example",
            existingCredential: PasswordCredential(user: "bob", password: "Welcome12345"),
            newPassword: "Strong-Password-42x",
            userInfo: nil,
            interaction: .allowed
        )
        let answer = try await Self.send(
            origin + "/account-modification/change-password",
            method: .POST,
            json: request,
            headers: Self.forged
        )
        let response = try JSONDecoder().decode(ModificationResponse.self, from: Data(answer.body.utf8))
        #expect(response.status == .presentInterface)
        #expect(response.interfaceURL == "https://shiny.example/account-modification/step-up/forged-host-1")
    }

    @Test func withoutAPublicURLTheManifestNamesWhereShinyListens() async throws {
        let shiny = try Shiny(configuration: .init(scryptLogN: 10))
        let (origin, server) = try await shiny.start()
        defer { server.cancel() }
        let manifest = try await Self.send(origin + "/.well-known/account-modification", headers: Self.forged)
        let published = try JSONDecoder().decode(AccountModificationManifest.self, from: Data(manifest.body.utf8))
        #expect(published.endpoint == origin + "/account-modification")
    }

    // MARK: Eviction

    /// An extension that finishes requests for `done` at once and leaves every other one open.
    struct HoldingExtension: AccountModificationExtension {
        func changePasswordWithoutUserInteraction(_ context: ModificationContext) async {
            if context.request.existingCredential?.user == "done" {
                await context.completeChangePasswordRequest(updatedCredential: nil)
            } else {
                await context.cancelRequest(withError: .init(code: .userInteractionRequired))
            }
        }

        func prepareInterfaceToChangePassword(_ context: ModificationContext) async -> String? {
            "/confirm/\(context.request.requestId)"  // open until the person (never) confirms
        }
    }

    static func change(_ id: String, user: String, interaction: Interaction = .allowed) -> ChangePasswordRequest {
        ChangePasswordRequest(
            requestId: id,
            serviceIdentifier: "kit.test",
            existingCredential: PasswordCredential(user: user, password: "old"),
            newPassword: "new-password",
            userInfo: nil,
            interaction: interaction
        )
    }

    static func post(
        _ client: some TestClientProtocol,
        _ path: String,
        _ body: some Encodable
    ) async throws -> (HTTPResponse.Status, ModificationResponse?, String) {
        try await client.execute(
            uri: path,
            method: .post,
            headers: [.contentType: "application/json"],
            body: ByteBuffer(bytes: try JSONEncoder().encode(body))
        ) {
            (
                $0.status, try? JSONDecoder().decode(ModificationResponse.self, from: Data($0.body.readableBytesView)),
                String(buffer: $0.body)
            )
        }
    }

    static func status(_ client: some TestClientProtocol, _ id: String) async throws -> ModificationResponse? {
        try await client.execute(uri: "/account-modification/requests/\(id)", method: .get) {
            $0.status == .ok
                ? try? JSONDecoder().decode(ModificationResponse.self, from: Data($0.body.readableBytesView)) : nil
        }
    }

    @Test func makingRoomDropsOnlyFinishedRequestsOldestFirst() async throws {
        let kit = AccountModificationKit(
            extension: HoldingExtension(),
            manifest: .init(
                endpoint: "/account-modification",
                supportsStrongPasswordChange: true,
                supportsUpgradeToSignIn: false
            ),
            origin: "https://kit.test",
            answerTimeout: .milliseconds(200),
            maximumRecords: 3
        )
        let router = Router()
        kit.addRoutes(to: router)
        try await Application(router: router).test(.router) { client in
            let path = "/account-modification/change-password"
            // open-1 (the oldest), done-1, open-2: the book is full.
            #expect(
                try await Self.post(client, path, Self.change("open-1", user: "open")).1?.status == .presentInterface
            )
            #expect(
                try await Self.post(client, path, Self.change("done-1", user: "done", interaction: .none)).1?.status
                    == .completed
            )
            #expect(
                try await Self.post(client, path, Self.change("open-2", user: "open")).1?.status == .presentInterface
            )

            // A fourth request makes room by dropping done-1 (finished), not open-1 (older, open).
            #expect(
                try await Self.post(client, path, Self.change("done-2", user: "done", interaction: .none)).1?.status
                    == .completed
            )
            #expect(try await Self.status(client, "open-1")?.status == .presentInterface)
            #expect(try await Self.status(client, "done-1") == nil)  // dropped (no ledger here)

            // Next, done-2 goes; then only open requests are left, and a new one is refused.
            #expect(
                try await Self.post(client, path, Self.change("open-3", user: "open")).1?.status == .presentInterface
            )
            let (busy, _, body) = try await Self.post(client, path, Self.change("open-4", user: "open"))
            #expect(busy == .serviceUnavailable)
            #expect(body.contains(#""error":"unavailable""#))
            for id in ["open-1", "open-2", "open-3"] {
                #expect(try await Self.status(client, id)?.status == .presentInterface, "\(id) was dropped")
            }
            // The oldest open request is still there to cancel (the bug dropped it: a 404).
            let (cancelStatus, cancelled, _) = try await Self.post(
                client,
                "/account-modification/requests/open-1/cancel",
                [String: String]()
            )
            #expect(cancelStatus == .ok && cancelled?.error?.code == .userCanceled)
            // Finished now, it makes room for the next request.
            #expect(
                try await Self.post(client, path, Self.change("open-4", user: "open")).1?.status == .presentInterface
            )
            #expect(try await Self.status(client, "open-1") == nil)
            #expect(try await Self.status(client, "open-2")?.status == .presentInterface)
        }
    }
}
