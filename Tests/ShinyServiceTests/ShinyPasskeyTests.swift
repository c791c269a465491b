import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Passkeys
import ShinyService
import Testing
import _KeyhavenSupport

/// shiny as a WebAuthn relying party over HTTP (issue 16): registration on the account's page,
/// sign-in, one-time challenges, the CSRF header, unknown credentials, removal, and
/// `/.well-known/passkey-endpoints`. The client side is Keyhaven's authenticator; shiny's checks are
/// the `PasskeyRelyingParty` kit's, which PyPI `fido2` plays against in PasskeysTests and
/// Chromium's virtual authenticator in the browser suite.
struct ShinyPasskeyTests {
    typealias Page = ShinyPagesTests.Page
    static let origin = "https://shiny.test"

    struct Browser {
        var cookies: [String: String] = [:]
        var cookieHeader: String {
            cookies.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "; ")
        }

        mutating func remember(_ page: Page) {
            for value in page.headers[values: .setCookie] {
                guard let pair = value.split(separator: ";").first, let equals = pair.firstIndex(of: "=") else {
                    continue
                }
                cookies[String(pair[..<equals])] = String(pair[pair.index(after: equals)...])
            }
        }

        mutating func get(_ client: some TestClientProtocol, _ path: String) async throws -> Page {
            let page = try await ShinyPagesTests.get(client, path, cookie: cookieHeader)
            remember(page)
            return page
        }

        mutating func json(
            _ client: some TestClientProtocol,
            _ path: String,
            _ body: JSONValue = [:],
            csrf: Bool = true
        ) async throws -> (Page, JSONValue) {
            var headers: HTTPFields = [
                .contentType: "application/json", .cookie: cookieHeader, .origin: ShinyPasskeyTests.origin,
            ]
            if csrf, let token = cookies["shiny_csrf"] { headers[HTTPField.Name("X-CSRF-Token")!] = token }
            let page = try await client.execute(
                uri: path,
                method: .post,
                headers: headers,
                body: ByteBuffer(bytes: body.encoded())
            ) {
                Page(status: $0.status, headers: $0.headers, body: String(buffer: $0.body))
            }
            remember(page)
            return (page, (try? JSONValue.parse(Data(page.body.utf8))) ?? .null)
        }
    }

    func signedIn(_ client: some TestClientProtocol) async throws -> Browser {
        var browser = Browser()
        let signIn = try await ShinyPagesTests.post(
            client,
            "/signin",
            [("user", "ada"), ("password", "Ada-Password-12")]
        )
        browser.remember(signIn)
        #expect(browser.cookies["shiny_session"] != nil)
        _ = try await browser.get(client, "/account/passkeys")
        #expect(browser.cookies["shiny_csrf"] != nil)
        return browser
    }

    @Test func registersSignsInOnceAndRemoves() async throws {
        let shiny = try Shiny(configuration: .init(publicURL: Self.origin, scryptLogN: 10))
        try shiny.createAccount(user: "ada", password: "Ada-Password-12")
        let authenticator = Authenticator()
        try await Application(router: shiny.router()).test(.router) { client in
            var browser = try await signedIn(client)
            let page = try await browser.get(client, "/account/passkeys")
            #expect(
                page.body.contains("No passkeys yet.")
                    && page.body.contains(#"<script src="/assets/shiny-passkeys.js">"#)
            )
            #expect(page.headers[HTTPField.Name("Content-Security-Policy")!]?.contains("script-src 'self'") == true)

            let (_, options) = try await browser.json(client, "/passkeys/registration/options")
            #expect(options["rp"]?["id"]?.string == "shiny.test")
            #expect(options["user"]?["name"]?.string == "ada")
            let request = try CreationRequest(json: options)
            #expect(request.userID.count == 16)  // a random handle, not the name
            let (passkey, registration) = try authenticator.register(
                request,
                origin: Self.origin,
                existing: [],
                userVerified: true
            )
            let (registered, _) = try await browser.json(client, "/passkeys/registration", ["credential": registration])
            #expect(registered.status == .created, "\(registered.body)")

            // The challenge worked once.
            let (replayed, problem) = try await browser.json(
                client,
                "/passkeys/registration",
                ["credential": registration]
            )
            #expect(replayed.status == .badRequest && problem["error"]?.string == "invalid_challenge")

            // Listed, and accepted for the signals; the next registration excludes it.
            let listed = try await browser.get(client, "/account/passkeys")
            let id = Base64URL.encode(passkey.credentialID)
            #expect(listed.body.contains(#"data-accepted="\#(id)""#))
            let (_, again) = try await browser.json(client, "/passkeys/registration/options")
            #expect(throws: PasskeyError.self) {
                try authenticator.register(
                    CreationRequest(json: again),
                    origin: Self.origin,
                    existing: [passkey],
                    userVerified: true
                )
            }

            // A browser with no session signs in with the passkey.
            var other = Browser()
            _ = try await other.get(client, "/signin")
            let (_, requestOptions) = try await other.json(client, "/passkeys/authentication/options")
            #expect(requestOptions["rpId"]?.string == "shiny.test")
            let (_, assertion) = try authenticator.authenticate(
                AssertionRequest(json: requestOptions),
                origin: Self.origin,
                credential: passkey,
                userVerified: true
            )
            let (signedIn, answer) = try await other.json(client, "/passkeys/authentication", ["credential": assertion])
            #expect(signedIn.status == .ok && answer["redirect"]?.string == "/account", "\(signedIn.body)")
            #expect(other.cookies["shiny_session"] != nil)
            let account = try await other.get(client, "/account")
            #expect(account.body.contains("Signed in as <strong>ada</strong>"))
            let (replay, replayProblem) = try await other.json(
                client,
                "/passkeys/authentication",
                ["credential": assertion]
            )
            #expect(replay.status == .badRequest && replayProblem["error"]?.string == "invalid_challenge")

            // Removed from the account page (a form with the CSRF token): it no longer signs in.
            let removed = try await client.execute(
                uri: "/account/passkeys/remove",
                method: .post,
                headers: [.contentType: "application/x-www-form-urlencoded", .cookie: browser.cookieHeader],
                body: ShinyPagesTests.form([("credential", id), ("csrf", browser.cookies["shiny_csrf"] ?? "")])
            ) { $0.status }
            #expect(removed == .seeOther)
            #expect(try await browser.get(client, "/account/passkeys").body.contains("No passkeys yet."))
            let (_, lastOptions) = try await other.json(client, "/passkeys/authentication/options")
            let (_, late) = try authenticator.authenticate(
                AssertionRequest(json: lastOptions),
                origin: Self.origin,
                credential: passkey,
                userVerified: true
            )
            let (gone, goneProblem) = try await other.json(client, "/passkeys/authentication", ["credential": late])
            #expect(gone.status == .notFound && goneProblem["error"]?.string == "unknown_credential")
        }
    }

    @Test func unknownPasskeysAndMissingTokensAreRefused() async throws {
        let shiny = try Shiny(configuration: .init(publicURL: Self.origin, scryptLogN: 10))
        try shiny.createAccount(user: "ada", password: "Ada-Password-12")
        try await Application(router: shiny.router()).test(.router) { client in
            var browser = Browser()
            _ = try await browser.get(client, "/signin")
            let (noToken, _) = try await browser.json(client, "/passkeys/authentication/options", csrf: false)
            #expect(noToken.status == .forbidden)
            let (_, options) = try await browser.json(client, "/passkeys/authentication/options")
            let stranger = PasskeyCredential(
                rpID: "shiny.test",
                credentialID: Array(repeating: 7, count: 16),
                userHandle: [1],
                userName: "x",
                userDisplayName: "x",
                algorithm: -7,
                privateKey: Array(P256.Signing.PrivateKey().rawRepresentation),
                created: Date()
            )
            let (_, assertion) = try Authenticator().authenticate(
                AssertionRequest(json: options),
                origin: Self.origin,
                credential: stranger,
                userVerified: true
            )
            let (unknown, problem) = try await browser.json(
                client,
                "/passkeys/authentication",
                ["credential": assertion]
            )
            #expect(unknown.status == .notFound && problem["error"]?.string == "unknown_credential")
            // Registration needs a session.
            let (signedOut, _) = try await browser.json(client, "/passkeys/registration/options")
            #expect(signedOut.status == .unauthorized)

            let endpoints = try await ShinyPagesTests.get(client, "/.well-known/passkey-endpoints")
            let json = try JSONValue.parse(Data(endpoints.body.utf8))
            #expect(json["enroll"]?.string == "https://shiny.test/account/passkeys")
            #expect(json["manage"]?.string == "https://shiny.test/account/passkeys")
        }
    }
}
