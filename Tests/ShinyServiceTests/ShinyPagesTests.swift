import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import OneTimeCodes
import ShinyService
import Testing

/// shiny's own pages, as a person uses them: sign up (with an authenticator), sign in with the
/// code, change the password by hand.
struct ShinyPagesTests {
    struct Page {
        var status: HTTPResponse.Status
        var headers: HTTPFields
        var body: String
    }

    static func form(_ fields: [(String, String)]) -> ByteBuffer {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let encoded = fields.map { name, value in
            "\(name)=\(value.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")"
        }
        return ByteBuffer(string: encoded.joined(separator: "&"))
    }

    /// Posts a page's form as a browser does: opens the page (`page`, default `path`) first, then
    /// posts `fields` with the page's CSRF token and the cookie that goes with it.
    static func post(
        _ client: some TestClientProtocol,
        _ path: String,
        _ fields: [(String, String)],
        page: String? = nil
    ) async throws -> Page {
        let opened = try await get(client, page ?? path)
        let token = try #require(csrfToken(opened.body), "no CSRF field on \(page ?? path)")
        let cookie = try #require(setCookie(opened, "shiny_csrf"))
        return try await client.execute(
            uri: path,
            method: .post,
            headers: [.contentType: "application/x-www-form-urlencoded", .cookie: cookie],
            body: form(fields + [("csrf", token)])
        ) { Page(status: $0.status, headers: $0.headers, body: String(buffer: $0.body)) }
    }

    /// The page's CSRF token.
    static func csrfToken(_ html: String) -> String? {
        html.firstMatch(of: #/name="csrf" value="([0-9a-f]+)"/#).map { String($0.output.1) }
    }

    /// The `name=value` pair of the cookie `name` a response sets.
    static func setCookie(_ page: Page, _ name: String) -> String? {
        page.headers[values: .setCookie].compactMap { $0.split(separator: ";").first.map(String.init) }
            .first { $0.hasPrefix(name + "=") }
    }

    static func get(_ client: some TestClientProtocol, _ path: String, cookie: String? = nil) async throws -> Page {
        var headers: HTTPFields = [:]
        if let cookie { headers[.cookie] = cookie }
        return try await client.execute(uri: path, method: .get, headers: headers) {
            Page(status: $0.status, headers: $0.headers, body: String(buffer: $0.body))
        }
    }

    /// The `shiny_session=…` pair a response sets.
    static func session(_ page: Page) -> String? {
        setCookie(page, "shiny_session")
    }

    @Test func signUpWithAnAuthenticatorThenSignInWithItsCode() async throws {
        let shiny = try Shiny(configuration: .init(scryptLogN: 10))
        try await Application(router: shiny.router()).test(.router) { client in
            #expect(try await Self.get(client, "/signup").body.contains(#"action="/signup""#))

            // Shiny's rules are enforced on sign-up, with the reason.
            let weak = try await Self.post(client, "/signup", [("user", "carol"), ("password", "password")])
            #expect(weak.status == .badRequest)
            #expect(weak.body.contains("This password does not meet shiny&#39;s rules"), "\(weak.body)")

            let password = "Carol-Password-2026"
            let created = try await Self.post(
                client,
                "/signup",
                [("user", "carol"), ("password", password), ("totp", "1")]
            )
            #expect(created.status == .seeOther && created.headers[.location] == "/account")
            let cookie = try #require(Self.session(created))
            let account = try await Self.get(client, "/account", cookie: cookie)
            #expect(account.status == .ok)
            let secretRange = try #require(
                account.body.range(of: #"(?<=id="totp-secret">)[A-Z2-7=]+"#, options: .regularExpression)
            )
            let totp = try TOTP(secret: String(account.body[secretRange]))

            let taken = try await Self.post(client, "/signup", [("user", "carol"), ("password", password)])
            #expect(taken.status == .conflict)

            // Signing in: the password alone asks for the code; a wrong code is refused.
            let wrongPassword = try await Self.post(
                client,
                "/signin",
                [("user", "carol"), ("password", "Wrong-Password-1")]
            )
            #expect(
                wrongPassword.status == .unauthorized && wrongPassword.body.contains("Wrong user name or password.")
            )
            let noCode = try await Self.post(client, "/signin", [("user", "carol"), ("password", password)])
            #expect(noCode.status == .unauthorized && noCode.body.contains("Enter the code from your authenticator."))
            #expect(noCode.body.contains(#"name="code""#))
            let right = totp.code(at: Date())
            let wrong = right == "000000" ? "111111" : "000000"
            let badCode = try await Self.post(
                client,
                "/signin",
                [("user", "carol"), ("password", password), ("code", wrong)]
            )
            #expect(badCode.status == .unauthorized && badCode.body.contains("That code is not right."))
            let signedIn = try await Self.post(
                client,
                "/signin",
                [("user", "carol"), ("password", password), ("code", right)]
            )
            #expect(signedIn.status == .seeOther && signedIn.headers[.location] == "/account")
            #expect(Self.session(signedIn) != nil && Self.session(signedIn) != cookie)
            // The code signed in once; replayed (someone who saw it), it is refused.
            let replayed = try await Self.post(
                client,
                "/signin",
                [("user", "carol"), ("password", password), ("code", right)]
            )
            #expect(replayed.status == .unauthorized && replayed.body.contains("That code is not right."))
            #expect(try await Self.get(client, "/account").headers[.location] == "/signin")  // no cookie, no account
        }
    }

    @Test func changingThePasswordByHandNeedsTheCodeOfAnAuthenticatorAccount() async throws {
        let shiny = try Shiny(configuration: .init(scryptLogN: 10))
        let secret = try #require(try shiny.createAccount(user: "dave", password: "Dave-Password-2026", totp: true))
        try shiny.createAccount(user: "erin", password: "Erin-Password-2026")
        let totp = try TOTP(secret: secret)
        try await Application(router: shiny.router()).test(.router) { client in
            let withoutCode = try await Self.post(
                client,
                "/account/password",
                [("user", "dave"), ("current", "Dave-Password-2026"), ("new", "Dave-Password-2027")]
            )
            #expect(withoutCode.status == .unauthorized)
            #expect(withoutCode.body.contains("Enter the current code from your authenticator."))
            #expect(try shiny.signIn(user: "dave", password: "Dave-Password-2026", code: totp.code(at: Date())))

            let withCode = try await Self.post(
                client,
                "/account/password",
                [
                    ("user", "dave"), ("current", "Dave-Password-2026"), ("new", "Dave-Password-2027"),
                    ("code", totp.code(at: Date())),
                ]
            )
            #expect(withCode.status == .ok && withCode.body.contains("Your password was changed."))
            #expect(try shiny.signIn(user: "dave", password: "Dave-Password-2027", code: totp.code(at: Date())))

            let weak = try await Self.post(
                client,
                "/account/password",
                [("user", "erin"), ("current", "Erin-Password-2026"), ("new", "short")]
            )
            #expect(weak.status == .badRequest)
            let wrong = try await Self.post(
                client,
                "/account/password",
                [("user", "erin"), ("current", "Erin-Password-2025"), ("new", "Erin-Password-2027")]
            )
            #expect(wrong.status == .unauthorized && wrong.body.contains("The current password is wrong."))
            #expect(try shiny.signIn(user: "erin", password: "Erin-Password-2026"))
        }
    }
}
