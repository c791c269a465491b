import AccountModification
import AsyncHTTPClient
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import KeyhavenApp
import KeyhavenTesting
import SecurityRecommendations
import Testing
import UpgradeHTTP
import Vault
import _KeyhavenSupport

/// Change-password discovery against real local HTTP servers: one that redirects correctly, one that
/// answers 200 for everything (must not be trusted), and one that is down.
struct ChangePasswordDiscoveryTests {
    /// Generous limits: the suite shares two cores with every other suite, and the limits only
    /// matter when a test fails. (The site that is down refuses connections at once.)
    static let probe: HTTPWellKnownProbe = {
        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(connect: .seconds(30), read: .seconds(30))
        configuration.redirectConfiguration = .disallow
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPWellKnownProbe(
            client: HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration),
            timeout: .seconds(30)
        )
    }()

    /// Upgrade offers through the manifest reader `keyhaven upgrade` uses.
    static func offers() -> ManifestUpgradeOffers {
        ManifestUpgradeOffers(reader: HTTPManifestReader(client: probe.client, timeout: .seconds(30)))
    }

    static func wellBehaved() -> Router<BasicRequestContext> {
        let router = Router()
        router.get("/.well-known/change-password") { _, _ in
            Response(status: .found, headers: [.location: "/account/password"])
        }
        router.get("/account/password") { _, _ in "change your password here" }
        router.get("/.well-known/account-modification") { _, _ in
            Response(
                status: .ok,
                headers: [.contentType: "application/json"],
                body: .init(
                    byteBuffer: ByteBuffer(
                        string: #"""
                            {"endpoint": "/account-modification", "supportsStrongPasswordChange": true,
                             "supportsUpgradeToSignIn": false}
                            """#
                    )
                )
            )
        }
        return router  // anything else: 404
    }

    /// Serves `router` on a loopback port for the length of `body`, which gets the site's origin
    /// (`http://127.0.0.1:PORT`).
    static func serving(
        _ router: Router<BasicRequestContext>,
        _ body: @Sendable (_ origin: String) async throws -> Void
    ) async throws {
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { client in try await body("http://127.0.0.1:\(client.port!)") }
    }

    static func answersEverything() -> Router<BasicRequestContext> {
        let router = Router()
        router.get("**") { _, _ in "welcome" }
        return router
    }

    @Test func trustsASiteThatRedirectsCorrectly() async throws {
        try await Self.serving(Self.wellBehaved()) { origin in
            let discovery = ChangePasswordDiscovery(probe: Self.probe)
            let found = await discovery.changePasswordURL(service: "\(origin)/login", domain: "127.0.0.1")
            #expect(found.url == "\(origin)/account/password")
            #expect(found.source == "well-known")
            let offer = await Self.offers().upgradeOffer(service: "\(origin)/login")
            #expect(offer == UpgradeOffer(strongPassword: true, signIn: false))
        }
    }

    @Test func distrustsASiteThatAnswers200ToEverything() async throws {
        try await Self.serving(Self.answersEverything()) { origin in
            let discovery = ChangePasswordDiscovery(probe: Self.probe)
            let found = await discovery.changePasswordURL(service: origin, domain: "127.0.0.1")
            #expect(found.url == nil)
            #expect(
                await Self.offers().upgradeOffer(service: origin) == UpgradeOffer(strongPassword: false, signIn: false)
            )
        }
    }

    /// An audit names the sites it could not reach (their change-password page and upgrades are
    /// unknown, not absent), once per site, and counts them in its summary; a site that answers is
    /// not among them.
    @Test func theAuditCountsSitesItCouldNotReach() async throws {
        try await Self.serving(Self.wellBehaved()) { up in
            let closed = try LoopbackPort.unused()
            let down = "http://127.0.0.1:\(closed)"
            let test = try TestVault()
            for (index, service) in [up, down, down + "/other"].enumerated() {
                try test.vault.add(
                    CredentialContent(services: [.init(service)], user: "user\(index)", password: "Password1234")
                )
            }
            let reader = HTTPManifestReader(client: Self.probe.client, timeout: .seconds(30))
            let network = AuditService.Network(probe: Self.probe, manifests: reader)
            let audit = AuditService(breachSource: .none(reason: "test"), network: network)
            let report = try await audit.run(test.vault).report
            #expect(report.summary.unreachableSites == 1)
            #expect(
                report.summary.notices.contains(
                    "1 site could not be reached (\(down)): its change-password page and upgrades may be missing."
                )
            )
            let reached = try #require(report.items.first { $0.service == "127.0.0.1" && $0.user == "user0" })
            #expect(reached.actions.changePasswordURL == "\(up)/account/password")
            #expect(reached.actions.upgrade == UpgradeOffer(strongPassword: true, signIn: false))
        }
    }

    /// The audit and `keyhaven upgrade` read manifests the same way: a redirect within the origin is
    /// followed, one to another origin is not (the audit advertised such upgrades, which `upgrade`
    /// then refused).
    @Test func manifestsFollowRedirectsOnlyWithinTheOrigin() async throws {
        let router = Router()
        router.get("/.well-known/account-modification") { request, _ in
            // Asked as localhost: sends the reader to 127.0.0.1 (another origin, same server).
            let authority = request.head.authority ?? ""
            let location =
                authority.hasPrefix("localhost:")
                ? "http://127.0.0.1:\(authority.dropFirst("localhost:".count))/manifest.json" : "/manifest.json"
            return Response(status: .found, headers: [.location: location])
        }
        router.get("/manifest.json") { _, _ in
            Response(
                status: .ok,
                headers: [.contentType: "application/json"],
                body: .init(
                    byteBuffer: ByteBuffer(
                        string:
                            #"{"endpoint": "/amp", "supportsStrongPasswordChange": true, "supportsUpgradeToSignIn": false}"#
                    )
                )
            )
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { client in
            let origin = try #require(ServiceOrigin("http://127.0.0.1:\(client.port!)"))
            let reader = HTTPManifestReader(client: Self.probe.client, timeout: .seconds(30))
            let manifest = try await reader.manifest(for: origin)
            #expect(manifest.endpoint == "\(origin.serialized)/amp")
            #expect(await Self.offers().upgradeOffer(service: origin.serialized)?.strongPassword == true)

            let other = try #require(ServiceOrigin("http://localhost:\(client.port!)"))
            await #expect(throws: ManifestError(.crossOrigin, "")) { try await reader.manifest(for: other) }
            #expect(await Self.offers().upgradeOffer(service: other.serialized)?.strongPassword == false)
        }
    }

    /// Security review Low #14: a site's change-password redirect made `keyhaven audit` GET a UNIX
    /// socket (`http+unix://…/containers/json`). The probe now follows only https pages of the same
    /// site: the socket is never contacted, nor another host, and nothing is reported as found.
    @Test func discoveryNeverFollowsRedirectsOffTheSite() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ssrf-\(UUID().uuidString.prefix(8))"
        )
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let socketPath = folder.appendingPathComponent("ssrf.sock").path
        // A UNIX-socket HTTP server that records whether it was asked anything.
        let contacted = TestFlag()
        let socketRouter = Router()
        socketRouter.get("**") { _, _ in
            contacted.raise()
            return "socket"
        }
        let socketApp = Application(
            router: socketRouter,
            configuration: .init(address: .unixDomainSocket(path: socketPath))
        )
        let targets = [
            "http+unix://\(socketPath.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")/containers/json",
            "https://evil.example/steal", "http://localhost:1/x", "file:///etc/passwd",
        ]
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await socketApp.runService() }
            // The socket must be listening, or the test could not fail.
            for _ in 0..<100 where !FileManager.default.fileExists(atPath: socketPath) {
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(FileManager.default.fileExists(atPath: socketPath))
            for target in targets {
                let router = Router()
                router.get("/.well-known/change-password") { _, _ in
                    Response(status: .found, headers: [.location: target])
                }
                try await Self.serving(router) { origin in
                    let response = await Self.probe.get("\(origin)/.well-known/change-password")
                    #expect(response?.status == 302, "\(target)")
                    #expect(response?.finalURL == "\(origin)/.well-known/change-password")
                    let found = await ChangePasswordDiscovery(probe: Self.probe).changePasswordURL(
                        service: origin,
                        domain: "127.0.0.1"
                    )
                    #expect(found.url == nil, "\(target)")
                }
            }
            group.cancelAll()
        }
        #expect(!contacted.isRaised)
    }

    /// A manifest whose endpoint is another origin is refused: the old and new passwords would be
    /// posted there.
    @Test func manifestsPointingElsewhereAreRefused() throws {
        let origin = try #require(ServiceOrigin("https://shop.example"))
        for endpoint in ["https://evil.example/amp", "http://shop.example/amp", "//evil.example/amp"] {
            let manifest = AccountModificationManifest(
                endpoint: endpoint,
                supportsStrongPasswordChange: true,
                supportsUpgradeToSignIn: false
            )
            #expect(throws: ManifestError(.crossOrigin, "")) { try manifest.resolved(for: origin) }
        }
        let good = AccountModificationManifest(
            endpoint: "/amp",
            supportsStrongPasswordChange: true,
            supportsUpgradeToSignIn: false
        )
        #expect(try good.resolved(for: origin).endpoint == "https://shop.example/amp")
    }

    /// A chain of slow redirects (0.7 s each, each alone well within the 1.5 s limit) shares one
    /// deadline: the probe and the manifest reader give up by it instead of allowing each of six
    /// requests the whole limit.
    @Test(.timeLimit(.minutes(1))) func aChainOfSlowRedirectsSharesOneDeadline() async throws {
        let router = Router()
        router.get("/.well-known/account-modification") { _, _ -> Response in
            try await Task.sleep(for: .milliseconds(700))
            return Response(status: .found, headers: [.location: "/hop/1"])
        }
        router.get("/hop/:n") { _, context -> Response in
            let hop = context.parameters.get("n", as: Int.self) ?? 0
            guard hop < 5 else {
                return Response(
                    status: .ok,
                    headers: [.contentType: "application/json"],
                    body: .init(
                        byteBuffer: ByteBuffer(
                            string:
                                #"{"endpoint": "/amp", "supportsStrongPasswordChange": true, "supportsUpgradeToSignIn": false}"#
                        )
                    )
                )
            }
            try await Task.sleep(for: .milliseconds(700))
            return Response(status: .found, headers: [.location: "/hop/\(hop + 1)"])
        }
        try await Self.serving(router) { origin in
            let probe = HTTPWellKnownProbe(client: Self.probe.client, timeout: .milliseconds(1500))
            let start = ContinuousClock.now
            #expect(await probe.get(origin + "/hop/0") == nil)
            #expect(ContinuousClock.now - start < .seconds(12))
            let reader = HTTPManifestReader(client: Self.probe.client, timeout: .milliseconds(1500))
            let service = try #require(ServiceOrigin(origin))
            await #expect(throws: ManifestError(.unreachable, "")) { try await reader.manifest(for: service) }
        }
    }

    /// A site that sends its headers and then stalls (or trickles) the body: the probe has no
    /// answer (nil, never an empty page) and the manifest reader fails, both by the deadline.
    @Test(.timeLimit(.minutes(1)), arguments: [StallingHTTPServer.Stall.silent, .trickle])
    func aBodyThatStallsIsNoAnswer(_ stall: StallingHTTPServer.Stall) async throws {
        let server = try StallingHTTPServer(stall: stall)
        defer { server.close() }
        let probe = HTTPWellKnownProbe(client: Self.probe.client, timeout: .seconds(1))
        let start = ContinuousClock.now
        #expect(await probe.get(server.url + "/.well-known/change-password") == nil)
        #expect(ContinuousClock.now - start < .seconds(11))
        let reader = HTTPManifestReader(client: Self.probe.client, timeout: .seconds(1))
        let service = try #require(ServiceOrigin(server.url))
        await #expect(throws: ManifestError(.unreachable, "")) { try await reader.manifest(for: service) }
        #expect(server.stalledPaths == ["/.well-known/change-password", "/.well-known/account-modification"])
    }

    @Test func aDownSiteGivesNothing() async throws {
        let discovery = ChangePasswordDiscovery(probe: Self.probe)
        let found = await discovery.changePasswordURL(service: "http://127.0.0.1:1/login", domain: "127.0.0.1")
        #expect(found.url == nil)
        #expect(await Self.offers().upgradeOffer(service: "http://127.0.0.1:1/login") == nil)
    }

    @Test func fallsBackToApplesQuirks() async throws {
        let discovery = ChangePasswordDiscovery(probe: nil)
        let found = await discovery.changePasswordURL(service: "https://www.11st.co.kr/login", domain: "www.11st.co.kr")
        #expect(found.url == "https://www.11st.co.kr/register/popupModifyPWD.tmall")
        #expect(found.source == "quirk")
        #expect(
            await discovery.changePasswordURL(service: "https://nothing.example", domain: "nothing.example").url == nil
        )
    }

    @Test func onlyHTTPSOrLoopbackOriginsAreProbed() {
        #expect(ChangePasswordDiscovery.origin(for: "https://Example.com/login?x=1") == "https://example.com")
        #expect(ChangePasswordDiscovery.origin(for: "http://example.com/login") == "https://example.com")
        #expect(ChangePasswordDiscovery.origin(for: "http://127.0.0.1:8080/x") == "http://127.0.0.1:8080")
        #expect(ChangePasswordDiscovery.origin(for: "example.org") == "https://example.org")
        #expect(ChangePasswordDiscovery.origin(for: "androidapp://com.example") == nil)
    }
}
