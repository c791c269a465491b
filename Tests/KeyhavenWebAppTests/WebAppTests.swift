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
import UpgradeHTTP
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

        /// Pages wait up to `patience` for the audit's offline findings (never for the network):
        /// long here, so a busy test machine does not make a page show "checking…".
        init(
            auditNetwork: AuditService.Network = .none,
            now: @escaping @Sendable () -> Date = { Date() },
            credentials more: [(String, String, String)] = [],
            patience: Duration = .seconds(30),
            lookups: SiteLookups.Limits = SiteLookups.Limits(budget: .seconds(60))
        ) async throws {
            testVault = try TestVault()
            for (service, user, password) in [
                ("https://mail.example.invalid", "ada", "Password1234"),
                ("https://shop.other.invalid", "ada", "Password1234"),
                ("https://bank.example.invalid", "ada", "k7#Qv!p2Lx9@wZr4Tm"),
            ] + more {
                _ = try testVault.vault.add(
                    CredentialContent(services: [ServiceIdentifier(service)], user: user, password: password)
                )
            }
            agent = AutoFillAgent(vaultURL: testVault.url, allowInsecureKDF: true)
            app = WebApp(
                agent: agent,
                services: .init(
                    breachSource: { _, _ in .none(reason: "tests") },
                    auditNetwork: { _ in auditNetwork },
                    upgradeEnvironment: NoUpgrades()
                ),
                configuration: .init(now: now, auditPatience: patience, auditLookups: lookups)
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

        /// A browser's session: the cookie header, the CSRF token, and the base of its paths.
        struct Session {
            var cookie: String
            var csrf: String
            /// `/s/CAPABILITY`.
            var base: String

            func with(csrf: String) -> Session { Session(cookie: cookie, csrf: csrf, base: base) }
            func rebased(_ base: String) -> Session { Session(cookie: cookie, csrf: csrf, base: base) }
        }

        /// Launches a session as a browser does: the launch page sets the cookie and leads on to the
        /// session's paths.
        func session(unlock: Bool = true) async throws -> Session {
            let launch = app.launchURL()
            let reply = try await request(String(launch.dropFirst(origin.count)))
            let setCookie = try #require(reply.headers.first(name: "Set-Cookie"))
            let cookie = String(setCookie.split(separator: ";")[0])
            let link = try #require(Self.continueLink(in: reply.body))
            #expect(link.hasPrefix("/s/") && link.hasSuffix("/"))
            var session = Session(cookie: cookie, csrf: "", base: String(link.dropLast()))
            if unlock { try await agent.unlock(masterPassword: testVault.masterPassword) }
            let page = try await get(unlock ? "/settings" : "/unlock", session)
            session.csrf = try #require(Self.csrf(in: page.body))
            return session
        }

        static func csrf(in page: String) -> String? {
            guard let range = page.range(of: #"name="csrf-token" content=""#) else { return nil }
            return String(page[range.upperBound...].prefix { $0 != "\"" })
        }

        /// Where the launch page leads (`/s/CAPABILITY/`).
        static func continueLink(in page: String) -> String? {
            guard let range = page.range(of: #"id="continue" href=""#) else { return nil }
            return String(page[range.upperBound...].prefix { $0 != "\"" })
        }

        /// `GET` of the app path `path` in the session (its base, its cookie).
        func get(
            _ path: String,
            _ session: Session,
            headers: [(String, String)] = [],
            host: String? = nil
        ) async throws -> Reply {
            try await request(session.base + path, headers: [("Cookie", session.cookie)] + headers, host: host)
        }

        func post(
            _ path: String,
            _ session: Session,
            fields: [(String, String)] = [],
            origin: String? = nil
        )
            async throws -> Reply
        {
            try await request(
                session.base + path,
                method: .POST,
                headers: [
                    ("Cookie", session.cookie), ("Origin", origin ?? self.origin),
                    ("Content-Type", "application/x-www-form-urlencoded"),
                ],
                body: FormURLEncoding.encode([("csrf", session.csrf)] + fields)
            )
        }
    }

    @Test func theLaunchSecretLetsOneBrowserInOnceWithACookieScopedToTheSessionsPaths() async throws {
        let h = try await Harness()
        let launch = h.app.launchURL()
        #expect(launch.hasPrefix("http://127.0.0.1:\(h.port)/launch?secret="))
        let path = String(launch.dropFirst(h.origin.count))
        let first = try await h.request(path)
        // A page that moves on by itself (a same-origin navigation carries the Strict cookie; a
        // redirect started from the launch file, a cross-site initiator, would not).
        #expect(first.status == 200)
        let link = try #require(Harness.continueLink(in: first.body))
        #expect(link.hasPrefix("/s/") && link.hasSuffix("/") && link.count > 40)
        #expect(first.body.contains(#"<meta http-equiv="refresh" content="0;url=\#(link)">"#))
        let cookie = try #require(first.headers.first(name: "Set-Cookie"))
        #expect(cookie.hasPrefix("keyhaven_session="))
        #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"))
        let attributes = cookie.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(attributes.contains("Path=\(link)"), "the cookie goes to the session's paths only")
        let again = try await h.request(path)
        #expect(again.status == 401)
        #expect(again.headers.first(name: "Set-Cookie") == nil)
        #expect(try await h.request("/launch?secret=made-up").status == 401)
        // Without the cookie nothing but the launch and the assets answers, capability or not.
        let refused = try await h.request("/vault")
        #expect(refused.status == 401)
        #expect(refused.body.contains("keyhaven ui"))
        #expect(try await h.request(link + "vault").status == 401)
        #expect(try await h.request("/api/audit").status == 401)
        #expect(try await h.request("/assets/keyhaven.css").status == 200)
        // With both, the session's pages answer (the agent is locked: its unlock page).
        let jar = String(cookie.split(separator: ";")[0])
        let unlock = try await h.request(link + "unlock", headers: [("Cookie", jar)])
        #expect(unlock.status == 200 && unlock.body.contains(#"action="\#(link)unlock""#))
    }

    /// Security review #5: cookies ignore ports, so the session cookie can reach another server on
    /// 127.0.0.1, whose owner replays it. The cookie alone opens no page and no API, whatever the
    /// Host, the path or the headers; only the app's own pages carry the other half (the capability).
    @Test func aLeakedSessionCookieAloneOpensNothing() async throws {
        let h = try await Harness()
        let session = try await h.session()
        let bank = try #require(
            try h.testVault.vault.list().credentials.first { $0.primaryDomain == "bank.example.invalid" }
        )
        let paths = [
            "/", "/vault", "/vault?q=bank", "/items/\(bank.id.rawValue)", "/recommendations", "/settings", "/pairing",
            "/import", "/api/audit", "/api/items", "/api/items/\(bank.id.rawValue)/password", "/api/status",
        ]
        let other = try LoopbackPort.unused()
        let wrong = "/s/" + String(repeating: "A", count: 43)
        for host in ["127.0.0.1:\(h.port)", "localhost:\(h.port)", "127.0.0.1:\(other)", "attacker.example"] {
            for prefix in ["", wrong, session.base.uppercased()] {
                for path in paths {
                    let reply = try await h.request(
                        prefix + path,
                        headers: [("Cookie", session.cookie), ("X-CSRF-Token", session.csrf)],
                        host: host
                    )
                    #expect([401, 403].contains(reply.status), "\(host) \(prefix)\(path): \(reply.status)")
                    #expect(!reply.body.contains("k7#Qv!p2Lx9@wZr4Tm") && !reply.body.contains("bank.example"))
                    #expect(!reply.body.contains("csrf-token") && reply.headers.first(name: "Set-Cookie") == nil)
                }
            }
        }
        // A state change with the cookie (and even the CSRF token) but no capability changes nothing.
        let lock = try await h.post("/lock", session.with(csrf: session.csrf).rebased(""))
        let stillUnlocked = await h.agent.isUnlocked
        #expect(lock.status == 401 && stillUnlocked)
        // The capability alone (an address seen over a shoulder, in a history) opens nothing either.
        #expect(try await h.request(session.base + "/api/items").status == 401)
        // Together they do.
        let read = try await h.get(
            "/api/items/\(bank.id.rawValue)/password",
            session,
            headers: [("X-CSRF-Token", session.csrf)]
        )
        #expect(read.status == 200 && read.body.contains("k7#Qv!p2Lx9@wZr4Tm"))
    }

    @Test func aLaunchSecretExpires() async throws {
        let clock = TestClock()
        let testVault = try TestVault()
        let agent = AutoFillAgent(vaultURL: testVault.url, allowInsecureKDF: true)
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

    /// Security review #3: the launch URL reaches the browser in a private file, never as an
    /// argument; the file is removed once its secret is used or expired.
    @Test func theLaunchFileIsPrivateAndGoesOnceUsedOrExpired() async throws {
        let clock = TestClock()
        let testVault = try TestVault()
        let folder = try TemporaryDirectory.make().appendingPathComponent("run")
        try PrivateFile.createDirectory(at: folder)
        let app = WebApp(
            agent: AutoFillAgent(vaultURL: testVault.url, allowInsecureKDF: true),
            services: .init(
                breachSource: { _, _ in .none(reason: "") },
                auditNetwork: { _ in .none },
                upgradeEnvironment: NoUpgrades()
            ),
            configuration: .init(now: clock.now, launchLifetime: 60)
        )
        let used = try app.launch(redirectFileIn: folder)
        let file = try #require(used.file)
        #expect(file.deletingLastPathComponent().path == folder.path)
        #expect(file.lastPathComponent.hasPrefix("launch-") && file.lastPathComponent.hasSuffix(".html"))
        let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let page = try String(contentsOf: file, encoding: .utf8)
        #expect(page.contains(#"<meta http-equiv="refresh" content="0;url=\#(used.url)">"#))
        #expect(page.contains(#"<a href="\#(used.url)">"#))
        let secret = String(used.url.split(separator: "=").last ?? "")
        #expect(app.redeemLaunchSecret(secret) != nil)
        #expect(!FileManager.default.fileExists(atPath: file.path), "a used launch file is removed")
        // One nobody used goes when it expires…
        let expired = try #require(try app.launch(redirectFileIn: folder).file)
        clock.advance(by: 61)
        app.expireLaunches()
        #expect(!FileManager.default.fileExists(atPath: expired.path), "an expired launch file is removed")
        // …and when the app stops.
        let unused = try #require(try app.launch(redirectFileIn: folder).file)
        app.stop()
        #expect(!FileManager.default.fileExists(atPath: unused.path))
        // Never into a folder others can enter.
        let open = folder.appendingPathComponent("open")
        try FileManager.default.createDirectory(at: open, withIntermediateDirectories: false)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: open.path)
        #expect(throws: WebAppError.self) { try app.launch(redirectFileIn: open) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: open.path).isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["open"])
    }

    @Test func onlyThisAppsOwnHostIsAnswered() async throws {
        let h = try await Harness()
        let session = try await h.session()
        #expect(try await h.get("/api/audit", session, host: "attacker.example:\(h.port)").status == 403)
        #expect(try await h.get("/api/audit", session, host: "127.0.0.1:1").status == 403)
        // Not `localhost`: browsers may resolve it to ::1, where another user may listen.
        #expect(try await h.get("/api/audit", session, host: "localhost:\(h.port)").status == 403)
        #expect(try await h.get("/api/audit", session, host: "127.0.0.1:\(h.port)").status == 200)
    }

    @Test func stateChangesNeedTheSameOriginAndTheCSRFToken() async throws {
        let h = try await Harness()
        let session = try await h.session()
        #expect(try await h.post("/lock", session, origin: "http://attacker.example").status == 403)
        #expect(try await h.post("/lock", session, origin: "null").status == 403)
        #expect(try await h.post("/lock", session, origin: "http://localhost:\(h.port)").status == 403)
        let noOrigin = try await h.request(
            session.base + "/lock",
            method: .POST,
            headers: [("Cookie", session.cookie), ("Content-Type", "application/x-www-form-urlencoded")],
            body: "csrf=\(session.csrf)"
        )
        #expect(noOrigin.status == 403)
        #expect(try await h.post("/lock", session.with(csrf: "wrong")).status == 403)
        #expect(await h.agent.isUnlocked)
        let locked = try await h.post("/lock", session)
        #expect(locked.status == 303)
        #expect(locked.headers.first(name: "Location") == session.base + "/unlock")
        #expect(await h.agent.isUnlocked == false)
    }

    @Test func everyResponseCarriesTheSecurityHeaders() async throws {
        let h = try await Harness()
        let session = try await h.session()
        for path in ["/", "/vault", "/no-such-page", "/api/audit", "/assets/app.js", "/launch?secret=x"] {
            let reply = try await h.get(path, session)
            let policy = reply.headers.first(name: "Content-Security-Policy") ?? ""
            #expect(policy.contains("frame-ancestors 'none'"), "\(path)")
            #expect(policy.contains("script-src 'self'") && !policy.contains("unsafe-inline"), "\(path)")
            #expect(reply.headers.first(name: "X-Frame-Options") == "DENY", "\(path)")
            #expect(reply.headers.first(name: "Cache-Control") != nil, "\(path)")
        }
        // Pages load no inline script and nothing from elsewhere.
        let page = try await h.get("/", session)
        #expect(!page.body.contains("<script>") && !page.body.contains("https://"))
    }

    @Test func aWrongMasterPasswordUnlocksNothing() async throws {
        let h = try await Harness()
        let session = try await h.session(unlock: false)
        let locked = try await h.get("/vault", session)
        #expect(locked.status == 303 && locked.headers.first(name: "Location") == session.base + "/unlock")
        #expect(try await h.get("/api/audit", session).status == 423)
        let wrong = try await h.post("/unlock", session, fields: [("masterPassword", "not it")])
        #expect(wrong.status == 401)
        #expect(wrong.body.contains("The master password is wrong"))
        #expect(!wrong.body.contains("not it"))
        #expect(await h.agent.isUnlocked == false)
        let right = try await h.post("/unlock", session, fields: [("masterPassword", h.testVault.masterPassword)])
        #expect(right.status == 303)
        #expect(await h.agent.isUnlocked)
    }

    @Test func theAuditAPIIsTheReportTheCLIPrints() async throws {
        let h = try await Harness()
        let session = try await h.session()
        let reply = try await h.get("/api/audit", session)
        #expect(reply.status == 200)
        let outcome = try await AuditService(breachSource: .none(reason: "tests"), network: .none).run(
            h.testVault.vault
        )
        // The servers' one JSON style (compact, keys sorted, ISO 8601 dates): the same document.
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        #expect(reply.body == String(decoding: try encoder.encode(outcome.report), as: UTF8.self))
        // The page groups the same items by severity.
        let page = try await h.get("/recommendations", session)
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
        var page = try await h.get("/recommendations", session)
        #expect(page.body.components(separatedBy: #"class="recommendation""#).count - 1 == 1)
        #expect(page.body.contains(#"id="ignored""#))
        // Kept in the vault: another app on the same vault still hides it.
        #expect(try h.testVault.reopen().agentRecords(kind: "ignored-recommendation").count == 1)
        _ = try await h.post("/recommendations/\(mail.id.rawValue)/restore", session)
        page = try await h.get("/recommendations", session)
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
        let all = try await h.get("/api/items", session)
        #expect(all.body.contains(#""total":4"#))
        let found = try await h.get("/api/items?q=SHOP", session)
        #expect(found.body.contains(#""matched":1"#))
        let page = try await h.get("/vault?q=evil", session)
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
        #expect(try await h.get(path, session).status == 403)
        let read = try await h.get(path, session, headers: [("X-CSRF-Token", session.csrf)])
        #expect(read.status == 200)
        #expect(read.body.contains("k7#Qv!p2Lx9@wZr4Tm"))
        // The item page itself never carries the password.
        let item = try await h.get("/items/\(bank.id.rawValue)", session)
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
            session.base + "/import",
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
        #expect(try await h.get("/api/audit", session).status == 200)
        #expect(h.app.state.withLock { $0.audit != nil })
        await h.agent.lock()  // as the idle lock or `keyhaven lock` would
        #expect(h.app.state.withLock { $0.audit == nil && $0.previews.isEmpty })
        let page = try await h.get("/vault", session)
        #expect(page.status == 303 && page.headers.first(name: "Location") == session.base + "/unlock")
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
        let items = try await h.get("/api/items?q=bank", session)
        #expect(items.body.contains(#""passkey""#))
        let mail = try await h.get("/api/items?q=mail", session)
        #expect(mail.body.contains("mail.example.invalid") && !mail.body.contains(#""passkey""#))
        let bank = try #require(
            try h.testVault.vault.list().credentials.first { $0.primaryDomain == "bank.example.invalid" }
        )
        let page = try await h.get("/items/\(bank.id.rawValue)", session)
        #expect(
            page.body.contains(#"id="passkeys""#)
                && page.body.contains(String(Base64URL.encode(passkey.credentialID).prefix(10)))
        )
        #expect(!page.body.contains(Base64URL.encode(passkey.privateKey)))
    }

    /// The audit once its lookups are done (they run in the background; pages never wait).
    static func settled(_ app: WebApp, _ vault: Vault) async throws -> AuditCache {
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            let audit = try await app.audit(vault)
            if audit.waitingFor == nil && !audit.lookingUp { return audit }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("the audit's lookups did not finish")
        return try await app.audit(vault)
    }

    /// A site that was down is asked again after its backoff — not each minute, as the audit used to
    /// be redone while sites were unreachable (issue 27) — and once it answered, not for a week.
    @Test func aSiteThatWasDownIsAskedAgainAfterItsBackoff() async throws {
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
        _ = try await h.session()
        let vault = h.testVault.vault
        func mailPage(_ audit: AuditCache) -> String? {
            audit.report.items.first { $0.service == "mail.example.invalid" }?.actions.changePasswordURL
        }
        let first = try await Self.settled(h.app, vault)
        #expect(first.report.summary.unreachableSites == 2)  // mail and shop (weak, reused); bank is fine
        #expect(first.report.summary.notices.contains { $0.contains("2 sites could not be reached") })
        #expect(mailPage(first) == nil)

        site.up.withLock { $0 = true }
        clock.withLock { $0 += 61 }
        let asked = site.asked.withLock { $0 }
        #expect(mailPage(try await Self.settled(h.app, vault)) == nil)  // not yet due
        #expect(site.asked.withLock { $0 } == asked)

        clock.withLock { $0 += 240 }  // 5 minutes and a second: the first backoff is over
        _ = try await h.app.audit(vault)  // a page starts the round of lookups
        let again = try await Self.settled(h.app, vault)
        #expect(again.report.summary.unreachableSites == 0)
        #expect(!again.report.summary.notices.contains { $0.contains("could not be reached") })
        #expect(mailPage(again) == "https://mail.example.invalid/account/password")
        // The offline findings were not made again for it.
        #expect(again.run == first.run && again.generation > first.generation)

        clock.withLock { $0 += 3600 }
        let asked2 = site.asked.withLock { $0 }
        #expect(try await Self.settled(h.app, vault).generation == again.generation)
        #expect(site.asked.withLock { $0 } == asked2)
    }

    /// Issue 27: Unlock, the overview, the vault list and the recommendations answer at once while
    /// every site either cannot be reached (a name that never resolves, a port that refuses) or
    /// answers only after 5 s (stand-ins on loopback); the lookups go on in the background, the
    /// status says so, and once they are over the sites are known as unreachable.
    @Test func pagesAnswerAtOnceWhileSitesAreSlowOrUnreachable() async throws {
        let slow = try StandInSites(count: 3, delay: .seconds(5))
        // One site answers at once (404s): the network is there, only slow for the others.
        let fast = try StandInSites(count: 1, delay: .zero)
        defer {
            slow.stop()
            fast.stop()
        }
        let refusing = "http://127.0.0.1:\(try LoopbackPort.unused())"
        let weak =
            (slow.origins + fast.origins).map { ($0 + "/login", "ada", "sunshine1") }
            + [("https://gone.site.invalid/login", "ada", "sunshine1"), (refusing + "/login", "ada", "sunshine1")]
        let h = try await Harness(
            auditNetwork: .init(probe: HTTPWellKnownProbe(), manifests: HTTPManifestReader()),
            credentials: weak,
            patience: .milliseconds(150)
        )
        var session = try await h.session(unlock: false)
        func timed(_ request: () async throws -> Harness.Reply) async throws -> (Harness.Reply, Duration) {
            let started = ContinuousClock.now
            let reply = try await request()
            return (reply, ContinuousClock.now - started)
        }
        let (unlocked, unlocking) = try await timed {
            try await h.post("/unlock", session, fields: [("masterPassword", h.testVault.masterPassword)])
        }
        #expect(unlocked.status == 303)
        session = session.with(csrf: try #require(Harness.csrf(in: try await h.get("/settings", session).body)))
        var pages: [(String, Duration)] = [("unlock", unlocking)]
        for path in ["/", "/vault", "/recommendations", "/api/items?q=ada", "/"] {
            let (reply, elapsed) = try await timed { try await h.get(path, session) }
            #expect(reply.status == 200, "\(path)")
            pages.append((path, elapsed))
        }
        // Generous for a busy machine; the benchmark measures the real numbers.
        #expect(pages.allSatisfy { $0.1 < .seconds(2) }, "\(pages)")
        // The offline findings run on a background thread (a busy machine gives it little): what
        // follows is about the pages once they are there, with the slow sites still being asked.
        let offline = try await h.app.audit(h.testVault.vault, need: .offline, patience: .seconds(30))
        #expect(offline.waitingFor == nil)
        let overview = try await h.get("/", session)
        #expect(overview.body.contains(#"id="count-credentials">9<"#))
        let recommendations = try await h.get("/recommendations", session)
        #expect(recommendations.body.components(separatedBy: #"class="recommendation""#).count - 1 == 8)
        let updates = try await h.get("/api/audit/updates?since=0", session)
        #expect(updates.body.contains(#""lookingUp":true"#), "\(updates.body)")
        #expect(recommendations.body.contains(#"id="audit-status""#))

        let done = try await Self.settled(h.app, h.testVault.vault)
        // mail and shop (.invalid), the three slow sites, the one gone and the one refusing; not the fast one.
        #expect(done.report.summary.unreachableSites == 7)
        #expect(done.report.summary.pendingSites == 0)
        #expect(!slow.requests.isEmpty)
        let after = try await h.get("/recommendations", session)
        #expect(!after.body.contains(#"id="audit-status""#))
        #expect(try h.testVault.vault.siteRecords().count == 8)
    }

    @Test func theGeneratorHonoursRulesAndLength() async {
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
