import AutoFill
import Foundation
import KeyhavenApp
import Passkeys
import SecurityRecommendations
import Synchronization
import Vault
import _KeyhavenSupport

/// The web app's settings, kept sealed in the vault (an agent record), so they follow the vault.
/// The idle lock is the agent's own (``AutoFillAgent/setIdleLock(_:)``).
public struct WebSettings: Codable, Sendable, Equatable {
    public enum BreachSource: String, Codable, Sendable, CaseIterable {
        /// As `keyhaven audit` decides: `pwned.khbi` next to the vault when present, else the range API.
        case automatic
        /// An offline index (``WebSettings/breachIndexPath``).
        case index
        /// A k-anonymity range API (``WebSettings/breachAPI``).
        case api
        /// No breach check.
        case none

        public var title: String {
            switch self {
            case .automatic: "Automatic (an offline index next to the vault, else Pwned Passwords' range API)"
            case .index: "An offline breach index"
            case .api: "A range API (only 5 hex digits of each hash leave this computer)"
            case .none: "Do not check breaches"
            }
        }
    }

    public var breachSource: BreachSource = .automatic
    public var breachIndexPath: String = ""
    public var breachAPI: String = "https://api.pwnedpasswords.com"
    /// Whether audits may ask sites for their change-password page and upgrade manifest.
    public var contactServices: Bool = true

    public init() {}

    static let kind = "web-settings"
}

/// One audit, kept until the vault or the settings change (and dropped when the agent locks; one
/// whose sites did not all answer, only ``AuditCache/retryUnreachableAfter``), with
/// the vault list ready to search: rows sorted by title once, each with its lower-cased text (a
/// search is one pass of `contains`). It holds no password: the report is made without `reveal`,
/// and the rows carry titles, user names, sites and badges.
struct AuditCache: Sendable {
    var key: String
    var report: AuditReport
    var seconds: Double
    var rows: [(row: VaultRow, text: String)]
    var passkeys: [PasskeyFacts]
    var made: Date

    /// How long an audit whose network lookups partly failed is kept: a site that was down (or a
    /// network that dropped) for a moment must not hide its change-password page and upgrades for
    /// the rest of the session.
    static let retryUnreachableAfter: TimeInterval = 60

    init(
        key: String,
        report: AuditReport,
        credentials: [Credential],
        passkeys: [PasskeyFacts],
        seconds: Double,
        made: Date
    ) {
        self.key = key
        self.made = made
        self.report = report
        self.seconds = seconds
        self.passkeys = passkeys
        var items: [String: AuditItem] = [:]
        items.reserveCapacity(report.items.count)
        for item in report.items { items[item.id] = item }
        rows = credentials.map { credential -> (row: VaultRow, text: String, order: String) in
            let text =
                ([credential.title, credential.user, credential.notes, credential.folder ?? ""]
                + credential.services.map(\.identifier)).joined(separator: "\u{1F}").lowercased()
            let row = VaultRow(credential, audit: items[credential.id.rawValue], passkeys: passkeys)
            return (row, text, row.title.lowercased())
        }
        .sorted { $0.order < $1.order }
        .map { ($0.row, $0.text) }
    }

    /// Whether this audit still answers for `key` at `now`.
    func isCurrent(for key: String, at now: Date) -> Bool {
        key == self.key
            && (report.summary.unreachableSites == 0 || now.timeIntervalSince(made) < Self.retryUnreachableAfter)
    }
}

/// A recommendation the person chose to ignore: hidden while the credential shows no issue beyond
/// the ones it had then.
struct IgnoredRecommendation: Codable, Sendable {
    var credential: String
    var issues: [String]
    var ignored: Date

    static let kind = "ignored-recommendation"
    static func recordID(_ credential: String) -> String { "ignored:" + credential }
}

extension WebApp {
    /// The settings: read from the vault once per unlock (every page's audit key needs them), then
    /// kept until they are saved or the agent locks.
    func settings(_ vault: Vault) async throws -> WebSettings {
        if let settings = state.withLock({ $0.settings }) { return settings }
        let settings = try await blocking {
            guard let record = try vault.agentRecords(kind: WebSettings.kind).last else { return WebSettings() }
            return (try? JSONDecoder().decode(WebSettings.self, from: record.content)) ?? WebSettings()
        }
        state.withLock { $0.settings = settings }
        return settings
    }

    func saveSettings(_ settings: WebSettings, _ vault: Vault) async throws {
        let content = try JSONEncoder().encode(settings)
        let now = self.now
        try await blocking {
            try vault.saveAgentRecord(
                AgentRecord(id: WebSettings.kind, kind: WebSettings.kind, content: content, created: now)
            )
        }
        state.withLock {
            $0.settings = settings
            $0.audit = nil
        }
    }

    func ignored(_ vault: Vault) async throws -> [String: IgnoredRecommendation] {
        try await blocking {
            var result: [String: IgnoredRecommendation] = [:]
            for record in try vault.agentRecords(kind: IgnoredRecommendation.kind) {
                if let entry = try? JSONDecoder().decode(IgnoredRecommendation.self, from: record.content) {
                    result[entry.credential] = entry
                }
            }
            return result
        }
    }

    func setIgnored(_ item: AuditItem, _ ignore: Bool, _ vault: Vault) async throws {
        let id = IgnoredRecommendation.recordID(item.id)
        let entry = IgnoredRecommendation(credential: item.id, issues: item.issues.map(\.rawValue), ignored: now)
        let content = try JSONEncoder().encode(entry)
        let now = self.now
        try await blocking {
            if ignore {
                try vault.saveAgentRecord(
                    AgentRecord(id: id, kind: IgnoredRecommendation.kind, content: content, created: now)
                )
            } else {
                _ = try vault.removeAgentRecord(id: id)
            }
        }
    }

    /// The vault's audit under the current settings: computed once per vault revision and settings,
    /// then served from memory (the recommendations page renders from it); one whose sites did not
    /// all answer is computed again after ``AuditCache/retryUnreachableAfter``.
    func audit(_ vault: Vault) async throws -> AuditCache {
        let settings = try await settings(vault)
        // Sorted keys: without them the encoding's key order may differ between two calls.
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let settingsKey = String(decoding: try encoder.encode(settings), as: UTF8.self)
        let key = "\(await session.currentRevision)|\(settingsKey)"
        let now = self.now
        if let cached = state.withLock({ $0.audit }), cached.isCurrent(for: key, at: now) { return cached }
        let started = ContinuousClock.now
        let (listing, passkeys) = try await blocking { (try vault.list(), try vault.passkeys().map(PasskeyFacts.init)) }
        let source: SecurityAudit.BreachSource
        do {
            source = try services.breachSource(settings, vault.url)
        } catch {
            throw WebAppError(
                .badRequest,
                "The breach check set in Settings cannot be used (\(error)): change it in Settings."
            )
        }
        let service = AuditService(breachSource: source, network: services.auditNetwork(settings))
        let (report, _) = await service.audit.run(listing.credentials, unreadable: listing.failures.count)
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let cache = AuditCache(
            key: key,
            report: report,
            credentials: listing.credentials,
            passkeys: passkeys,
            seconds: seconds,
            made: now
        )
        state.withLock { $0.audit = cache }
        return cache
    }

    /// Forgets the audit (after the app changed the vault itself); the session notices the change
    /// and tells its other front ends (browsers).
    func vaultChanged() async throws {
        await session.refresh()
        state.withLock { $0.audit = nil }
    }
}
