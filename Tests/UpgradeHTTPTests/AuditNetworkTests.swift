import AccountModification
import Foundation
import KeyhavenApp
import KeyhavenTesting
import SecurityRecommendations
import Synchronization
import Testing
import UpgradeHTTP
import Vault
import _KeyhavenSupport

/// The audit's network half over real HTTP (issue 27): with the network unreachable (names that
/// never resolve, ports that refuse) and with stand-in sites that answer only after 5 s, it
/// finishes within its budget with every offline finding, names the sites it could not reach,
/// keeps what it learned in the vault, and the next audit starts from that instead of asking again.
@Suite(.offCooperativePool)
struct AuditNetworkTests {
    /// The real probe and manifest reader (the process's shared client), counting what they ask.
    final class Counting: WellKnownProbe, ManifestReader {
        let probe = HTTPWellKnownProbe()
        let reader = HTTPManifestReader()
        let asked = Mutex(0)

        var count: Int { asked.withLock { $0 } }

        func get(_ url: String) async -> ProbeResponse? {
            asked.withLock { $0 += 1 }
            return await probe.get(url)
        }

        func manifest(for origin: ServiceOrigin) async throws(ManifestError) -> AccountModificationManifest {
            asked.withLock { $0 += 1 }
            return try await reader.manifest(for: origin)
        }
    }

    /// The sites (origins) of the credentials `report` flags: the ones an audit asks.
    static func flaggedSites(_ report: AuditReport, _ vault: Vault) throws -> Set<String> {
        let flagged = Set(report.items.filter { !$0.issues.isEmpty }.map(\.id))
        return Set(
            try vault.list().credentials.filter { flagged.contains($0.id.rawValue) }
                .compactMap { ChangePasswordDiscovery.origin(for: $0.services[0].identifier) }
        )
    }

    /// `count` credentials on `origins` in turn: every third one weak, every fourth reusing one
    /// password (so most are flagged and their sites asked), the rest strong and unique.
    static func fill(_ vault: Vault, origins: [String], count: Int) throws {
        for index in 0..<count {
            let password =
                index % 3 == 0
                ? "password\(index % 7)" : index % 4 == 1 ? "Shared-Passw0rd-2024!" : "k7#Qv!p2Lx9@wZ\(index)r4Tm"
            try vault.add(
                CredentialContent(
                    services: [ServiceIdentifier(origins[index % origins.count] + "/login")],
                    user: "user\(index)",
                    password: password
                )
            )
        }
    }

    static func service(
        _ network: Counting,
        now: @escaping @Sendable () -> Date,
        limits: SiteLookups.Limits = .init()
    )
        -> AuditService
    {
        AuditService(
            breachSource: .none(reason: "tests"),
            network: .init(probe: network, manifests: network),
            lookupLimits: limits,
            now: now
        )
    }

    /// Names that never resolve (`.invalid`) and loopback ports that refuse: 310 credentials are
    /// audited in well under the time an offline audit used to take, the next audit asks nobody,
    /// and once the backoff has passed the sites are asked again.
    @Test func withTheNetworkUnreachableTheAuditFinishesAtOnceAndTheNextStartsFromTheVault() async throws {
        let clock = TestClock(Date(timeIntervalSince1970: 1_800_000_000))
        let test = try TestVault(now: clock.now)
        let refusing = try (0..<5).map { _ in "http://127.0.0.1:\(try LoopbackPort.unused())" }
        let origins = (0..<60).map { "https://login.site\($0).invalid" } + refusing
        try Self.fill(test.vault, origins: origins, count: 310)
        let network = Counting()
        let started = ContinuousClock.now
        let first = try await Self.service(network, now: clock.now).run(test.vault)
        let elapsed = ContinuousClock.now - started
        // (Benchmarks/scripts/audit_offline_benchmark.sh times the CLI exactly; this margin is for CI.)
        #expect(elapsed < .seconds(10), "\(elapsed)")
        // Every offline finding is there.
        let summary = first.report.summary
        #expect(summary.credentials == 310)
        #expect(summary.weak > 100 && summary.reused > 50)
        #expect(first.report.items.filter { !$0.issues.isEmpty }.count == summary.withIssues)
        // Every flagged site is known as not reached, none is left pending.
        let flagged = try Self.flaggedSites(first.report, test.vault)
        #expect(summary.unreachableSites == flagged.count)
        #expect(summary.pendingSites == 0)
        #expect(summary.notices.contains { $0.contains("sites could not be reached") })
        #expect(try test.vault.siteRecords().count == flagged.count)

        // The next audit starts from the vault: nobody is asked.
        let asked = network.count
        #expect(asked > 0)
        let again = try await Self.service(network, now: clock.now).run(test.vault)
        #expect(network.count == asked)
        #expect(again.report.summary.unreachableSites == flagged.count)
        // Also from another process's point of view (a fresh connection).
        let reopened = try test.reopen(now: clock.now)
        _ = try await Self.service(network, now: clock.now).run(reopened)
        #expect(network.count == asked)

        // After the first backoff (5 minutes) they are asked again.
        clock.advance(by: 301)
        _ = try await Self.service(network, now: clock.now).run(test.vault)
        #expect(network.count > asked)
    }

    /// Every site answers after 5 s: each is given its time and no more, all within the budget;
    /// the offline report is complete before any site answers, and updates show sites pending.
    @Test func slowSitesAreCutShortAndTheOfflineReportComesFirst() async throws {
        // 4 sites: every third credential is weak, so each site has one (all are 127.0.0.1, one
        // backend, so the shared password is not reuse).
        let sites = try StandInSites(count: 4, delay: .seconds(5))
        defer { sites.stop() }
        let test = try TestVault()
        try Self.fill(test.vault, origins: sites.origins, count: 24)
        let network = Counting()
        let limits = SiteLookups.Limits(perSite: .milliseconds(700), budget: .seconds(3))
        let live = await Self.service(network, now: { Date() }, limits: limits).start(
            try test.vault.list().credentials,
            store: .vault(test.vault)
        )
        // No site was asked for the offline report, and it has every finding.
        #expect(network.count == 0)
        let offline = live.report
        #expect(offline.summary.credentials == 24 && offline.summary.withIssues > 0)
        #expect(offline.summary.unreachableSites == 0)
        let flagged = try Self.flaggedSites(offline, test.vault)
        #expect(flagged.count >= 3 && Set(live.due.sites) == flagged)

        let updates = Mutex<[AuditSummary]>([])
        let started = ContinuousClock.now
        await live.lookUp(interval: .zero) { report in updates.withLock { $0.append(report.summary) } }
        let elapsed = ContinuousClock.now - started
        #expect(elapsed < .seconds(4), "\(elapsed)")
        #expect(updates.withLock { $0 }.contains { $0.pendingSites > 0 })
        let final = live.report.summary
        #expect(final.pendingSites == 0 && final.unreachableSites == flagged.count)
        #expect(final.withIssues == offline.summary.withIssues && final.weak == offline.summary.weak)
        #expect(!sites.requests.isEmpty)
        let records = try test.vault.siteRecords()
        #expect(records.count == flagged.count)
        let knowledge = try records.map { try JSONDecoder().decode(SiteKnowledge.self, from: $0.content) }
        #expect(knowledge.allSatisfy { $0.status == .unreachable && $0.failures == 1 })
    }

    /// A site that answers is remembered a week: its change-password page and upgrade offer come
    /// from the vault on the next audit, with nobody asked.
    @Test func whatASiteSaidIsShownNextTimeWithoutAskingIt() async throws {
        let sites = try StandInSites(count: 1, delay: .zero) { path in
            switch path {
            case "/.well-known/change-password": .init(status: 302, location: "/account/password")
            case "/account/password": .init(status: 200, body: "change it here")
            default: .notFound
            }
        }
        defer { sites.stop() }
        let test = try TestVault()
        try Self.fill(test.vault, origins: sites.origins, count: 3)
        let network = Counting()
        let first = try await Self.service(network, now: { Date() }).run(test.vault)
        let page = sites.origins[0] + "/account/password"
        #expect(first.report.items.contains { $0.actions.changePasswordURL == page })
        #expect(first.report.summary.unreachableSites == 0)
        let asked = network.count
        let second = try await Self.service(network, now: { Date() }).run(test.vault)
        #expect(network.count == asked)
        #expect(second.report.items.contains { $0.actions.changePasswordURL == page && $0.actions.upgrade != nil })
    }
}
