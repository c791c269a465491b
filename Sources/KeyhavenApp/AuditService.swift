public import AccountModification
public import SecurityRecommendations
public import Vault

/// The use case behind `keyhaven audit` (the web app uses its parts for its recommendations): the
/// vault's credentials through ``SecurityAudit``, with change-password discovery and upgrade offers
/// from the same manifest reader upgrades use. With no network, nothing is contacted.
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

    public var breachSource: SecurityAudit.BreachSource
    public var network: Network
    public var reveal: Bool

    public init(breachSource: SecurityAudit.BreachSource, network: Network, reveal: Bool = false) {
        self.breachSource = breachSource
        self.network = network
        self.reveal = reveal
    }

    /// The audit as ``SecurityAudit`` runs it.
    public var audit: SecurityAudit {
        SecurityAudit(
            breachSource: breachSource,
            discovery: ChangePasswordDiscovery(probe: network.probe),
            upgradeOffers: network.manifests.map { ManifestUpgradeOffers(reader: $0) },
            reveal: reveal
        )
    }

    /// What one run found, and the records that could not be read.
    public struct Outcome: Sendable {
        public var report: AuditReport
        public var timings: SecurityAudit.Timings
        public var unreadable: [VaultError]
    }

    /// Audits every credential of `vault`.
    public func run(_ vault: Vault, progress: SecurityAudit.Progress? = nil) async throws(VaultError) -> Outcome {
        let listing = try vault.list()
        let (report, timings) = await audit.run(
            listing.credentials,
            unreadable: listing.failures.count,
            progress: progress
        )
        return Outcome(report: report, timings: timings, unreadable: listing.failures)
    }
}
