import AccountModification
import AsyncHTTPClient
import AutoFill
import Foundation
import KeyhavenApp
import KeyhavenTesting
import NIOCore
import NIOHTTP1
import Passkeys
import SecurityRecommendations
import Synchronization
import Testing
import Vault
import _KeyhavenHTTPSupport
import _KeyhavenSupport

@testable import KeyhavenWebApp

/// The web app served on a real loopback port, driven over HTTP as a browser (or an attacker) would:
/// the launch secret, the cookie, Host/Origin/CSRF checks, the security headers, and pages and JSON
/// computed by the same use cases as the CLI. (The browser-level flows are in
/// Tests/browser/webapp_browser.py, run by WebAppBrowserTests.)
@Suite(.offCooperativePool) struct WebAppTests {
    /// Upgrades are not exercised here (the browser tests run them against shiny).
    struct NoUpgrades: UpgradeEnvironment {
        struct Refused: Error {}
        func manifest(for service: String) async throws -> AccountModificationManifest { throw Refused() }
        func transport(endpoint: String) -> any ModificationTransport { fatalError("no upgrades in these tests") }
    }

    final class Harness: Sendable {
        let testVault: TestVault
        let agent: AutoFillAgent
        let app: WebApp
        let server: Task<Void, any Error>
        let port: Int
        var origin: String { "http://127.0.0.1:\(port)" }

        init(
            auditNetwork: AuditService.Network = .none,
            now: @escaping @Sendable () -> Date = { Date() }
        ) async throws {
            testVault = try TestVault()
            for (service, user, password) in [
                ("https://mail.example.invalid", "ada", "Password1234"),
                ("https://shop.other.invalid", "ada", "Password1234"),
                ("https://bank.example.invalid", "ada", "k7#Qv!p2Lx9@wZr4Tm"),
            ] {
                _ = try testVault.vault.add(
                    CredentialContent(services: [ServiceIdentifier(service)], user: user, password: password)
                )
            }
            agent = AutoFillAgent(.init(vaultURL: testVault.url, allowInsecureKDF: true))
            app = WebApp(
                agent: agent,
                services: .init(
                    breachSource: { _, _ in .none(reason: "tests") },
                    auditNetwork: { _ in auditNetwork },
                    upgradeEnvironment: NoUpgrades()
                ),
                configuration: .init(now: now)
            )
            let ready = AsyncStream.makeStream(of: Int.self)
            let app = self.app
            server = Task { try await app.serve(port: 0) { ready.continuation.yield($0) } }
            var iterator = ready.stream.makeAsyncIterator()
            port = try #require(await iterator.next())
        }

        deinit { server.cancel() }

        struct Reply {
            var status: Int
            var headers: HTTPHeaders
            var body: String
        }

        func request(
            _ path: String,
            method: HTTPMethod = .GET,
            headers: [(String, String)] = [],
            host: String? = nil,
            body: String? = nil
        ) async throws -> Reply {
            var request = HTTPClientRequest(url: origin + path)
            request.method = method
            request.headers.replaceOrAdd(name: "Host", value: host ?? "127.0.0.1:\(port)")
            for (name, value) in headers { request.headers.add(name: name, value: value) }
            if let body { request.body = .bytes(ByteBuffer(string: body)) }
            let response = try await OutboundHTTP.shared.execute(request, timeout: .seconds(30))
            let collected = try await response.body.collect(upTo: 16 << 20)
            return Reply(status: Int(response.status.code), headers: response.headers, body: String(buffer: collected))
        }

        /// Launches a session: the cookie header and the CSRF token.
        func session(unlock: Bool = true) async throws -> (cookie: String, csrf: String) {
            let launch = app.launchURL()
            let reply = try await request(String(launch.dropFirst(origin.count)))
            let setCookie = try #require(reply.headers.first(name: "Set-Cookie"))
            let cookie = String(setCookie.split(separator: ";")[0])
            if unlock { try agent.unlock(masterPassword: testVault.masterPassword) }
            let page = try await request(unlock ? "/settings" : "/unlock", headers: [("Cookie", cookie)])
            let csrf = try #require(Self.csrf(in: page.body))
            return (cookie, csrf)
        }

        static func csrf(in page: String) -> String? {
            guard let range = page.range(of: #"name="csrf-token" content=""#) else { return nil }
            return String(page[range.upperBound...].prefix { $0 != "\"" })
        }

        func post(
            _ path: String,
            _ session: (cookie: String, csrf: String),
            fields: [(String, String)] = [],
            origin: String? = nil
        )
            async throws -> Reply
        {
            try await request(
                path,
                method: .POST,
                headers: [
                    ("Cookie", session.cookie), ("Origin", origin ?? self.origin),
                    ("Content-Type", "application/x-www-form-urlencoded"),
                ],
                body: FormURLEncoding.encode([("csrf", session.csrf)] + fields)
            )
        }
    }

    @Test func theLaunchSecretLetsOneBrowserInOnceWithAStrictHttpOnlyCookie() async throws {
        let h = try await Harness()
        let launch = h.app.launchURL()
        #expect(launch.hasPrefix("http://127.0.0.1:\(h.port)/launch?secret="))
        let path = String(launch.dropFirst(h.origin.count))
        let first = try await h.request(path)
        #expect(first.status == 303)
        #expect(first.headers.first(name: "Location") == "/")
        let cookie = try #require(first.headers.first(name: "Set-Cookie"))
        #expect(cookie.hasPrefix("keyhaven_session_\(h.port)="))
        #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict") && cookie.contains("Path=/"))
        let again = try await h.request(path)
        #expect(again.status == 401)
        #expect(again.headers.first(name: "Set-Cookie") == nil)
        #expect(try await h.request("/launch?secret=made-up").status == 401)
        // Without the cookie nothing but the launch and the assets answers.
        let refused = try await h.request("/vault")
        #expect(refused.status == 401)
        #expect(refused.body.contains("keyhaven ui"))
        #expect(try await h.request("/api/audit").status == 401)
        #expect(try await h.request("/assets/keyhaven.css").status == 200)
    }

    @Test func aLaunchSecretExpires() async throws {
        let clock = TestClock()
        let testVault = try TestVault()
        let agent = AutoFillAgent(.init(vaultURL: testVault.url, allowInsecureKDF: true))
        let app = WebApp(
            agent: agent,
            services: .init(
                breachSource: { _, _ in .none(reason: "") },
                auditNetwork: { _ in .none },
                upgradeEnvironment: NoUpgrades()
            ),
            configuration: .init(now: clock.now, launchLifetime: 60)
        )
        let secret = try #require(app.launchURL().split(separator: "=").last.map(String.init))
        clock.advance(by: 61)
        #expect(app.redeemLaunchSecret(secret) == nil)
        let fresh = try #require(app.launchURL().split(separator: "=").last.map(String.init))
        #expect(app.redeemLaunchSecret(fresh) != nil)
        #expect(app.redeemLaunchSecret(fresh) == nil)
    }

    @Test func onlyThisAppsOwnHostIsAnswered() async throws {
        let h = try await Harness()
        let session = try await h.session()
        let rebound = try await h.request(
            "/api/audit",
            headers: [("Cookie", session.cookie)],
            host: "attacker.example:\(h.port)"
        )
        #expect(rebound.status == 403)
        #expect(
            try await h.request("/api/audit", headers: [("Cookie", session.cookie)], host: "127.0.0.1:1").status == 403
        )
        #expect(
            try await h.request("/api/audit", headers: [("Cookie", session.cookie)], host: "localhost:\(h.port)").status
                == 200
        )
    }

    @Test func stateChangesNeedTheSameOriginAndTheCSRFToken() async throws {
        let h = try await Harness()
        let session = try await h.session()
        #expect(try await h.post("/lock", session, origin: "http://attacker.example").status == 403)
        #expect(try await h.post("/lock", session, origin: "null").status == 403)
        let noOrigin = try await h.request(
            "/lock",
            method: .POST,
            headers: [("Cookie", session.cookie), ("Content-Type", "application/x-www-form-urlencoded")],
            body: "csrf=\(session.csrf)"
        )
        #expect(noOrigin.status == 403)
        #expect(try await h.post("/lock", (session.cookie, "wrong")).status == 403)
        #expect(h.agent.isUnlocked)
        let locked = try await h.post("/lock", session)
        #expect(locked.status == 303)
        #expect(locked.headers.first(name: "Location") == "/unlock")
        #expect(!h.agent.isUnlocked)
    }

    @Test func everyResponseCarriesTheSecurityHeaders() async throws {
        let h = try await Harness()
        let session = try await h.session()
        for path in ["/", "/vault", "/no-such-page", "/api/audit", "/assets/app.js", "/launch?secret=x"] {
            let reply = try await h.request(path, headers: [("Cookie", session.cookie)])
            let policy = reply.headers.first(name: "Content-Security-Policy") ?? ""
            #expect(policy.contains("frame-ancestors 'none'"), "\(path)")
            #expect(policy.contains("script-src 'self'") && !policy.contains("unsafe-inline"), "\(path)")
            #expect(reply.headers.first(name: "X-Frame-Options") == "DENY", "\(path)")
            #expect(reply.headers.first(name: "Cache-Control") != nil, "\(path)")
        }
        // Pages load no inline script and nothing from elsewhere.
        let page = try await h.request("/", headers: [("Cookie", session.cookie)])
        #expect(!page.body.contains("<script>") && !page.body.contains("https://"))
    }

    @Test func aWrongMasterPasswordUnlocksNothing() async throws {
        let h = try await Harness()
        let session = try await h.session(unlock: false)
        let locked = try await h.request("/vault", headers: [("Cookie", session.cookie)])
        #expect(locked.status == 303 && locked.headers.first(name: "Location") == "/unlock")
        #expect(try await h.request("/api/audit", headers: [("Cookie", session.cookie)]).status == 423)
        let wrong = try await h.post("/unlock", session, fields: [("masterPassword", "not it")])
        #expect(wrong.status == 401)
        #expect(wrong.body.contains("The master password is wrong"))
        #expect(!wrong.body.contains("not it"))
        #expect(!h.agent.isUnlocked)
        let right = try await h.post("/unlock", session, fields: [("masterPassword", h.testVault.masterPassword)])
        #expect(right.status == 303)
        #expect(h.agent.isUnlocked)
    }

    @Test func theAuditAPIIsTheReportTheCLIPrints() async throws {
        let h = try await Harness()
        let session = try await h.session()
        let reply = try await h.request("/api/audit", headers: [("Cookie", session.cookie)])
        #expect(reply.status == 200)
        let outcome = try await AuditService(breachSource: .none(reason: "tests"), network: .none).run(
            h.testVault.vault
        )
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes, .prettyPrinted]
        encoder.dateEncodingStrategy = .iso8601
        #expect(reply.body == String(decoding: try encoder.encode(outcome.report), as: UTF8.self))
        // The page groups the same items by severity.
        let page = try await h.request("/recommendations", headers: [("Cookie", session.cookie)])
        #expect(page.body.contains(#"id="group-reused-and-weak""#))
        #expect(page.body.components(separatedBy: #"class="recommendation""#).count - 1 == 2)
    }

    @Test func anIgnoredRecommendationStaysHiddenUntilRestored() async throws {
        let h = try await Harness()
        let session = try await h.session()
        let mail = try #require(
            try h.testVault.vault.list().credentials.first { $0.primaryDomain == "mail.example.invalid" }
        )
        let ignored = try await h.post("/recommendations/\(mail.id.rawValue)/ignore", session)
        #expect(ignored.status == 303)
        var page = try await h.request("/recommendations", headers: [("Cookie", session.cookie)])
        #expect(page.body.components(separatedBy: #"class="recommendation""#).count - 1 == 1)
        #expect(page.body.contains(#"id="ignored""#))
        // Kept in the vault: another app on the same vault still hides it.
        #expect(try h.testVault.reopen().agentRecords(kind: "ignored-recommendation").count == 1)
        _ = try await h.post("/recommendations/\(mail.id.rawValue)/restore", session)
        page = try await h.request("/recommendations", headers: [("Cookie", session.cookie)])
        #expect(page.body.components(separatedBy: #"class="recommendation""#).count - 1 == 2)
    }

    @Test func searchFindsCredentialsAndEscapesWhatItShows() async throws {
        let h = try await Harness()
        _ = try h.testVault.vault.add(
            CredentialContent(
                title: "<script>alert(1)</script>",
                services: [ServiceIdentifier("https://evil.example.invalid")],
                user: "\"><img src=x>",
                password: "p"
            )
        )
        let session = try await h.session()
        let all = try await h.request("/api/items", headers: [("Cookie", session.cookie)])
        #expect(all.body.contains(#""total" : 4"#))
        let found = try await h.request("/api/items?q=SHOP", headers: [("Cookie", session.cookie)])
        #expect(found.body.contains(#""matched" : 1"#))
        let page = try await h.request("/vault?q=evil", headers: [("Cookie", session.cookie)])
        #expect(page.body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"))
        #expect(!page.body.contains("<script>alert") && !page.body.contains("<img src=x>"))
    }

    @Test func passwordsAreReadOnlyByTheAppsOwnScript() async throws {
        let h = try await Harness()
        let session = try await h.session()
        let bank = try #require(
            try h.testVault.vault.list().credentials.first { $0.primaryDomain == "bank.example.invalid" }
        )
        let path = "/api/items/\(bank.id.rawValue)/password"
        #expect(try await h.request(path, headers: [("Cookie", session.cookie)]).status == 403)
        let read = try await h.request(path, headers: [("Cookie", session.cookie), ("X-CSRF-Token", session.csrf)])
        #expect(read.status == 200)
        #expect(read.body.contains("k7#Qv!p2Lx9@wZr4Tm"))
        // The item page itself never carries the password.
        let item = try await h.request("/items/\(bank.id.rawValue)", headers: [("Cookie", session.cookie)])
        #expect(item.status == 200 && !item.body.contains("k7#Qv!p2Lx9@wZr4Tm"))
    }

    @Test func anImportIsPreviewedAndWrittenOnlyWhenConfirmed() async throws {
        let h = try await Harness()
        let session = try await h.session()
        let boundary = "----keyhaven-test"
        let csv = "name,url,username,password\nNew,https://new.example.invalid,zoe,Fresh-Password-77\n"
        let body =
            "--\(boundary)\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n\(session.csrf)\r\n"
            + "--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"chrome.csv\"\r\nContent-Type: text/csv\r\n\r\n\(csv)\r\n"
            + "--\(boundary)\r\nContent-Disposition: form-data; name=\"format\"\r\n\r\n\r\n--\(boundary)--\r\n"
        let preview = try await h.request(
            "/import",
            method: .POST,
            headers: [
                ("Cookie", session.cookie), ("Origin", h.origin),
                ("Content-Type", "multipart/form-data; boundary=\(boundary)"),
            ],
            body: body
        )
        #expect(preview.status == 200)
        #expect(preview.body.contains(#"<strong id="preview-new">1</strong>"#))
        #expect(try h.testVault.vault.count() == 3)
        let id = try #require(
            preview.body.range(of: "/import/").map { String(preview.body[$0.upperBound...].prefix { $0 != "/" }) }
        )
        let confirmed = try await h.post("/import/\(id)/confirm", session)
        #expect(confirmed.status == 303)
        #expect(try h.testVault.vault.count() == 4)
        // A preview is used once.
        #expect(try await h.post("/import/\(id)/confirm", session).status == 404)
    }

    @Test func theAppForgetsWhatItReadFromTheVaultWhenTheAgentLocks() async throws {
        let h = try await Harness()
        let session = try await h.session()
        #expect(try await h.request("/api/audit", headers: [("Cookie", session.cookie)]).status == 200)
        #expect(h.app.state.withLock { $0.audit != nil })
        h.agent.lock()  // as the idle lock or `keyhaven lock` would
        #expect(h.app.state.withLock { $0.audit == nil && $0.previews.isEmpty })
        let page = try await h.request("/vault", headers: [("Cookie", session.cookie)])
        #expect(page.status == 303 && page.headers.first(name: "Location") == "/unlock")
    }

    @Test func passkeysShowAsABadgeAndOnTheirAccountsPage() async throws {
        let h = try await Harness()
        func makePasskey(rpID: String, user: String) throws -> PasskeyCredential {
            try Authenticator().register(
                CreationRequest(
                    rpID: rpID,
                    rpName: "Site",
                    userID: Array(user.utf8),
                    userName: user,
                    userDisplayName: user,
                    challenge: [1]
                ),
                origin: "https://\(rpID)",
                existing: [],
                userVerified: true
            ).credential
        }
        let passkey = try makePasskey(rpID: "bank.example.invalid", user: "ada")
        try h.testVault.vault.savePasskey(passkey)
        // Another person's passkey on ada's mail site is not ada's: same site and same user, as
        // `list --json` and the export decide.
        try h.testVault.vault.savePasskey(try makePasskey(rpID: "mail.example.invalid", user: "grace"))
        let session = try await h.session()
        let items = try await h.request("/api/items?q=bank", headers: [("Cookie", session.cookie)])
        #expect(items.body.contains(#""passkey""#))
        let mail = try await h.request("/api/items?q=mail", headers: [("Cookie", session.cookie)])
        #expect(mail.body.contains("mail.example.invalid") && !mail.body.contains(#""passkey""#))
        let bank = try #require(
            try h.testVault.vault.list().credentials.first { $0.primaryDomain == "bank.example.invalid" }
        )
        let page = try await h.request("/items/\(bank.id.rawValue)", headers: [("Cookie", session.cookie)])
        #expect(
            page.body.contains(#"id="passkeys""#)
                && page.body.contains(String(Base64URL.encode(passkey.credentialID).prefix(10)))
        )
        #expect(!page.body.contains(Base64URL.encode(passkey.privateKey)))
    }

    /// A site that was down when the audit ran is asked again a minute later (the audit used to be
    /// kept until the vault or the settings changed, hiding its change-password page all session);
    /// an audit whose sites all answered is kept.
    @Test func anAuditWithUnreachableSitesIsRedoneAMinuteLater() async throws {
        /// Down until `up`; then a site with trustworthy status codes and a change-password page.
        final class SiteThatComesBack: WellKnownProbe {
            let up = Mutex(false)
            let asked = Mutex(0)
            func get(_ url: String) async -> ProbeResponse? {
                asked.withLock { $0 += 1 }
                guard up.withLock({ $0 }) else { return nil }
                guard url.hasSuffix("/.well-known/change-password") else {
                    return ProbeResponse(status: 404, finalURL: url)
                }
                let origin = url.dropLast("/.well-known/change-password".count)
                return ProbeResponse(status: 200, finalURL: origin + "/account/password")
            }
        }
        let site = SiteThatComesBack()
        let clock = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        let h = try await Harness(
            auditNetwork: .init(probe: site, manifests: nil),
            now: { clock.withLock { $0 } }
        )
        let vault = h.testVault.vault
        func mailPage(_ audit: AuditCache) -> String? {
            audit.report.items.first { $0.service == "mail.example.invalid" }?.actions.changePasswordURL
        }
        let first = try await h.app.audit(vault)
        #expect(first.report.summary.unreachableSites == 2)  // mail and shop (weak, reused); bank is fine
        #expect(first.report.summary.notices.contains { $0.contains("2 sites could not be reached") })
        #expect(mailPage(first) == nil)

        site.up.withLock { $0 = true }
        clock.withLock { $0 += 59 }
        let asked = site.asked.withLock { $0 }
        #expect(mailPage(try await h.app.audit(vault)) == nil)  // still the same audit
        #expect(site.asked.withLock { $0 } == asked)

        clock.withLock { $0 += 2 }
        let again = try await h.app.audit(vault)
        #expect(again.report.summary.unreachableSites == 0)
        #expect(!again.report.summary.notices.contains { $0.contains("could not be reached") })
        #expect(mailPage(again) == "https://mail.example.invalid/account/password")

        clock.withLock { $0 += 3600 }
        let asked2 = site.asked.withLock { $0 }
        #expect(try await h.app.audit(vault).made == again.made)
        #expect(site.asked.withLock { $0 } == asked2)
    }

    @Test func theGeneratorHonoursRulesAndLength() {
        let digits = WebApp.generate(
            length: "",
            rules: "required: digit; allowed: digit; minlength: 9; maxlength: 9;",
            domain: ""
        )
        #expect(digits.password?.count == 9 && digits.password?.allSatisfy(\.isNumber) == true)
        let long = WebApp.generate(length: "40", rules: "", domain: "")
        #expect(long.password?.count == 40)
        #expect(long.score == 4)
        #expect(WebApp.generate(length: "3", rules: "", domain: "").error != nil)
        #expect(
            WebApp.generate(length: "", rules: "minlength: 30; maxlength: 8;", domain: "").error?.contains(
                "cannot be met"
            ) == true
        )
        let apple = WebApp.generate(length: "", rules: "", domain: "")
        #expect(apple.password?.count == 20)
    }
}
