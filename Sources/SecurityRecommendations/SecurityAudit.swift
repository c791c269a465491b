public import BreachCheck
public import BreachPSI
public import Foundation
public import Vault
import _KeyhavenSupport

/// Security Recommendations: for each credential, the issues found (breached, reused, weak,
/// unsecured), a severity, and what to do about it.
///
/// ```swift
/// let audit = SecurityAudit(breachSource: .index(try BreachIndex(url: indexURL)))
/// let report = await audit.run(vault.list().credentials)
/// ```
///
/// The result depends only on the credentials, the breach corpus and what sites answer; items are
/// sorted by severity, then service, user and id.
///
/// The stages, each a step of its own: ``findings(_:unreadable:progress:timings:)`` (offline:
/// breaches from a local index, reuse, strength, unsecured), ``checkBreaches(_:progress:timings:)``
/// (the range API, when that is the source), ``siteLookups`` (change-password pages and upgrade
/// offers, concurrently and within a time budget), then ``AuditFindings/report(knowledge:pending:final:)``.
/// ``run(_:unreadable:progress:)`` runs them all; `KeyhavenApp`'s `AuditService` runs them with what
/// the vault already knows about sites, and shows the offline report before any site answers.
public struct SecurityAudit: Sendable {
    /// Where breach counts come from.
    public enum BreachSource: Sendable {
        /// A local index: nothing leaves the machine.
        case index(BreachIndex)
        /// The k-anonymity range API: only 5 hex digits of each SHA-1 leave the machine.
        case api(RangeClient)
        /// A breach-PSI server (docs/breach-psi.md): each password's 15-bit bucket and a blinded
        /// element leave the machine, in fixed-size padded batches; it tells whether a password
        /// leaked, not how often.
        case psi(BreachPSIChecker)
        /// Not checked (reported as a notice).
        case none(reason: String)
    }

    public var breachSource: BreachSource
    public var weakPolicy: WeakPasswordPolicy
    public var reuse: ReuseDetector
    public var discovery: ChangePasswordDiscovery
    /// Where upgrade offers come from; nil: none looked up (no network).
    public var upgradeOffers: (any UpgradeOfferSource)?
    public var reveal: Bool
    /// How sites are asked (concurrency, time per site, overall budget).
    public var lookupLimits: SiteLookups.Limits
    /// How long what sites said counts.
    public var knowledgePolicy: SiteKnowledge.Policy
    /// Stage timings and lookup deadlines are measured on it.
    public var clock: any Clock<Duration>
    /// What sites said is dated by it.
    public var now: @Sendable () -> Date

    public init(
        breachSource: BreachSource,
        weakPolicy: WeakPasswordPolicy = WeakPasswordPolicy(),
        reuse: ReuseDetector = .shared,
        discovery: ChangePasswordDiscovery = ChangePasswordDiscovery(probe: nil),
        upgradeOffers: (any UpgradeOfferSource)? = nil,
        reveal: Bool = false,
        lookupLimits: SiteLookups.Limits = SiteLookups.Limits(),
        knowledgePolicy: SiteKnowledge.Policy = .standard,
        clock: any Clock<Duration> = ContinuousClock(),
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.upgradeOffers = upgradeOffers
        self.breachSource = breachSource
        self.weakPolicy = weakPolicy
        self.reuse = reuse
        self.discovery = discovery
        self.reveal = reveal
        self.lookupLimits = lookupLimits
        self.knowledgePolicy = knowledgePolicy
        self.clock = clock
        self.now = now
    }

    /// A login URL on plain http to another machine (loopback is not sent over a network).
    static func isUnsecured(_ service: ServiceIdentifier) -> Bool {
        guard service.scheme == "http", let origin = ServiceOrigin(service.identifier) else { return false }
        return !origin.isPotentiallyTrustworthy
    }

    /// Progress: a stage name and items done / total.
    public typealias Progress = @Sendable (_ stage: String, _ done: Int, _ total: Int) -> Void

    /// Seconds spent per stage, for benchmarks (`--timings`), measured on the audit's clock.
    public struct Timings: Sendable {
        public var stages: [(name: String, seconds: Double)] = []

        public init() {}

        /// Adds a stage that took `elapsed`.
        public mutating func add(_ name: String, _ elapsed: Duration) {
            let (seconds, attoseconds) = elapsed.components
            stages.append((name, Double(seconds) + Double(attoseconds) / 1e18))
        }
    }

    /// The time since it was made, on a clock (``Clock/stopwatch()``), and sleeping on that clock.
    public struct Stopwatch: Sendable {
        /// The time since the stopwatch was made.
        public let elapsed: @Sendable () -> Duration
        /// Sleeps `duration` on the stopwatch's clock.
        public let sleep: @Sendable (Duration) async throws -> Void
        var last = Duration.zero

        /// The time since the last lap (or the start), added to `timings` as `name`.
        public mutating func lap(_ name: String, into timings: inout Timings) {
            let now = elapsed()
            timings.add(name, now - last)
            last = now
        }
    }

    /// A stopwatch on the audit's clock.
    public func stopwatch() -> Stopwatch { clock.stopwatch() }

    /// The change-password and upgrade lookups this audit makes.
    public var siteLookups: SiteLookups {
        SiteLookups(
            discovery: discovery,
            offers: upgradeOffers,
            limits: lookupLimits,
            policy: knowledgePolicy,
            clock: clock,
            now: now
        )
    }

    /// Every stage, asking every flagged credential's site (nothing is known beforehand).
    public func run(
        _ credentials: [Credential],
        unreadable: Int = 0,
        progress: Progress? = nil
    ) async -> (report: AuditReport, timings: Timings) {
        var timings = Timings()
        var findings = await self.findings(credentials, unreadable: unreadable, progress: progress, timings: &timings)
        await checkBreaches(&findings, progress: progress, timings: &timings)
        var stopwatch = self.stopwatch()
        let sites = findings.sites
        let outcome = await siteLookups.lookUp(sites, progress: progress)
        let knowledge = Dictionary(outcome.learned.map { ($0.origin, $0) }, uniquingKeysWith: { $1 })
        let report = findings.report(knowledge: knowledge, pending: Set(outcome.notLookedUp))
        stopwatch.lap("actions and report", into: &timings)
        return (report, timings)
    }

    // MARK: Stages

    /// The offline stage: breaches from a local index (the range API is left to
    /// ``checkBreaches(_:progress:timings:)``), reuse, strength and unsecured logins.
    public func findings(
        _ credentials: [Credential],
        unreadable: Int = 0,
        progress: Progress? = nil,
        timings: inout Timings
    ) async -> AuditFindings {
        var stopwatch = self.stopwatch()
        var notices: [String] = []
        if unreadable > 0 {
            notices.append("\(unreadable) credential(s) could not be decrypted and were not audited")
        }
        let withPasswords = credentials.filter { ($0.password ?? "").isEmpty == false }
        let breaches = indexBreaches(withPasswords, progress: progress)
        notices += breaches.notices
        stopwatch.lap("breach check", into: &timings)
        let reusedWith = self.reusedWith(withPasswords)
        stopwatch.lap("reuse", into: &timings)
        let verdicts = self.verdicts(withPasswords, progress: progress)
        stopwatch.lap("strength", into: &timings)
        let entries = credentials.map { credential in
            entry(
                credential,
                reusedWith: reusedWith[credential.id] ?? [],
                verdict: verdicts[credential.id],
                digest: breaches.mode == .pending
                    ? credential.password.flatMap { $0.isEmpty ? nil : SHA1Digest(password: $0) } : nil
            )
        }
        return AuditFindings(
            entries: entries,
            notices: notices,
            breachCheck: breaches.mode,
            breachCounts: breaches.counts
        )
    }

    /// The breach counts a local index gives (or the mode that says why there are none yet).
    func indexBreaches(
        _ withPasswords: [Credential],
        progress: Progress?
    ) -> (counts: [CredentialID: Int], mode: BreachCheckMode, notices: [String]) {
        switch breachSource {
        case .index(let index):
            do {
                var counts: [CredentialID: Int] = [:]
                for (position, credential) in withPasswords.enumerated() {
                    counts[credential.id] = try index.count(of: SHA1Digest(password: credential.password!))
                    if position % 512 == 0 { progress?("breaches", position, withPasswords.count) }
                }
                let approximate = "breach counts come from a compact index and are approximate (powers of two)"
                return (counts, .index, index.exactCounts ? [] : [approximate])
            } catch {
                // A damaged index: no count read from it is trusted.
                return ([:], .skipped, ["breach check skipped: \(error.message)"])
            }
        case .api, .psi:
            return ([:], .pending, [])
        case .none(let reason):
            return ([:], .skipped, ["breach check skipped: \(reason)"])
        }
    }

    /// Reuse: credentials sharing a password across services that are not one backend.
    func reusedWith(_ withPasswords: [Credential]) -> [CredentialID: [CredentialID]] {
        var byPassword: [String: [Credential]] = [:]
        for credential in withPasswords {
            byPassword[credential.password!, default: []].append(credential)
        }
        var reusedWith: [CredentialID: [CredentialID]] = [:]
        for group in byPassword.values where group.count > 1 {
            let backends = group.map { credential -> String in
                let hosts = credential.services.compactMap { $0.host ?? $0.androidPackage }
                return hosts.first.map(reuse.backend(of:)) ?? "id:\(credential.id)"
            }
            guard Set(backends).count > 1 else { continue }
            for (index, credential) in group.enumerated() {
                reusedWith[credential.id] = group.enumerated().filter { backends[$0.offset] != backends[index] }
                    .map(\.element.id).sorted()
            }
        }
        return reusedWith
    }

    /// Strength: each password judged with its user name and site as context.
    func verdicts(_ withPasswords: [Credential], progress: Progress?) -> [CredentialID: WeakPasswordPolicy.Verdict] {
        var verdicts: [CredentialID: WeakPasswordPolicy.Verdict] = [:]
        for (position, credential) in withPasswords.enumerated() {
            let inputs = WeakPasswordPolicy.userInputs(user: credential.user, domain: credential.primaryDomain)
            verdicts[credential.id] = weakPolicy.judge(credential.password!, userInputs: inputs)
            if position % 256 == 0 { progress?("strength", position, withPasswords.count) }
        }
        return verdicts
    }

    /// One credential's item (issues and severity follow from the breach counts).
    func entry(
        _ credential: Credential,
        reusedWith: [CredentialID],
        verdict: WeakPasswordPolicy.Verdict?,
        digest: SHA1Digest?
    ) -> AuditFindings.Entry {
        let service = credential.services.first
        return AuditFindings.Entry(
            item: AuditItem(
                id: credential.id.rawValue,
                service: credential.primaryDomain ?? service?.identifier ?? "",
                user: credential.user,
                title: credential.content.displayTitle,
                issues: [],
                severity: .none,
                actions: AuditActions(),
                breachCount: nil,
                strengthScore: verdict?.score,
                weakness: verdict?.isWeak == true ? verdict?.reason : nil,
                reusedWith: reusedWith.map(\.rawValue),
                password: reveal ? credential.password : nil
            ),
            weak: verdict?.isWeak == true,
            unsecured: credential.services.contains(where: Self.isUnsecured),
            hasPassword: credential.password != nil,
            digest: digest,
            origin: service.flatMap { ChangePasswordDiscovery.origin(for: $0.identifier) },
            domain: credential.primaryDomain
        )
    }

    /// The notice of a private breach check whose server key was not pinned.
    public static let unpinnedNotice =
        "breach-PSI key not pinned: the server's published key was trusted as it is (a server or a network attacker could answer \"not breached\" to everything); pin it with --breach-psi-key KEY-ID"

    /// The notice of a private check that looked in the local list first.
    static func localListNotice(found: Int) -> String {
        "\(found) distinct password(s) found in the local list of the most common leaked passwords (checked on this device, never sent; the rest went to the server in the same padded batches)"
    }

    /// The online stage: asks the range API or the breach-PSI server about the passwords when one
    /// is the source (nothing happens otherwise). A failure is a notice and the check counts as
    /// skipped: no credential is reported "not breached" from a check that did not finish.
    public func checkBreaches(_ findings: inout AuditFindings, progress: Progress? = nil, timings: inout Timings) async
    {
        guard findings.breachCheck == .pending else { return }
        var stopwatch = self.stopwatch()
        let pending = findings.pendingDigests
        switch breachSource {
        case .api(let client):
            progress?("breaches", 0, pending.count)
            do {
                let counts = try await client.counts(for: pending.map(\.digest))
                var byID: [CredentialID: Int] = [:]
                for (entry, count) in zip(pending, counts) {
                    if let id = CredentialID(rawValue: entry.id) { byID[id] = count }
                }
                findings.resolveBreaches(byID, mode: .api, notice: nil)
            } catch {
                findings.resolveBreaches(nil, mode: .api, notice: "breach check skipped: \(error.message)")
            }
            progress?("breaches", pending.count, pending.count)
            stopwatch.lap("breach check (range API)", into: &timings)
        case .psi(let checker):
            progress?("breaches", 0, pending.count)
            let digests = pending.map(\.digest)
            // The local list first: what it holds is breached without asking anyone.
            let local = checker.localMatches(digests)
            // The list's own count (a power of two at most the times seen) is what is known of them.
            var foundLocally: [CredentialID: Int] = [:]
            for (entry, count) in zip(pending, local.counts) where count > 0 {
                if let id = CredentialID(rawValue: entry.id) { foundLocally[id] = count }
            }
            // Distinct passwords (a reused password is one), beside the credentials that hold them.
            let localDigests = Set(zip(digests, local.found).filter(\.1).map(\.0))
            let distinctNotChecked = Set(digests).subtracting(localDigests).count
            var notices: [String] = []
            if let failure = local.failure {
                notices.append(
                    "the local list of common leaked passwords could not be read (\(failure.message)): those passwords were asked of the server"
                )
            }
            do {
                let breached = try await checker.breached(digests, foundLocally: local.found) { done, total in
                    progress?("breaches", done, total)
                }
                var byID: [CredentialID: Int] = [:]
                for (entry, flag) in zip(pending, breached) {
                    if let id = CredentialID(rawValue: entry.id) { byID[id] = flag ? 1 : 0 }
                }
                if checker.pin == nil { notices.append(Self.unpinnedNotice) }
                if checker.localList != nil { notices.append(Self.localListNotice(found: localDigests.count)) }
                findings.resolveBreaches(byID, mode: .psi, notice: nil, foundLocally: foundLocally)
            } catch {
                let notChecked = pending.count - foundLocally.count
                notices.append(
                    "breach check skipped: \(error.message) (\(notChecked) credential(s) not checked, "
                        + "\(distinctNotChecked) distinct password(s)"
                        + (foundLocally.isEmpty
                            ? ")"
                            : "; \(foundLocally.count) found in the local list of common leaked passwords are reported breached)")
                )
                findings.resolveBreaches(nil, mode: .psi, notice: nil, foundLocally: foundLocally)
            }
            for notice in notices { findings.notices.append(notice) }
            progress?("breaches", pending.count, pending.count)
            stopwatch.lap("breach check (private set intersection)", into: &timings)
        case .index, .none:
            return
        }
    }
}

extension Clock where Duration == Swift.Duration {
    /// A stopwatch started now on this clock (what audits measure and wait with: a clock that tests
    /// can inject, seen through one concrete type).
    public func stopwatch() -> SecurityAudit.Stopwatch {
        let start = now
        return SecurityAudit.Stopwatch(
            elapsed: { start.duration(to: self.now) },
            sleep: { duration in try await self.sleep(for: duration) }
        )
    }
}
