public import AccountModification
public import Foundation
public import SecurityRecommendations
public import Vault

/// The use case behind `keyhaven audit` and the web app's recommendations: the vault's credentials
/// through ``SecurityAudit``, with change-password discovery and upgrade offers from the same
/// manifest reader upgrades use, and what sites said kept in the vault (``SiteKnowledgeStore``) so
/// the next audit starts from it. With no network, nothing is contacted (what the vault already
/// knows is still shown).
///
/// Two ways in:
/// - ``run(_:progress:)``: the whole audit, for a command that prints one report;
/// - ``start(_:unreadable:store:progress:)``: a ``LiveAudit`` whose report is ready at once with
///   every offline finding, then ``LiveAudit/lookUp(progress:updated:)`` asks the network and
///   hands over newer reports as sites answer — for a page that must never wait for the network.
public struct AuditService: Sendable {
    /// What the audit may contact.
    public struct Network: Sendable {
        /// Change-password discovery (`/.well-known/change-password`).
        public var probe: (any WellKnownProbe)?
        /// Account-modification manifests (upgrade offers).
        public var manifests: (any ManifestReader)?

        public init(probe: (any WellKnownProbe)?, manifests: (any ManifestReader)?) {
            self.probe = probe
            self.manifests = manifests
        }

        /// Contact nothing.
        public static let none = Network(probe: nil, manifests: nil)
    }

    /// The audit as ``SecurityAudit`` runs it: its discovery and upgrade offers ask the
    /// ``Network`` given to ``init(breachSource:network:reveal:lookupLimits:knowledgePolicy:clock:now:)``.
    public var audit: SecurityAudit

    /// - Parameters:
    ///   - lookupLimits: how sites are asked: at most 16 at once, 4 s per site, 20 s in all by default.
    ///   - clock: stage timings and lookup deadlines.
    ///   - now: the dates of what sites said (and so when it expires).
    public init(
        breachSource: SecurityAudit.BreachSource,
        network: Network,
        reveal: Bool = false,
        lookupLimits: SiteLookups.Limits = SiteLookups.Limits(),
        knowledgePolicy: SiteKnowledge.Policy = .standard,
        clock: any Clock<Duration> = ContinuousClock(),
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        audit = SecurityAudit(
            breachSource: breachSource,
            discovery: ChangePasswordDiscovery(probe: network.probe),
            upgradeOffers: network.manifests.map { ManifestUpgradeOffers(reader: $0) },
            reveal: reveal,
            lookupLimits: lookupLimits,
            knowledgePolicy: knowledgePolicy,
            clock: clock,
            now: now
        )
    }

    /// What one run found, and the records that could not be read.
    public struct Outcome: Sendable {
        public var report: AuditReport
        public var timings: SecurityAudit.Timings
        public var unreadable: [VaultError]
    }

    /// Audits every credential of `vault`: the offline findings, then the range API (when that is
    /// the source) and the sites whose stored knowledge is missing or due, within the lookup
    /// budget; what sites said is saved in the vault. Reads and writes the vault synchronously.
    public func run(_ vault: Vault, progress: SecurityAudit.Progress? = nil) async throws(VaultError) -> Outcome {
        await run(try vault.list(), store: .vault(vault), progress: progress)
    }

    /// ``run(_:progress:)`` through `session`: the vault is read on the session's executor and
    /// what sites said is kept through it (the CLI's in-process audit).
    public func run(_ session: KeyhavenSession, progress: SecurityAudit.Progress? = nil) async throws -> Outcome {
        await run(try await session.withVault { try $0.list() }, store: .session(session), progress: progress)
    }

    /// The audit of `listing`: the offline findings, then the lookups that are due.
    func run(_ listing: Vault.Listing, store: SiteKnowledgeStore, progress: SecurityAudit.Progress?) async -> Outcome {
        let live = await start(
            listing.credentials,
            unreadable: listing.failures.count,
            store: store,
            progress: progress
        )
        await live.lookUp(progress: progress)
        return Outcome(report: live.report, timings: live.timings, unreadable: listing.failures)
    }

    /// The offline stage of an audit of `credentials`, with what `store` knows about their sites:
    /// no network. The returned audit's ``LiveAudit/report`` is ready to show.
    public func start(
        _ credentials: [Credential],
        unreadable: Int = 0,
        store: SiteKnowledgeStore,
        progress: SecurityAudit.Progress? = nil
    ) async -> LiveAudit {
        let audit = self.audit
        var timings = SecurityAudit.Timings()
        let findings = await audit.findings(
            credentials,
            unreadable: unreadable,
            progress: progress,
            timings: &timings
        )
        // A store that cannot be read is only a cache that is missing: the sites are asked again.
        let known = ((try? await store.load()) ?? []).filter { $0.isCurrent(at: audit.now()) }
        return LiveAudit(
            audit: audit,
            store: store,
            findings: findings,
            knowledge: Dictionary(known.map { ($0.origin, $0) }, uniquingKeysWith: { $1 }),
            timings: timings
        )
    }
}

/// Where what sites said is kept between audits.
public struct SiteKnowledgeStore: Sendable {
    public var load: @Sendable () async throws -> [SiteKnowledge]
    public var save: @Sendable ([SiteKnowledge]) async throws -> Void

    public init(
        load: @escaping @Sendable () async throws -> [SiteKnowledge],
        save: @escaping @Sendable ([SiteKnowledge]) async throws -> Void
    ) {
        self.load = load
        self.save = save
    }

    /// Nothing is kept.
    public static let none = SiteKnowledgeStore(load: { [] }, save: { _ in })

    /// In `vault` (a command's own, opened for it), one sealed ``SiteRecord`` per site (JSON),
    /// expiring with the knowledge.
    public static func vault(_ vault: Vault) -> SiteKnowledgeStore {
        SiteKnowledgeStore(
            load: { try decode(vault.siteRecords()) },
            save: { knowledge in try vault.saveSiteRecords(try records(knowledge)) }
        )
    }

    /// In the session's vault, on the session's executor; a save is no change of credentials
    /// (``KeyhavenSession/writeWithoutCredentialChanges(_:)``: no new revision for what sites said).
    public static func session(_ session: KeyhavenSession) -> SiteKnowledgeStore {
        SiteKnowledgeStore(
            load: { try await session.withVault { try decode($0.siteRecords()) } },
            save: { knowledge in
                let records = try records(knowledge)
                try await session.writeWithoutCredentialChanges { try $0.saveSiteRecords(records) }
            }
        )
    }

    static func decode(_ records: [SiteRecord]) -> [SiteKnowledge] {
        records.compactMap { try? JSONDecoder().decode(SiteKnowledge.self, from: $0.content) }
    }

    static func records(_ knowledge: [SiteKnowledge]) throws -> [SiteRecord] {
        let encoder = JSONEncoder()
        return try knowledge.map { item in
            SiteRecord(site: item.origin, content: try encoder.encode(item), expires: item.expires)
        }
    }
}
