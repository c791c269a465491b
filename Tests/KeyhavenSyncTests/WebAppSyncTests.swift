import AccountModification
import AutoFill
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import KeyhavenApp
import KeyhavenTesting
import NIOCore
import SecurityRecommendations
import SyncClient
import Synchronization
import Testing
import Vault
import VaultSync
import VaultSyncBridge
import _KeyhavenSupport

@testable import KeyhavenSync
@testable import KeyhavenWebApp

/// The web app's Sync page on the laptop's session (real vault, real server on a loopback port),
/// asked in process as a browser would: the session's cookie and paths, its CSRF token.
@Suite(.offCooperativePool)
struct WebAppSyncTests {
    struct NoUpgrades: UpgradeEnvironment {
        struct Refused: Error {}
        func manifest(for service: String) async throws -> AccountModificationManifest { throw Refused() }
        func transport(endpoint: String) -> any ModificationTransport { fatalError("no upgrades in these tests") }
    }

    /// Routes requests to `127.0.0.1:PORT`, the only authority the app answers.
    struct OwnAuthority<Inner: HTTPResponder>: HTTPResponder {
        let inner: Inner
        let port: Int

        func respond(to request: Request, context: Inner.Context) async throws -> Response {
            var head = request.head
            head.authority = "127.0.0.1:\(port)"
            return try await inner.respond(to: Request(head: head, body: request.body), context: context)
        }
    }

    static let port = 49_998

    /// The app on `laptop`'s session, sync answered by it (as `keyhaven agent` wires it).
    static func app(_ laptop: KeyhavenSession) -> WebApp {
        var services = WebApp.Services(
            breachSource: { _, _ in .none(reason: "tests") },
            auditNetwork: { _ in .none },
            upgradeEnvironment: NoUpgrades()
        )
        services.sync = { await laptop.answerWithSync($0) }
        let app = WebApp(agent: AutoFillAgent(session: laptop), services: services)
        app.state.withLock { $0.port = port }
        return app
    }

    struct Browser {
        let client: any TestClientProtocol
        let cookie: String
        let base: String
        var csrf = ""

        var headers: HTTPFields { [.cookie: cookie, .origin: "http://127.0.0.1:\(WebAppSyncTests.port)"] }

        func get(
            _ path: String,
            extra: HTTPFields = [:]
        ) async throws -> (status: HTTPResponse.Status, body: String, location: String?) {
            var fields = headers
            fields.append(contentsOf: extra)
            return try await client.execute(uri: base + path, method: .get, headers: fields, body: nil) {
                ($0.status, String(buffer: $0.body), $0.headers[.location])
            }
        }

        func post(
            _ path: String,
            _ fields: [(String, String)]
        ) async throws -> (status: HTTPResponse.Status, body: String, location: String?) {
            var all = headers
            all[.contentType] = "application/x-www-form-urlencoded"
            return try await client.execute(
                uri: base + path,
                method: .post,
                headers: all,
                body: ByteBuffer(string: FormURLEncoding.encode(fields))
            ) { ($0.status, String(buffer: $0.body), $0.headers[.location]) }
        }
    }

    /// A browser let in through the launch URL, its CSRF token read from `/sync`.
    static func browser(_ app: WebApp, _ client: some TestClientProtocol) async throws -> Browser {
        let launch = app.launchURL()
        let path = String(launch.dropFirst("http://127.0.0.1:\(port)".count))
        let (cookie, base) = try await client.execute(uri: path, method: .get) { response in
            let cookie = try #require(response.headers[.setCookie]?.split(separator: ";").first.map(String.init))
            let page = String(buffer: response.body)
            let link = try #require(page.firstMatch(of: #/id="continue" href="(/s/[^"]+)/"/#)?.output.1)
            return (cookie, String(link))
        }
        var browser = Browser(client: client, cookie: cookie, base: base)
        let page = try await browser.get("/sync")
        browser.csrf = String(try #require(page.body.firstMatch(of: #/name="csrf-token" content="([^"]+)"/#)?.output.1))
        return browser
    }

    @Test func theSyncPageShowsTheStatusAndAConflictResolvedInTwoSteps() async throws {
        let clock = TestClock()
        let test = try TestVault(now: { clock.now })
        try await withSyncServer(clock: clock) { server in
            let (laptop, phone, mail) = try await SessionSyncTests.passwordConflict(test, server: server, clock: clock)
            var device = phone
            let app = Self.app(laptop)
            let application = Application(
                responder: OwnAuthority(inner: SessionPaths(inner: app.router().buildResponder()), port: Self.port)
            )
            try await application.test(.router) { client in
                let browser = try await Self.browser(app, client)
                let page = try await browser.get("/sync")
                #expect(page.status == .ok)
                #expect(page.body.contains(#"id="sync-state">Sync is <strong>on</strong>"#))
                #expect(page.body.contains(server) && page.body.contains(#"id="sync-device">laptop<"#))
                #expect(
                    page.body.contains(#"id="sync-conflicts">1<"#)
                        && page.body.contains(#"id="sync-pending">Nothing waits"#)
                )
                #expect(page.body.contains(#"id="nav-sync""#) && page.body.contains(#"id="sync-now""#))
                #expect(page.body.contains("conflict-\(mail.rawValue)-password-1"), "the conflict's row")
                #expect(!page.body.contains("phone password") && !page.body.contains("laptop password"), "masked")

                // Reveal fetches a value with the CSRF header, as a password's Reveal does.
                let value = "/api/sync/conflicts/\(mail.rawValue)/value?field=password&keep=other%3A1"
                #expect(try await browser.get(value).status == .forbidden)
                let revealed = try await browser.get(value, extra: [HTTPField.Name("X-CSRF-Token")!: browser.csrf])
                #expect(revealed.status == .ok && revealed.body.contains("phone password"))

                // 1: pick the value to keep; a page to confirm, still without the secret.
                let pick = try await browser.get("/sync/resolve?item=\(mail.rawValue)&field=password&keep=other%3A1")
                #expect(pick.status == .ok && pick.body.contains(#"id="confirm-resolve""#), "\(pick.body)")
                #expect(!pick.body.contains("phone password") && pick.body.contains("password history"))
                #expect(try await laptop.syncConflicts(reveal: false).count == 1, "looking changes nothing")

                // Without the session's token the confirmation is refused.
                let fields = [("item", mail.rawValue), ("field", "password"), ("keep", "other:1")]
                #expect(try await browser.post("/sync/resolve", fields).status == .forbidden)
                #expect(try await browser.post("/sync/resolve", [("csrf", "forged")] + fields).status == .forbidden)
                #expect(try await laptop.syncConflicts(reveal: false).count == 1)

                // 2: confirm.
                let confirmed = try await browser.post("/sync/resolve", [("csrf", browser.csrf)] + fields)
                #expect(confirmed.status == .seeOther && confirmed.location == browser.base + "/sync")
                let after = try await browser.get("/sync")
                #expect(after.body.contains("Kept the other password of Mail"), "\(after.body)")
                #expect(after.body.contains(#"id="conflicts-none""#) && after.body.contains(#"id="sync-conflicts">0<"#))
                #expect(try test.vault.credential(mail).password == "phone password")
                #expect(
                    try await browser.get("/sync/resolve?item=\(mail.rawValue)&field=password&keep=current").status
                        == .notFound
                )

                // Sync now sends it.
                let synced = try await browser.post("/sync/now", [("csrf", browser.csrf)])
                #expect(synced.status == .seeOther)
                #expect(try await browser.get("/sync").body.contains("Synced: 1 sent"))
            }
            // The phone holds the resolution, no mark anywhere.
            try await device.session.pull()
            let there = try device.session.replica.credential(ItemID(mail))
            #expect(there.content.password == "phone password" && there.conflicts.isEmpty)
        }
    }

    @Test func syncNowWithTheServerDownAnswersAtOnceSayingSo() async throws {
        let clock = TestClock()
        let test = try TestVault(now: { clock.now })
        let mail = try test.vault.add(CredentialContent(title: "Mail", user: "ada", password: "p0"))
        let laptop = try await withSyncServer(clock: clock) { server in
            try await syncingLaptop(test, server: server, clock: clock)
        }
        try test.vault.update(mail) { $0.notes = "offline" }
        let app = Self.app(laptop)
        let application = Application(
            responder: OwnAuthority(inner: SessionPaths(inner: app.router().buildResponder()), port: Self.port)
        )
        try await application.test(.router) { client in
            let browser = try await Self.browser(app, client)
            #expect(try await browser.post("/sync/now", []).status == .forbidden, "no token, refused")
            let started = ContinuousClock.now
            let answer = try await browser.post("/sync/now", [("csrf", browser.csrf)])
            #expect(answer.status == .seeOther)
            let page = try await browser.get("/sync")
            #expect(ContinuousClock.now - started < .seconds(3))
            #expect(page.body.contains("Server unreachable"), "\(page.body)")
            #expect(page.body.contains(#"id="sync-pending">1 item waits"#))
        }
    }
}
