import BreachCheck
import Foundation
import Vault

/// The offline half of an audit: every finding that needs no network (breached from a local
/// index, reused, weak, unsecured), ready to become a report at once and again each time sites
/// answer (``report(knowledge:pending:final:)``). It holds no password unless the audit reveals
/// them, and the SHA-1s of passwords only until the range API has answered.
public struct AuditFindings: Sendable {
    /// One credential's findings.
    struct Entry: Sendable {
        /// The report's item, without actions.
        var item: AuditItem
        var weak, unsecured, hasPassword: Bool
        /// The password's SHA-1, while the range API is still to be asked.
        var digest: SHA1Digest?
        /// The site whose change-password page and upgrade offer are its actions, and its domain
        /// (for Apple's change-password quirks).
        var origin, domain: String?
    }

    /// In report order (severity, service, user, id).
    var entries: [Entry]
    /// Notices about the offline checks (unreadable records, a skipped or approximate breach check).
    var notices: [String]
    public private(set) var breachCheck: BreachCheckMode

    init(entries: [Entry], notices: [String], breachCheck: BreachCheckMode, breachCounts: [CredentialID: Int]) {
        self.entries = entries
        self.notices = notices
        self.breachCheck = breachCheck
        apply(breachCounts: breachCounts)
    }

    /// How many credentials were audited.
    public var credentials: Int { entries.count }

    /// The sites whose actions are looked up: those of credentials with an issue, each once, sorted.
    public var sites: [String] {
        Array(Set(entries.lazy.filter { !$0.item.issues.isEmpty }.compactMap(\.origin))).sorted()
    }

    /// The passwords' SHA-1s the range API is still to be asked about, with their credentials.
    var pendingDigests: [(id: String, digest: SHA1Digest)] {
        entries.compactMap { entry in entry.digest.map { (entry.item.id, $0) } }
    }

    /// Sets the breach counts (by credential id) and re-derives issues, severities and the order.
    mutating func apply(breachCounts: [CredentialID: Int]) {
        let checked = breachCheck == .index || breachCheck == .api || breachCheck == .psi
        for index in entries.indices {
            var entry = entries[index]
            let known = CredentialID(rawValue: entry.item.id).flatMap { breachCounts[$0] }
            let count = known ?? 0
            var issues = Set<AuditIssue>()
            if count > 0 { issues.insert(.breached) }
            if !entry.item.reusedWith.isEmpty { issues.insert(.reused) }
            if entry.weak { issues.insert(.weak) }
            if entry.unsecured { issues.insert(.unsecured) }
            entry.item.issues = issues.sorted()
            entry.item.severity = AuditSeverity(issues: issues)
            // A check that did not finish still reports what it found (the local list's hits):
            // those counts are known, the others unknown, never 0.
            entry.item.breachCount = (checked || known != nil) && entry.hasPassword ? count : nil
            entries[index] = entry
        }
        entries.sort { a, b in
            if a.item.severity != b.item.severity { return a.item.severity < b.item.severity }
            if a.item.service != b.item.service { return a.item.service < b.item.service }
            if a.item.user != b.item.user { return a.item.user < b.item.user }
            return a.item.id < b.item.id
        }
    }

    /// The online check's counts arrived (`mode`: `.api` or `.psi`), or it failed: `counts` nil,
    /// with the notice to show.
    /// `foundLocally`: credentials whose password was found in the device's local list, with the
    /// list's count (breached, with that source and that count, even when the online check failed).
    mutating func resolveBreaches(
        _ counts: [CredentialID: Int]?,
        mode: BreachCheckMode,
        notice: String?,
        foundLocally: [CredentialID: Int] = [:]
    ) {
        guard breachCheck == .pending else { return }
        breachCheck = counts == nil ? .skipped : mode
        if let notice { notices.append(notice) }
        for index in entries.indices {
            entries[index].digest = nil
            if let id = CredentialID(rawValue: entries[index].item.id), foundLocally[id] != nil {
                entries[index].item.breachSource = "local-list"
            }
        }
        apply(breachCounts: (counts ?? [:]).merging(foundLocally) { _, local in local })
    }

    /// The report: these findings with each flagged item's actions from what is known about its
    /// site (`knowledge`, by origin) or Apple's quirks. `pending` sites are still to be looked up;
    /// `final`: no more lookups follow in this run (sites left pending get a notice).
    public func report(
        knowledge: [String: SiteKnowledge] = [:],
        pending: Set<String> = [],
        final: Bool = true
    )
        -> AuditReport
    {
        var items: [AuditItem] = []
        items.reserveCapacity(entries.count)
        var unreachable = Set<String>()
        var waiting = Set<String>()
        var bySeverity = Dictionary(uniqueKeysWithValues: AuditSeverity.allCases.map { ($0, 0) })
        var counts = (withIssues: 0, breached: 0, reused: 0, weak: 0, unsecured: 0)
        for entry in entries {
            var item = entry.item
            bySeverity[item.severity, default: 0] += 1
            if !item.issues.isEmpty {
                counts.withIssues += 1
                item.actions = Self.actions(for: entry, knowledge: entry.origin.flatMap { knowledge[$0] })
                if let origin = entry.origin {
                    if pending.contains(origin) {
                        waiting.insert(origin)
                    } else if let known = knowledge[origin], known.status != .answered {
                        unreachable.insert(origin)
                    }
                }
            }
            for issue in item.issues {
                switch issue {
                case .breached: counts.breached += 1
                case .reused: counts.reused += 1
                case .weak: counts.weak += 1
                case .unsecured: counts.unsecured += 1
                }
            }
            items.append(item)
        }
        var notices = self.notices
        if !unreachable.isEmpty {
            notices.append(
                unreachable.count == 1
                    ? "1 site could not be reached (\(unreachable.first!)): its change-password page and upgrades may be missing."
                    : "\(unreachable.count) sites could not be reached: their change-password pages and upgrades may be missing."
            )
        }
        if final && !waiting.isEmpty {
            notices.append(
                "\(waiting.count) site\(waiting.count == 1 ? " was" : "s were") not looked up in the time allowed: "
                    + "the next audit asks \(waiting.count == 1 ? "it" : "them")."
            )
        }
        let summary = AuditSummary(
            credentials: entries.count,
            withIssues: counts.withIssues,
            breached: counts.breached,
            reused: counts.reused,
            weak: counts.weak,
            unsecured: counts.unsecured,
            bySeverity: bySeverity,
            breachCheck: breachCheck,
            notices: notices,
            unreachableSites: unreachable.count,
            pendingSites: waiting.count
        )
        return AuditReport(items: items, summary: summary)
    }

    /// A flagged item's actions: the site's own change-password page, else Apple's quirk; its
    /// upgrade offer when its manifest was read.
    static func actions(for entry: Entry, knowledge: SiteKnowledge?) -> AuditActions {
        var found = ChangePasswordDiscovery.quirk(for: entry.domain)
        if let url = knowledge?.changePasswordURL { found = (url, "well-known") }
        return AuditActions(
            changePasswordURL: found.url,
            changePasswordSource: found.source,
            upgrade: knowledge?.upgrade
        )
    }
}
