import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import OneTimeCodes
import ShinyService
import Testing

/// shiny's JSON API as an app (and `keyhaven demo`) uses it: sign up, sign in, its errors; and the
/// `/api/demo/…` endpoints, which exist only in demo mode and on loopback.
struct ShinyAPITests {
    struct Reply {
        var status: HTTPResponse.Status
        var body: Data

        func decode<T: Decodable>(_ type: T.Type) throws -> T { try JSONDecoder().decode(type, from: body) }
        var problem: ShinyAPIProblem? { try? decode(ShinyAPIProblem.self) }
        var object: [String: String]? { try? decode([String: String].self) }
    }

    static func post(_ client: some TestClientProtocol, _ path: String, _ body: some Encodable) async throws -> Reply {
        try await post(client, path, raw: ByteBuffer(bytes: try JSONEncoder().encode(body)))
    }

    static func post(_ client: some TestClientProtocol, _ path: String, raw: ByteBuffer) async throws -> Reply {
        try await client.execute(
            uri: path,
            method: .post,
            headers: [.contentType: "application/json"],
            body: raw
        ) { Reply(status: $0.status, body: Data($0.body.readableBytesView)) }
    }

    static func get(_ client: some TestClientProtocol, _ path: String, cookie: String? = nil) async throws -> Reply {
        var headers: HTTPFields = [:]
        if let cookie { headers[.cookie] = cookie }
        return try await client.execute(uri: path, method: .get, headers: headers) {
            Reply(status: $0.status, body: Data($0.body.readableBytesView))
        }
    }

    @Test func signUpEnrolsAnAuthenticatorAndShowsItsSecretOnce() async throws {
        let shiny = try Shiny(configuration: .init(scryptLogN: 10))
        try await Application(router: shiny.router()).test(.router) { client in
            let plain = try await Self.post(
                client,
                "/api/signup",
                ShinySignUpRequest(user: "alice", password: "Password1234")
            )
            #expect(plain.status == .created)
            #expect(plain.object == ["user": "alice"])  // no authenticator, no secret

            let bob = try await Self.post(
                client,
                "/api/signup",
                ShinySignUpRequest(user: "bob", password: "Welcome12345", totp: true)
            )
            #expect(bob.status == .created)
            let secret = try #require(try bob.decode(ShinySignUpResponse.self).totpSecret)
            let totp = try TOTP(secret: secret)
            #expect(try shiny.signIn(user: "bob", password: "Welcome12345", code: totp.code(at: Date())))
        }
    }

    @Test func signUpErrorsAreJSONWithACode() async throws {
        let shiny = try Shiny(configuration: .init(scryptLogN: 10))
        try shiny.createAccount(user: "alice", password: "Password1234")
        try await Application(router: shiny.router()).test(.router) { client in
            let malformed = try await Self.post(client, "/api/signup", raw: ByteBuffer(string: "{not json"))
            #expect(malformed.status == .badRequest)
            #expect(malformed.problem?.error == "invalid_request")

            let noUser = try await Self.post(
                client,
                "/api/signup",
                ShinySignUpRequest(user: "", password: "Password1234")
            )
            #expect(noUser.status == .badRequest && noUser.problem?.error == "invalid_request")

            let weak = try await Self.post(
                client,
                "/api/signup",
                ShinySignUpRequest(user: "carol", password: "password")
            )
            #expect(weak.status == .badRequest)
            #expect(weak.problem?.error == "weak_password")
            #expect(weak.problem?.message.contains("shiny's rules") == true)

            let taken = try await Self.post(
                client,
                "/api/signup",
                ShinySignUpRequest(user: "alice", password: "Password5678")
            )
            #expect(taken.status == .conflict && taken.problem?.error == "exists")
        }
    }

    @Test func signInOpensASessionAndTakesEachCodeOnce() async throws {
        let shiny = try Shiny(configuration: .init(scryptLogN: 10))
        try shiny.createAccount(user: "alice", password: "Password1234")
        let secret = try #require(try shiny.createAccount(user: "bob", password: "Welcome12345", totp: true))
        let totp = try TOTP(secret: secret)
        try await Application(router: shiny.router()).test(.router) { client in
            let wrong = try await Self.post(client, "/api/signin", ShinySignInRequest(user: "alice", password: "nope"))
            #expect(wrong.status == .unauthorized && wrong.problem?.error == "invalid_credentials")
            let unknown = try await Self.post(client, "/api/signin", ShinySignInRequest(user: "zed", password: "nope"))
            #expect(unknown.status == .unauthorized && unknown.problem?.error == "invalid_credentials")

            let alice = try await Self.post(
                client,
                "/api/signin",
                ShinySignInRequest(user: "alice", password: "Password1234")
            )
            #expect(alice.status == .ok)
            let session = try alice.decode(ShinySignInResponse.self)
            #expect(session.user == "alice")
            // The token is a session of shiny's own pages.
            let account = try await Self.get(client, "/account", cookie: "shiny_session=\(session.token)")
            #expect(account.status == .ok)

            let noCode = try await Self.post(
                client,
                "/api/signin",
                ShinySignInRequest(user: "bob", password: "Welcome12345")
            )
            #expect(noCode.status == .unauthorized && noCode.problem?.error == "code_required")
            let code = totp.code(at: Date())
            let bob = try await Self.post(
                client,
                "/api/signin",
                ShinySignInRequest(user: "bob", password: "Welcome12345", code: code)
            )
            #expect(bob.status == .ok)
            let replayed = try await Self.post(
                client,
                "/api/signin",
                ShinySignInRequest(user: "bob", password: "Welcome12345", code: code)
            )
            #expect(replayed.status == .unauthorized && replayed.problem?.error == "code_required")
            // The next step's code is still good (one step of clock drift is allowed).
            let next = try await Self.post(
                client,
                "/api/signin",
                ShinySignInRequest(user: "bob", password: "Welcome12345", code: totp.code(at: Date() + 30))
            )
            #expect(next.status == .ok)
        }
    }

    @Test func demoEndpointsExistOnlyInDemoMode() async throws {
        let service = try Shiny(configuration: .init(scryptLogN: 10))
        try await Application(router: service.router()).test(.router) { client in
            let notifications = try await Self.get(client, "/api/demo/notifications")
            let account = try await Self.get(client, "/api/demo/accounts/alice")
            #expect(notifications.status == .notFound && account.status == .notFound)
        }

        let demo = try Shiny(configuration: .init(scryptLogN: 10, demo: true))
        try demo.createAccount(user: "alice", password: "Password1234")
        try demo.createAccount(user: "bob", password: "Welcome12345", totp: true)
        _ = try demo.startSession(user: "alice")
        try await Application(router: demo.router()).test(.router) { client in
            let alice = try await Self.get(client, "/api/demo/accounts/alice")
            #expect(alice.status == .ok)
            let status = try alice.decode(ShinyAccountStatus.self)
            #expect(status.user == "alice" && status.hasPassword && !status.authenticator)
            #expect(status.signInSubject == nil && status.sessions == 1)
            #expect(try await Self.get(client, "/api/demo/accounts/bob").decode(ShinyAccountStatus.self).authenticator)
            let missing = try await Self.get(client, "/api/demo/accounts/nobody")
            #expect(missing.status == .notFound && missing.problem?.error == "not_found")
            let notifications = try await Self.get(client, "/api/demo/notifications")
            #expect(notifications.status == .ok)
            #expect(try notifications.decode([ShinyReceivedNotification].self).isEmpty)
        }
    }

    @Test(arguments: ["0.0.0.0", "::", "192.0.2.7", "shiny.example.com"])
    func demoModeIsRefusedOffLoopback(host: String) throws {
        #expect(throws: ShinyConfigurationError.self) {
            try Shiny(configuration: .init(host: host, scryptLogN: 10, demo: true))
        }
    }

    @Test(arguments: ["127.0.0.1", "::1", "localhost"])
    func demoModeIsAllowedOnLoopback(host: String) throws {
        _ = try Shiny(configuration: .init(host: host, scryptLogN: 10, demo: true))
    }
}
