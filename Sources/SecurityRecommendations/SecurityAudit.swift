public import BreachCheck
import Foundation
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
public struct SecurityAudit: Sendable {
    /// Where breach counts come from.
    public enum BreachSource: Sendable {
        /// A local index: nothing leaves the machine.
        case index(BreachIndex)
        /// The k-anonymity range API: only 5 hex digits of each SHA-1 leave the machine.
        case api(RangeClient)
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

    public init(
        breachSource: BreachSource,
        weakPolicy: WeakPasswordPolicy = WeakPasswordPolicy(),
        reuse: ReuseDetector = .shared,
        discovery: ChangePasswordDiscovery = ChangePasswordDiscovery(probe: nil),
        upgradeOffers: (any UpgradeOfferSource)? = nil,
        reveal: Bool = false
    ) {
        self.upgradeOffers = upgradeOffers
        self.breachSource = breachSource
        self.weakPolicy = weakPolicy
        self.reuse = reuse
        self.discovery = discovery
        self.reveal = reveal
    }

    /// A login URL on plain http to another machine (loopback is not sent over a network).
    static func isUnsecured(_ service: ServiceIdentifier) -> Bool {
        guard service.scheme == "http", let origin = ServiceOrigin(service.identifier) else { return false }
        return !origin.isPotentiallyTrustworthy
    }

    /// Progress: a stage name and items done / total.
    public typealias Progress = @Sendable (_ stage: String, _ done: Int, _ total: Int) -> Void

    /// Seconds spent per stage, for benchmarks (`--timings`).
    public struct Timings: Sendable {
        public var stages: [(name: String, seconds: Double)] = []
    }

    public func run(
        _ credentials: [Credential],
        unreadable: Int = 0,
        progress: Progress? = nil
    ) async -> (report: AuditReport, timings: Timings) {
        var timings = Timings()
        var clock = Date()
        func lap(_ name: String) {
            let now = Date()
            timings.stages.append((name, now.timeIntervalSince(clock)))
            clock = now
        }
        var notices: [String] = []
        if unreadable > 0 {
            notices.append("\(unreadable) credential(s) could not be decrypted and were not audited")
        }
        let withPasswords = credentials.filter { ($0.password ?? "").isEmpty == false }

        // Breaches.
        var breachCounts: [CredentialID: Int] = [:]
        let breachMode: String
        switch breachSource {
        case .index(let index):
            do {
                for (position, credential) in withPasswords.enumerated() {
                    breachCounts[credential.id] = try index.count(of: SHA1Digest(password: credential.password!))
                    if position % 512 == 0 { progress?("breaches", position, withPasswords.count) }
                }
                breachMode = "index"
                if !index.exactCounts {
                    notices.append("breach counts come from a compact index and are approximate (powers of two)")
                }
            } catch {
                // A damaged index: no count read from it is trusted.
                breachCounts = [:]
                breachMode = "skipped"
                notices.append("breach check skipped: \(error.message)")
            }
        case .api(let client):
            breachMode = "api"
            progress?("breaches", 0, withPasswords.count)
            do {
                let counts = try await client.counts(for: withPasswords.map { SHA1Digest(password: $0.password!) })
                for (credential, count) in zip(withPasswords, counts) {
                    breachCounts[credential.id] = count
                }
            } catch {
                notices.append("breach check skipped: \(error.message)")
            }
        case .none(let reason):
            breachMode = "skipped"
            notices.append("breach check skipped: \(reason)")
        }
        lap("breach check")

        // Reuse: group by password, then count backends.
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
        lap("reuse")

        // Strength.
        var verdicts: [CredentialID: WeakPasswordPolicy.Verdict] = [:]
        for (position, credential) in withPasswords.enumerated() {
            let inputs = WeakPasswordPolicy.userInputs(user: credential.user, domain: credential.primaryDomain)
            verdicts[credential.id] = weakPolicy.judge(credential.password!, userInputs: inputs)
            if position % 256 == 0 { progress?("strength", position, withPasswords.count) }
        }
        lap("strength")

        // Issues and severities.
        var issuesByID: [CredentialID: Set<AuditIssue>] = [:]
        for credential in credentials {
            var issues = Set<AuditIssue>()
            if (breachCounts[credential.id] ?? 0) > 0 { issues.insert(.breached) }
            if reusedWith[credential.id] != nil { issues.insert(.reused) }
            if verdicts[credential.id]?.isWeak == true { issues.insert(.weak) }
            if credential.services.contains(where: Self.isUnsecured) { issues.insert(.unsecured) }
            issuesByID[credential.id] = issues
        }

        // Actions, for flagged credentials: one discovery per distinct service, 8 at a time.
        var services: [String: String?] = [:]  // identifier -> domain
        for credential in credentials where issuesByID[credential.id]?.isEmpty == false {
            if let first = credential.services.first { services[first.identifier] = credential.primaryDomain }
        }
        let discovery = self.discovery
        let upgradeOffers = self.upgradeOffers
        let pending = services.sorted { $0.key < $1.key }
        var actionsByService: [String: AuditActions] = [:]
        var unreachable = Set<String>()  // origins that did not answer
        await withTaskGroup(of: (String, AuditActions, unreachableOrigin: String?).self) { group in
            var next = 0
            func schedule() {
                guard next < pending.count else { return }
                let (identifier, domain) = pending[next]
                next += 1
                group.addTask {
                    let lookup = await discovery.lookUp(service: identifier, domain: domain)
                    let offer = await upgradeOffers?.upgradeOffer(service: identifier)
                    let origin = ChangePasswordDiscovery.origin(for: identifier)
                    // A site's manifest is nil (unknown) only when it could not be reached.
                    let reached = lookup.reached && (upgradeOffers == nil || offer != nil || origin == nil)
                    return (
                        identifier,
                        AuditActions(
                            changePasswordURL: lookup.found.url,
                            changePasswordSource: lookup.found.source,
                            upgrade: offer
                        ),
                        reached ? nil : origin
                    )
                }
            }
            for _ in 0..<8 { schedule() }
            while let (identifier, actions, unreachableOrigin) = await group.next() {
                actionsByService[identifier] = actions
                if let unreachableOrigin { unreachable.insert(unreachableOrigin) }
                progress?("actions", actionsByService.count, pending.count)
                schedule()
            }
        }

        var items: [AuditItem] = []
        for credential in credentials {
            let issues = issuesByID[credential.id] ?? []
            let verdict = verdicts[credential.id]
            let checked = breachMode != "skipped" && credential.password != nil
            items.append(
                AuditItem(
                    id: credential.id.rawValue,
                    service: credential.primaryDomain ?? credential.services.first?.identifier ?? "",
                    user: credential.user,
                    title: credential.content.displayTitle,
                    issues: issues.sorted(),
                    severity: AuditSeverity(issues: issues),
                    actions: credential.services.first.flatMap { actionsByService[$0.identifier] } ?? AuditActions(),
                    breachCount: checked ? breachCounts[credential.id] ?? 0 : nil,
                    strengthScore: verdict?.score,
                    weakness: verdict?.isWeak == true ? verdict?.reason : nil,
                    reusedWith: (reusedWith[credential.id] ?? []).map(\.rawValue),
                    password: reveal ? credential.password : nil
                )
            )
        }
        items.sort { a, b in
            if a.severity != b.severity { return a.severity < b.severity }
            if a.service != b.service { return a.service < b.service }
            if a.user != b.user { return a.user < b.user }
            return a.id < b.id
        }
        lap("actions and report")

        if !unreachable.isEmpty {
            notices.append(
                unreachable.count == 1
                    ? "1 site could not be reached (\(unreachable.first!)): its change-password page and upgrades may be missing."
                    : "\(unreachable.count) sites could not be reached: their change-password pages and upgrades may be missing."
            )
        }
        var bySeverity: [String: Int] = [:]
        for severity in AuditSeverity.allCases {
            bySeverity[severity.rawValue] = items.filter { $0.severity == severity }.count
        }
        let summary = AuditSummary(
            credentials: credentials.count,
            withIssues: items.filter { !$0.issues.isEmpty }.count,
            breached: items.filter { $0.issues.contains(.breached) }.count,
            reused: items.filter { $0.issues.contains(.reused) }.count,
            weak: items.filter { $0.issues.contains(.weak) }.count,
            unsecured: items.filter { $0.issues.contains(.unsecured) }.count,
            bySeverity: bySeverity,
            breachCheck: breachMode,
            notices: notices,
            unreachableSites: unreachable.count
        )
        return (AuditReport(items: items, summary: summary), timings)
    }
}
