public import Foundation

/// Asks sites for their change-password page and upgrade manifest, many at once and never for
/// long: each site gets ``Limits/perSite`` (its lookups run side by side and are cancelled when it
/// is up), all of them together ``Limits/budget``, and when sites fail without any answering
/// (``Limits/networkDownAfter``) the network counts as down and the rest are not contacted (those
/// already under way keep their own time: a live site slower than dead ones keeps its answer).
///
/// Why: one audit used to ask its sites 8 at a time, each one lookup after another, with nothing
/// to stop a lookup but its own 5–10 s deadline. Offline, a single name lookup that the system
/// resolver waited out for 5 s (a lost answer; SwiftNIO runs `getaddrinfo` on one serial queue per
/// event loop, so every lookup behind it waited too) held up the whole audit: 60 s for 310
/// credentials.
///
/// ```swift
/// let lookups = SecurityAudit(breachSource: source, discovery: discovery, upgradeOffers: offers).siteLookups
/// let outcome = await lookups.lookUp(sites, known: stored) { learned in save(learned) }
/// ```
public struct SiteLookups: Sendable {
    public struct Limits: Sendable, Equatable {
        /// Sites asked at once.
        public var concurrency: Int
        /// The longest one site may take, all its lookups together.
        public var perSite: Duration
        /// The longest all lookups may take together: sites not started by then are left for the
        /// next audit (``Outcome/notLookedUp``); those under way are cut short.
        public var budget: Duration
        /// Sites that must fail (no lookup answered) with none answering before the network counts
        /// as down …
        public var networkDownAfter: Int
        /// … once this long has passed since the first lookup (sites that no longer exist fail at
        /// once even when the network is fine; live sites take a moment to answer).
        public var networkDownGrace: Duration

        public init(
            concurrency: Int = 16,
            perSite: Duration = .seconds(4),
            budget: Duration = .seconds(20),
            networkDownAfter: Int = 3,
            networkDownGrace: Duration = .seconds(1)
        ) {
            self.concurrency = max(1, concurrency)
            self.perSite = perSite
            self.budget = budget
            self.networkDownAfter = max(1, networkDownAfter)
            self.networkDownGrace = networkDownGrace
        }
    }

    /// What a round of lookups did.
    public struct Outcome: Sendable {
        /// Every site asked (answered or not) and every site not asked because the network looked down.
        public var learned: [SiteKnowledge]
        /// Sites the budget left untouched: nothing was learned, the next audit asks them.
        public var notLookedUp: [String]
        /// Whether the lookups stopped because the network looked unreachable.
        public var networkDown: Bool
    }

    /// Change-password discovery (nil: not looked up).
    public var discovery: ChangePasswordDiscovery?
    /// Upgrade offers (nil: not looked up).
    public var offers: (any UpgradeOfferSource)?
    public var limits: Limits
    public var policy: SiteKnowledge.Policy
    /// Deadlines are measured on it.
    public var clock: any Clock<Duration>
    /// Knowledge is dated by it.
    public var now: @Sendable () -> Date

    /// Whether these lookups contact anything at all.
    public var contactsSites: Bool { discovery?.contactsSites == true || offers != nil }

    /// The sites of `sites` to ask now: those with no knowledge, or whose knowledge has expired.
    public func due(_ sites: [String], known: [String: SiteKnowledge]) -> [String] {
        guard contactsSites else { return [] }
        let now = self.now()
        return sites.filter { known[$0]?.isCurrent(at: now) != true }
    }

    /// Asks `sites` (origins), at most ``Limits/concurrency`` at a time; `learned` gets each
    /// site's knowledge as soon as it is known (one call at a time), `progress` the count as
    /// `actions`. `known` is what was known before: carried over where a lookup fails, with the
    /// count of failures in a row.
    public func lookUp(
        _ sites: [String],
        known: [String: SiteKnowledge] = [:],
        progress: SecurityAudit.Progress? = nil,
        learned: @Sendable (SiteKnowledge) async -> Void = { _ in }
    ) async -> Outcome {
        guard contactsSites, !sites.isEmpty else { return Outcome(learned: [], notLookedUp: [], networkDown: false) }
        let clock = self.clock.stopwatch()
        var outcome = Outcome(learned: [], notLookedUp: [], networkDown: false)
        var next = 0
        var answered = 0
        var failed = 0
        var cutShort: [String] = []
        // Each site's knowledge and whether anything answered; nil: the grace has passed.
        await withTaskGroup(of: (knowledge: SiteKnowledge, heard: Bool)?.self) { group in
            var inFlight = 0
            func schedule() {
                guard next < sites.count, !outcome.networkDown, !Task.isCancelled else { return }
                let remaining = limits.budget - clock.elapsed()
                guard remaining > .zero else { return }
                let site = sites[next]
                next += 1
                inFlight += 1
                let timeout = min(limits.perSite, remaining)
                group.addTask { await self.ask(site, known: known[site], timeout: timeout, clock: clock) }
            }
            for _ in 0..<limits.concurrency { schedule() }
            // Wakes the loop when the grace is over: lookups stuck in a resolver that waits out a lost
            // answer must not hide a dead network until their own time is up.
            let grace = limits.networkDownGrace
            group.addTask {
                try? await clock.sleep(grace)
                return nil
            }
            while inFlight > 0, let result = await group.next() {
                if let result {
                    inFlight -= 1
                    // The round itself was cancelled (its audit was replaced, or the vault locked):
                    // a lookup cut short by that is not what the site said. It is not kept, and the
                    // site is asked by the next round.
                    if Task.isCancelled {
                        cutShort.append(result.knowledge.origin)
                        continue
                    }
                    outcome.learned.append(result.knowledge)
                    await learned(result.knowledge)
                    progress?("actions", outcome.learned.count, sites.count)
                    // Any answer at all, even one lookup of a site's two, shows the network works.
                    if result.heard { answered += 1 } else { failed += 1 }
                }
                if !outcome.networkDown, answered == 0, failed >= limits.networkDownAfter,
                    clock.elapsed() >= limits.networkDownGrace
                {
                    // No new site is asked; those under way keep their own time (a slow live site
                    // that is answering must not lose its answer to dead ones that failed first).
                    outcome.networkDown = true
                }
                schedule()
            }
            group.cancelAll()  // the grace's timer, when everything finished before it
        }
        let rest = Array(sites[next...])
        if Task.isCancelled {
            outcome.notLookedUp = cutShort + rest
        } else if outcome.networkDown {
            let now = self.now()
            for site in rest {
                let knowledge = carried(site, known: known[site], status: .notAsked, at: now)
                outcome.learned.append(knowledge)
                await learned(knowledge)
            }
            progress?("actions", sites.count, sites.count)
        } else {
            outcome.notLookedUp = rest
        }
        return outcome
    }

    /// One site: its change-password page and its manifest side by side, cut short after `timeout`;
    /// and whether anything answered.
    private func ask(
        _ site: String,
        known: SiteKnowledge?,
        timeout: Duration,
        clock: SecurityAudit.Stopwatch
    ) async -> (knowledge: SiteKnowledge, heard: Bool) {
        let discovery = self.discovery
        let offers = self.offers
        let answer = await Self.first(within: timeout, on: clock) {
            async let page = discovery?.page(origin: site)
            async let offer = offers?.upgradeOffer(service: site)
            return Answer(page: await page, offer: await offer)
        }
        let now = self.now()
        guard let answer else { return (carried(site, known: known, status: .unreachable, at: now), false) }
        let pageAnswered = discovery?.contactsSites != true || answer.page?.reached == true
        let offerAnswered = offers == nil || answer.offer != nil
        guard pageAnswered && offerAnswered else {
            var knowledge = carried(site, known: known, status: .unreachable, at: now)
            // Whatever did answer is news.
            if answer.page?.reached == true { knowledge.changePasswordURL = answer.page?.found.url }
            if let offer = answer.offer { knowledge.upgrade = offer }
            return (knowledge, answer.page?.reached == true || answer.offer != nil)
        }
        let knowledge = SiteKnowledge(
            origin: site,
            status: .answered,
            changePasswordURL: answer.page?.found.url,
            upgrade: answer.offer,
            checked: now,
            expires: policy.expiry(of: .answered, failures: 0, at: now)
        )
        return (knowledge, true)
    }

    private struct Answer: Sendable {
        var page: ChangePasswordDiscovery.Lookup?
        var offer: UpgradeOffer?
    }

    /// A failed or skipped lookup: what was known stays, one more failure is counted.
    private func carried(
        _ site: String,
        known: SiteKnowledge?,
        status: SiteKnowledge.Status,
        at now: Date
    )
        -> SiteKnowledge
    {
        let failures = (known?.failures ?? 0) + 1
        return SiteKnowledge(
            origin: site,
            status: status,
            changePasswordURL: known?.changePasswordURL,
            upgrade: known?.upgrade,
            checked: now,
            expires: policy.expiry(of: status, failures: failures, at: now),
            failures: failures
        )
    }
}
