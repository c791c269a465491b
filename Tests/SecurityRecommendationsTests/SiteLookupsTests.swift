import Foundation
import KeyhavenTesting
import SecurityRecommendations
import Synchronization
import Testing
import Vault

/// The site lookups' limits, with scripted sites (the HTTP probes against local servers and an
/// unreachable network are in UpgradeHTTPTests): many at once, a time per site, one budget, and a
/// network that fails everywhere stops them at once. On a thread of its own: the deadlines are real
/// time, and a test elsewhere computing on the cooperative pool must not make them fire.
@Suite(.offCooperativePool)
struct SiteLookupsTests {
    /// A site per origin: `delay` before it answers (cancellable), `nil` status for a network error.
    final class Sites: WellKnownProbe, UpgradeOfferSource {
        let answer: @Sendable (String) -> (delay: Duration, status: Int?)
        let asked = Mutex<[String]>([])
        let inFlight = Mutex((now: 0, most: 0))

        init(_ answer: @escaping @Sendable (String) -> (delay: Duration, status: Int?)) {
            self.answer = answer
        }

        func get(_ url: String) async -> ProbeResponse? {
            let site = Self.origin(of: url)
            asked.withLock { $0.append(url) }
            inFlight.withLock {
                $0.now += 1
                $0.most = max($0.most, $0.now)
            }
            defer { inFlight.withLock { $0.now -= 1 } }
            let (delay, status) = answer(site)
            do {
                try await Task.sleep(for: delay)
            } catch {
                return nil  // cancelled, as an HTTP request would be
            }
            guard let status else { return nil }
            if url.hasSuffix("/.well-known/change-password") {
                return ProbeResponse(status: status, finalURL: site + "/account/password")
            }
            return ProbeResponse(status: 404, finalURL: url)
        }

        func upgradeOffer(service identifier: String) async -> UpgradeOffer? {
            let (delay, status) = answer(identifier)
            guard (try? await Task.sleep(for: delay)) != nil, status != nil else { return nil }
            return UpgradeOffer(strongPassword: true, signIn: false)
        }

        static func origin(of url: String) -> String {
            let afterScheme = url.range(of: "://").map { url[$0.upperBound...] } ?? url[...]
            let host = afterScheme.prefix { $0 != "/" }
            return url.prefix { $0 != ":" } + "://" + host
        }

        var sitesAsked: Set<String> { Set(asked.withLock { $0 }.map(Self.origin(of:))) }
    }

    static func lookups(_ sites: Sites, _ limits: SiteLookups.Limits, now: Date = Date()) -> SiteLookups {
        SecurityAudit(
            breachSource: .none(reason: "tests"),
            discovery: ChangePasswordDiscovery(probe: sites),
            upgradeOffers: sites,
            lookupLimits: limits,
            now: { now }
        ).siteLookups
    }

    static let origins = (0..<300).map { "https://site\($0).example" }

    /// Every site failing at once (DNS gives nothing): after a few, the network counts as down and
    /// the rest are not contacted — they are recorded as not asked, to be asked after a backoff.
    @Test func aNetworkThatFailsEverywhereStopsTheLookupsAtOnce() async throws {
        let sites = Sites { _ in (.milliseconds(20), nil) }
        let started = ContinuousClock.now
        let outcome = await Self.lookups(sites, .init(networkDownGrace: .milliseconds(50))).lookUp(Self.origins)
        #expect(ContinuousClock.now - started < .seconds(2))
        #expect(outcome.networkDown)
        #expect(outcome.learned.count == 300 && outcome.notLookedUp.isEmpty)
        #expect(sites.sitesAsked.count < 100, "\(sites.sitesAsked.count) sites were contacted")
        #expect(outcome.learned.allSatisfy { $0.status != .answered && $0.failures == 1 })
        #expect(outcome.learned.contains { $0.status == .notAsked })
    }

    /// Dead sites fail first and the network looks down, while a live one is still answering: no
    /// more sites are asked, and the one under way keeps its answer (the web app's progressive
    /// page showed the slow site as unreachable when its lookup was cut short here).
    @Test func aLookupUnderWayKeepsItsAnswerWhenTheNetworkLooksDown() async throws {
        let sites = Sites { origin in
            origin == "https://site3.example" ? (.milliseconds(400), 200) : (.milliseconds(20), nil)
        }
        let origins = Array(Self.origins.prefix(100))
        let outcome = await Self.lookups(sites, .init(concurrency: 4, networkDownGrace: .milliseconds(50)))
            .lookUp(origins)
        #expect(outcome.networkDown)
        let slow = try #require(outcome.learned.first { $0.origin == "https://site3.example" })
        #expect(slow.status == .answered)
        #expect(slow.changePasswordURL == "https://site3.example/account/password")
        #expect(sites.sitesAsked.count < 100, "\(sites.sitesAsked.count) sites were contacted")
        #expect(outcome.learned.contains { $0.status == .notAsked })
    }

    /// A round cancelled while a site is still answering (the web app replaced its audit when the
    /// settings changed, or the vault locked): what was cut short is not kept as the site's answer,
    /// so the next round asks it again (it showed as unreachable for the length of its backoff).
    @Test func aCancelledRoundKeepsNothingItCutShort() async throws {
        let sites = Sites { origin in origin == "https://site0.example" ? (.seconds(3), 200) : (.zero, 200) }
        let lookups = Self.lookups(sites, .init(networkDownAfter: 1000))
        let origins = Array(Self.origins.prefix(3))
        let round = Task { await lookups.lookUp(origins) }
        try await Task.sleep(for: .milliseconds(300))
        round.cancel()
        let outcome = await round.value
        #expect(!outcome.learned.contains { $0.origin == "https://site0.example" })
        #expect(outcome.notLookedUp == ["https://site0.example"])
        #expect(outcome.learned.map(\.origin).sorted() == ["https://site1.example", "https://site2.example"])
    }

    /// Sites that no longer exist fail at once while live ones take a moment: not a dead network.
    @Test func deadSitesAmongLiveOnesDoNotStopTheLookups() async throws {
        let sites = Sites { origin in origin.hasSuffix("1.example") ? (.zero, nil) : (.milliseconds(100), 200) }
        let origins = Array(Self.origins.prefix(40))
        let outcome = await Self.lookups(sites, .init(networkDownGrace: .milliseconds(500))).lookUp(origins)
        #expect(!outcome.networkDown)
        #expect(outcome.learned.filter { $0.status == .answered }.count == 36)
        let answered = try #require(outcome.learned.first { $0.origin == "https://site2.example" })
        #expect(answered.changePasswordURL == "https://site2.example/account/password")
        #expect(answered.upgrade == UpgradeOffer(strongPassword: true, signIn: false))
    }

    /// Every site answering after 5 s: each is cut short after its time, many are asked at once,
    /// and the whole round ends within its budget, the sites it had no time for left for later.
    @Test func slowSitesAreCutShortWithinTheBudget() async throws {
        let sites = Sites { _ in (.seconds(5), 200) }
        let limits = SiteLookups.Limits(
            concurrency: 16,
            perSite: .milliseconds(300),
            budget: .milliseconds(900),
            networkDownAfter: 1000
        )
        let started = ContinuousClock.now
        let outcome = await Self.lookups(sites, limits).lookUp(Self.origins)
        let elapsed = ContinuousClock.now - started
        #expect(elapsed < .milliseconds(1900), "\(elapsed)")
        #expect(sites.inFlight.withLock { $0.most } >= 16)
        #expect(!outcome.learned.isEmpty && outcome.learned.allSatisfy { $0.status == .unreachable })
        #expect(!outcome.notLookedUp.isEmpty)
        #expect(outcome.learned.count + outcome.notLookedUp.count == 300)
    }

    /// A lookup that fails keeps what an earlier one learned, and asks again after a backoff that
    /// doubles; an answer is kept a week.
    @Test func knowledgeExpiresWithBackoff() async throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let policy = SiteKnowledge.Policy.standard
        #expect(policy.expiry(of: .answered, failures: 0, at: now) == now.addingTimeInterval(7 * 86_400))
        #expect(policy.expiry(of: .unreachable, failures: 1, at: now) == now.addingTimeInterval(300))
        #expect(policy.expiry(of: .unreachable, failures: 3, at: now) == now.addingTimeInterval(1200))
        #expect(policy.expiry(of: .notAsked, failures: 40, at: now) == now.addingTimeInterval(86_400))

        let known = SiteKnowledge(
            origin: "https://site1.example",
            status: .answered,
            changePasswordURL: "https://site1.example/account/password",
            checked: now.addingTimeInterval(-8 * 86_400),
            expires: now.addingTimeInterval(-86_400)
        )
        let down = Sites { _ in (.zero, nil) }
        let lookups = Self.lookups(down, .init(networkDownAfter: 1000), now: now)
        #expect(lookups.due(["https://site1.example"], known: [known.origin: known]) == ["https://site1.example"])
        let outcome = await lookups.lookUp(["https://site1.example"], known: [known.origin: known])
        let after = try #require(outcome.learned.first)
        #expect(after.status == .unreachable && after.failures == 1)
        #expect(after.changePasswordURL == known.changePasswordURL)
        #expect(after.expires == now.addingTimeInterval(300))
        #expect(lookups.due(["https://site1.example"], known: [after.origin: after]).isEmpty)
    }
}
