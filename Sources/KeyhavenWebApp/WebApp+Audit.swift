import AutoFill
import Foundation
import KeyhavenApp
import Passkeys
import SecurityRecommendations
import Synchronization
import Vault
import _KeyhavenSupport

/// What the pages show of the audit, as far as it has got: the vault's rows ready to search (each
/// with its lower-cased text; sorted by title once), then the offline findings, then the same
/// report again each time sites answer. It holds no password: the report is made without
/// `reveal`, and the rows carry titles, user names, sites and badges.
struct AuditCache: Sendable {
    enum Stage: Int, Sendable, Comparable {
        /// The vault is listed: rows without findings.
        case listed = 1
        /// Every offline finding (breached from an index, reused, weak, unsecured).
        case offline = 2

        static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// The vault revision and settings it was made for.
    var key: String
    /// The background run that made it (``WebApp/AuditRun``).
    var run: Int
    var stage: Stage
    /// Grows with every update (the page's script asks for what changed since the one it shows).
    var generation: Int
    var report: AuditReport
    /// How long the offline findings took.
    var seconds: Double
    var rows: [(row: VaultRow, text: String)]
    var passkeys: [PasskeyFacts]
    var made: Date
    /// Whether sites are being asked right now (the report will change by itself).
    var lookingUp = false
    /// When the audit asks sites again (those that did not answer, or whose answers expire).
    var nextLookup: Date?
    /// Per item: the generation in which its actions last changed.
    var actionsChanged: [String: Int] = [:]
    /// Set on a copy handed to a page when the audit of the vault as it is now has not reached the
    /// stage the page asked for yet (the page then says so, and its script reloads it when it has).
    var waitingFor: Stage?

    init(
        key: String,
        run: Int,
        stage: Stage,
        report: AuditReport?,
        credentials: [Credential],
        passkeys: [PasskeyFacts],
        seconds: Double,
        made: Date
    ) {
        self.key = key
        self.run = run
        self.stage = stage
        generation = 0
        self.made = made
        self.report =
            report ?? .notYetMade(credentials: credentials.count)
        self.seconds = seconds
        self.passkeys = passkeys
        var items: [String: AuditItem] = [:]
        items.reserveCapacity(self.report.items.count)
        for item in self.report.items { items[item.id] = item }
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

    /// Nothing read yet (the first page after an unlock of a large vault may see this).
    static func nothing(key: String) -> AuditCache {
        var cache = AuditCache(
            key: key,
            run: 0,
            stage: .listed,
            report: nil,
            credentials: [],
            passkeys: [],
            seconds: 0,
            made: .distantPast
        )
        cache.waitingFor = .listed
        return cache
    }

    /// The same findings with a newer report (sites answered): the items whose actions changed are
    /// remembered under the new generation.
    mutating func update(_ newer: AuditReport, lookingUp: Bool, nextLookup: Date?) {
        generation += 1
        var before: [String: AuditActions] = [:]
        before.reserveCapacity(report.items.count)
        for item in report.items where !item.issues.isEmpty { before[item.id] = item.actions }
        for item in newer.items where !item.issues.isEmpty && before[item.id] != item.actions {
            actionsChanged[item.id] = generation
        }
        report = newer
        self.lookingUp = lookingUp
        self.nextLookup = nextLookup
    }
}

extension WebApp {
    /// The audit running in the background for one state of the vault and the settings.
    struct AuditRun: Sendable {
        var id: Int
        var key: String
        var task: Task<Void, Never>?
        /// Once the offline findings are done: for the next rounds of lookups.
        var live: LiveAudit?
        var lookingUp = false
    }

    /// The audit for the vault as it is now, as far as it has got: pages never wait for the
    /// network, and wait at most ``Configuration/auditPatience`` for the offline findings (or the
    /// stage `need`). When those are not ready, the page gets the last audit made (of an earlier
    /// state of the vault), or an empty one, marked ``AuditCache/waitingFor``.
    ///
    /// The audit runs on a thread of its own: the vault listed (rows to search), the offline
    /// findings with what the vault knows about sites (``AuditService/start(_:unreadable:store:progress:)``),
    /// then the lookups that are due, each answer updating the cache; when what sites said
    /// expires, the next page starts another round of lookups.
    func audit(
        _ vault: Vault,
        need: AuditCache.Stage = .offline,
        patience: Duration? = nil
    ) async throws -> AuditCache {
        let key = try await auditKey(vault)
        try await startAudit(key: key, vault: vault)
        let patience = ContinuousClock.now + (patience ?? configuration.auditPatience)
        while true {
            if let cache = state.withLock({ $0.audit }), cache.key == key, cache.stage >= need { return cache }
            guard ContinuousClock.now < patience else { break }
            try await Task.sleep(for: .milliseconds(5))
        }
        var cache = state.withLock { $0.audit } ?? .nothing(key: key)
        cache.waitingFor = need
        return cache
    }

    /// The vault revision and the settings: an audit answers for both.
    func auditKey(_ vault: Vault) async throws -> String {
        let settings = try await settings(vault)
        // Sorted keys: without them the encoding's key order may differ between two calls.
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let settingsKey = String(decoding: try encoder.encode(settings), as: UTF8.self)
        return "\(await session.currentRevision)|\(settingsKey)"
    }

    /// Starts the audit for `key` unless it runs already; starts a round of lookups when the
    /// running one's knowledge is due.
    func startAudit(key: String, vault: Vault) async throws {
        let (started, live) = state.withLock { state -> (Bool, LiveAudit?) in
            guard let run = state.auditRun, run.key == key else { return (false, nil) }
            let due = !run.lookingUp && (state.audit?.nextLookup).map { $0 <= now } == true
            return (true, due ? run.live : nil)
        }
        if let live { startLookups(live, key: key) }
        guard !started else { return }
        let settings = try await settings(vault)
        let source: SecurityAudit.BreachSource
        do {
            source = try services.breachSource(settings, vault.url)
        } catch {
            throw WebAppError(
                .badRequest,
                "The breach check set in Settings cannot be used (\(error)): change it in Settings."
            )
        }
        let service = AuditService(
            breachSource: source,
            network: services.auditNetwork(settings),
            lookupLimits: configuration.auditLookups,
            now: configuration.now
        )
        let id = state.withLock { state -> Int? in
            if let run = state.auditRun, run.key == key { return nil }
            state.auditRun?.task?.cancel()
            state.auditRuns += 1
            state.auditRun = AuditRun(id: state.auditRuns, key: key)
            return state.auditRuns
        }
        guard let id else { return }
        // The vault's SQLite and the strength estimates are synchronous: a thread of their own, in
        // the background so that pages served meanwhile get the processor first (the first page
        // after Unlock must not wait for 10,000 strength estimates on a 2-core machine).
        let executor = DedicatedThreadExecutor(name: "keyhaven.web-app.audit", priority: .background)
        let task = Task(executorPreference: executor) {
            defer { executor.finish() }
            await self.runAudit(id: id, key: key, vault: vault, service: service)
        }
        state.withLock { if $0.auditRun?.id == id { $0.auditRun?.task = task } }
    }

    /// One background audit: listed, offline, then the lookups. Publishes nothing once another run
    /// replaced it or the agent locked.
    private func runAudit(id: Int, key: String, vault: Vault, service: AuditService) async {
        let started = ContinuousClock.now
        guard let read = try? (vault.list(), try vault.passkeys().map(PasskeyFacts.init)) else {
            // Locked meanwhile, or the vault cannot be read: the next page starts again.
            state.withLock { if $0.auditRun?.id == id { $0.auditRun = nil } }
            return
        }
        let (listing, passkeys) = read
        let now = self.now
        // Each cache is made before the state's lock is taken (10,000 rows to sort), and the lock
        // only swaps it in: pages take that lock too, and this thread runs in the background.
        if state.withLock({ $0.audit == nil }) {
            let listed = AuditCache(
                key: key,
                run: id,
                stage: .listed,
                report: nil,
                credentials: listing.credentials,
                passkeys: passkeys,
                seconds: 0,
                made: now
            )
            publish(id) { state in
                // A later state of the vault keeps the previous audit's findings on screen until its
                // own are ready; only the very first audit shows bare rows.
                guard state.audit == nil else { return }
                state.audit = listed
            }
        }
        guard !Task.isCancelled else { return }
        let store = SiteKnowledgeStore.session(session)
        let live = await service.start(listing.credentials, unreadable: listing.failures.count, store: store)
        let report = live.report
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let nextLookup = live.nextLookup
        let due = live.due
        var offline = AuditCache(
            key: key,
            run: id,
            stage: .offline,
            report: report,
            credentials: listing.credentials,
            passkeys: passkeys,
            seconds: seconds,
            made: now
        )
        offline.nextLookup = nextLookup
        // Said at once, so a page made now knows more is coming (its script then polls).
        offline.lookingUp = due.breaches || !due.sites.isEmpty
        publish(id) { state in
            var cache = offline
            cache.generation = (state.audit?.generation ?? 0) + 1
            state.audit = cache
            state.auditRun?.live = live
            // The first round of lookups follows at once.
            state.auditRun?.lookingUp = true
        }
        guard !Task.isCancelled else { return }
        await lookUp(live, id: id)
    }

    /// A round of lookups on its own thread (what sites said expired since the last one).
    private func startLookups(_ live: LiveAudit, key: String) {
        guard
            let id = state.withLock({ state -> Int? in
                guard let run = state.auditRun, run.key == key, !run.lookingUp else { return nil }
                state.auditRun?.lookingUp = true
                // The page that started the round already says so.
                state.audit?.lookingUp = true
                return run.id
            })
        else { return }
        let executor = DedicatedThreadExecutor(name: "keyhaven.web-app.lookups", priority: .background)
        let task = Task(executorPreference: executor) {
            defer { executor.finish() }
            await self.lookUp(live, id: id)
        }
        state.withLock { if $0.auditRun?.id == id { $0.auditRun?.task = task } }
    }

    /// Asks what is due and publishes each newer report.
    private func lookUp(_ live: LiveAudit, id: Int) async {
        guard live.due.breaches || !live.due.sites.isEmpty else {
            publish(id) { state in
                state.auditRun?.lookingUp = false
                state.audit?.lookingUp = false
                state.audit?.nextLookup = live.nextLookup
            }
            return
        }
        publish(id) { state in
            state.auditRun?.lookingUp = true
            state.audit?.update(live.report, lookingUp: true, nextLookup: nil)
        }
        await live.lookUp(updated: { report in
            self.publish(id) { $0.audit?.update(report, lookingUp: true, nextLookup: nil) }
        })
        let report = live.report
        let nextLookup = live.nextLookup
        publish(id) { state in
            state.auditRun?.lookingUp = false
            state.audit?.update(report, lookingUp: false, nextLookup: nextLookup)
        }
    }

    /// Applies `change` to the state if run `id` is still the current one.
    private func publish(_ id: Int, _ change: (inout State) -> Void) {
        state.withLock { state in
            guard state.auditRun?.id == id else { return }
            change(&state)
        }
    }

    /// Starts the audit in the background as soon as the agent unlocks, so the first page finds
    /// it under way (or done).
    func auditAfterUnlock() {
        Task {
            guard let vault = try? await self.vault() else { return }
            _ = try? await self.startAudit(key: try await self.auditKey(vault), vault: vault)
        }
    }

    /// Forgets the audit and stops it (the agent locked).
    func dropAudit(_ state: inout State) {
        state.auditRun?.task?.cancel()
        state.auditRun = nil
        state.audit = nil
    }
}
