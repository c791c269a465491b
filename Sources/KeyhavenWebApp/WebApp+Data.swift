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
        try await session.writeWithoutCredentialChanges { vault in
            try vault.saveAgentRecord(
                AgentRecord(id: WebSettings.kind, kind: WebSettings.kind, content: content, created: now)
            )
        }
        // The audit's key holds the settings: the next page starts an audit under them.
        state.withLock { $0.settings = settings }
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
        try await session.writeWithoutCredentialChanges { vault in
            if ignore {
                try vault.saveAgentRecord(
                    AgentRecord(id: id, kind: IgnoredRecommendation.kind, content: content, created: now)
                )
            } else {
                _ = try vault.removeAgentRecord(id: id)
            }
        }
    }

    /// The app changed the vault's credentials itself: the session notices (a new revision, told
    /// to browsers), and the next page starts a new audit (showing the last one until the new
    /// one's findings are ready).
    func vaultChanged() async throws {
        await session.refresh()
    }
}
