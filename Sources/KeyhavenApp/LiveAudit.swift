public import Foundation
public import SecurityRecommendations
import Synchronization

/// An audit whose offline findings are done and whose network answers arrive later
/// (``AuditService/start(_:unreadable:store:progress:)``): ``report`` is ready at once;
/// ``lookUp(progress:updated:)`` asks the range API (when that is the breach source) and the sites
/// that are due, hands over a newer report as they answer, and saves what they said. It can be
/// asked again when ``nextLookup`` comes, without redoing the offline findings.
///
/// Its methods do not block: the synchronous parts (the store's reads and writes, the reports)
/// run on the calling task's executor — give the task a thread of its own when the store is a
/// vault (SQLite).
public final class LiveAudit: Sendable {
    struct State: Sendable {
        var findings: AuditFindings
        var knowledge: [String: SiteKnowledge]
        var timings: SecurityAudit.Timings
        /// Sites being asked right now.
        var pending: Set<String> = []
        /// Sites the last round had no time for.
        var left: Set<String> = []
        var lookingUp = false
        /// When the last update was handed over (on the audit's clock, since the round began).
        var lastUpdate = Duration.zero
    }

    let audit: SecurityAudit
    let store: SiteKnowledgeStore
    let state: Mutex<State>

    init(
        audit: SecurityAudit,
        store: SiteKnowledgeStore,
        findings: AuditFindings,
        knowledge: [String: SiteKnowledge],
        timings: SecurityAudit.Timings
    ) {
        self.audit = audit
        self.store = store
        state = Mutex(State(findings: findings, knowledge: knowledge, timings: timings))
    }

    /// The report as it stands: every offline finding, with each flagged item's actions from what
    /// is known about its site so far.
    public var report: AuditReport {
        let (findings, knowledge, pending, final) = state.withLock { state in
            (state.findings, state.knowledge, state.pending.union(state.left), !state.lookingUp)
        }
        return findings.report(knowledge: knowledge, pending: pending, final: final)
    }

    /// Seconds per stage so far.
    public var timings: SecurityAudit.Timings { state.withLock { $0.timings } }

    /// The sites to ask now: those of flagged credentials with no knowledge, or whose knowledge
    /// has expired; and whether the range API is still to be asked.
    public var due: (sites: [String], breaches: Bool) {
        let (findings, knowledge) = state.withLock { ($0.findings, $0.knowledge) }
        return (audit.siteLookups.due(findings.sites, known: knowledge), findings.breachCheck == .pending)
    }

    /// When a lookup would next have something to ask (the earliest expiry among the flagged
    /// credentials' sites); nil when nothing will (no network, or nothing known to expire).
    public var nextLookup: Date? {
        guard audit.siteLookups.contactsSites else { return nil }
        let (findings, knowledge) = state.withLock { ($0.findings, $0.knowledge) }
        let sites = findings.sites
        if sites.contains(where: { knowledge[$0] == nil }) { return audit.now() }
        return sites.compactMap { knowledge[$0]?.expires }.min()
    }

    /// Asks what is due (``due``): the range API first (its counts decide which credentials are
    /// flagged), then the sites, within the audit's lookup limits. `updated` gets a newer report
    /// after each answer, at most every `interval` (and once at the end, with no site pending);
    /// what sites said is saved in the store at the end (a failed save only means they are asked
    /// again next time). A second call while one runs returns at once.
    public func lookUp(
        progress: SecurityAudit.Progress? = nil,
        interval: Duration = .milliseconds(250),
        updated: @Sendable (AuditReport) async -> Void = { _ in }
    ) async {
        let starting = state.withLock { state -> Bool in
            guard !state.lookingUp else { return false }
            state.lookingUp = true
            state.lastUpdate = .zero
            return true
        }
        guard starting else { return }
        if due.breaches {
            var (findings, timings) = state.withLock { ($0.findings, $0.timings) }
            await audit.checkBreaches(&findings, progress: progress, timings: &timings)
            state.withLock {
                $0.findings = findings
                $0.timings = timings
            }
            await updated(report)
        }
        let sites = due.sites
        let known = state.withLock { state in
            state.pending = Set(sites)
            state.left = []
            return state.knowledge
        }
        var stopwatch = audit.stopwatch()
        let clock = stopwatch
        let outcome = await audit.siteLookups.lookUp(sites, known: known, progress: progress) { knowledge in
            let handOver = self.state.withLock { state -> Bool in
                state.knowledge[knowledge.origin] = knowledge
                state.pending.remove(knowledge.origin)
                let now = clock.elapsed()
                guard now - state.lastUpdate >= interval else { return false }
                state.lastUpdate = now
                return true
            }
            if handOver { await updated(self.report) }
        }
        var timings = state.withLock { $0.timings }
        if !sites.isEmpty { stopwatch.lap("sites", into: &timings) }
        state.withLock { state in
            state.pending = []
            state.left = Set(outcome.notLookedUp)
            state.lookingUp = false
            state.timings = timings
        }
        if !outcome.learned.isEmpty { try? await store.save(outcome.learned) }
        await updated(report)
    }
}
