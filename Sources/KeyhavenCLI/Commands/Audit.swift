import ArgumentParser
import BreachCheck
import BreachCheckHTTP
import BreachPSI
import Foundation
import KeyhavenApp
import SecurityRecommendations
import UpgradeHTTP
import Vault

extension Keyhaven {
    struct Audit: AsyncParsableCommand, VaultCommand {
        static let configuration = CommandConfiguration(
            abstract: "Find breached, reused, weak and unsecured passwords in the vault.",
            discussion: """
                breached: seen in Pwned Passwords, checked with an offline index (--breach-index, \
                $KEYHAVEN_BREACH_INDEX, or pwned.khbi beside the vault when present), else the \
                k-anonymity range API (only 5 hex digits of a SHA-1 leave the machine; \
                https://api.pwnedpasswords.com unless --breach-api), else skipped with a notice. \
                --breach-psi URL asks a breach-PSI server instead (`keyhaven breach psi serve`): only a \
                15-bit bucket and a blinded element per password leave the machine, in batches of 16 \
                padded with random passwords; it says whether a password leaked, not how often. If that \
                server cannot be reached or its answers cannot be verified (another key, a bad proof), \
                the passwords are reported not checked, never not breached. With --breach-psi, the \
                device's list of the most common leaked passwords (`keyhaven breach top`; --breach-top, \
                else pwned-top.khbi beside the vault when present) is checked first, with no \
                network: a password found there is reported breached (source local-list) even when the \
                server cannot be reached, and a stand-in takes its place in its batch (the same every \
                run: HMAC under a key kept 0600 beside the list), so the server sees the same batches \
                and buckets either way.

                reused: the same password on services that are not the same backend (Apple's \
                shared-credentials list groups sites that share one). weak: zxcvbn score 2 or less \
                with your user name and the site as context, or a common/patterned 4- or 6-digit PIN. \
                unsecured: a login URL on plain http.

                Severity, most urgent first: high (breached), reused-and-weak, reused, weak, unsecured. \
                Each flagged item gets a change-password URL from the site's \
                /.well-known/change-password (trusted only when the site answers non-2xx for a page \
                that cannot exist) or Apple's per-site list. Sites are asked 16 at a time, 4 s each, 20 s in \
                all; when none answers, the network counts as down. What they said is kept in the vault \
                (sealed): an answer for a week, a site that did not answer is asked again after 5 minutes, \
                then 10, 20… up to a day. --no-network contacts no site and no API (what the vault knows \
                is still shown).
                """
        )
        @OptionGroup var options: VaultOptions
        @ParentCommand var root: Keyhaven
        @Flag(name: .long, help: "Print {\"items\": [...], \"summary\": {...}} as JSON.") var json = false
        @Option(name: .customLong("breach-index"), help: ArgumentHelp("An offline breach index.", valueName: "index"))
        var breachIndex: String?
        @Option(name: .customLong("breach-api"), help: ArgumentHelp("A range API base URL.", valueName: "url"))
        var breachAPI: String?
        @Option(
            name: .customLong("breach-psi"),
            help: ArgumentHelp("A breach-PSI server's base URL (private check).", valueName: "url")
        )
        var breachPSI: String?
        @Option(name: .customLong("breach-psi-key"), help: pinHelp) var breachPSIKey: String?
        static let pinHelp = ArgumentHelp(
            "The breach-PSI server's key to pin: the key ID `breach psi build` prints or the contents of its public-key.hex. Another key is refused (nothing checked); without it the published key is trusted as it is.",
            valueName: "key-id-or-hex"
        )
        @Option(name: .customLong("breach-top"), help: topHelp) var breachTop: String?
        static let topHelp = ArgumentHelp(
            "The local list of the most common leaked passwords (`keyhaven breach top`), checked before --breach-psi's server (default: pwned-top.khbi beside the vault, when present).",
            valueName: "file"
        )
        @Flag(name: .customLong("no-breach-check"), help: "Do not check breaches.") var noBreachCheck = false
        @Flag(name: .customLong("no-network"), help: "Contact nothing: no range API, no change-password probes.")
        var noNetwork = false
        @Flag(name: .long, help: "Include passwords in the report.") var reveal = false
        @Flag(name: .long, help: "Print the time spent in each stage on standard error.") var timings = false

        func validate() throws {
            if [breachIndex != nil, breachAPI != nil, breachPSI != nil, noBreachCheck].filter({ $0 }).count > 1 {
                throw ValidationError(
                    "use only one of --breach-index, --breach-api, --breach-psi and --no-breach-check"
                )
            }
            if noNetwork && (breachAPI != nil || breachPSI != nil) {
                throw ValidationError(
                    "\(breachAPI != nil ? "--breach-api" : "--breach-psi") needs the network; drop --no-network"
                )
            }
            if breachPSIKey != nil && breachPSI == nil {
                throw ValidationError(
                    "--breach-psi-key pins the key of a --breach-psi server; give --breach-psi URL too"
                )
            }
            if breachTop != nil && breachPSI == nil {
                throw ValidationError(
                    "--breach-top is the local half of the private check; give --breach-psi URL too (an offline index goes to --breach-index)"
                )
            }
            if let breachPSI {
                do throws(BreachPSIError) {
                    try HTTPBreachPSITransport.check(base: breachPSI)
                    _ = try breachPSIKey.map { key throws(BreachPSIError) in try BreachPSIKeyPin(hex: key) }
                } catch {
                    throw ValidationError(error.message)
                }
            }
        }

        func breachSource() throws -> SecurityAudit.BreachSource {
            let environment = CommandIO.current.environment
            if noBreachCheck { return .none(reason: "--no-breach-check") }
            if let breachPSI {
                let pin = try breachPSIKey.map { key in
                    do throws(BreachPSIError) { return try BreachPSIKeyPin(hex: key) } catch {
                        throw Output.failure(error.message)
                    }
                }
                let list = try localList()
                return .psi(
                    BreachPSIChecker(
                        transport: HTTPBreachPSITransport(base: breachPSI),
                        pin: pin,
                        localList: list?.index,
                        standInKey: list?.standInKey
                    )
                )
            }
            var indexPath = breachIndex ?? environment["KEYHAVEN_BREACH_INDEX"].flatMap { $0.isEmpty ? nil : $0 }
            if indexPath == nil && breachAPI == nil {
                let defaultIndex = options.url(global: root.vault).deletingLastPathComponent().appendingPathComponent(
                    "pwned.khbi"
                )
                if FileManager.default.fileExists(atPath: defaultIndex.path) { indexPath = defaultIndex.path }
            }
            if let indexPath {
                do {
                    return .index(try BreachIndex(url: URL(fileURLWithPath: indexPath)))
                } catch {
                    throw Output.failure(error.message)
                }
            }
            if noNetwork {
                return .none(reason: "no offline index configured and --no-network given")
            }
            let base = breachAPI ?? "https://api.pwnedpasswords.com"
            return .api(RangeClient(transport: HTTPRangeTransport(base: base), baseDescription: base))
        }

        /// The list of the most common leaked passwords: --breach-top (which must open), else
        /// pwned-top.khbi beside the vault when present (a damaged one is an error too, never
        /// skipped quietly); with the key of its stand-ins beside it (made on first use).
        func localList() throws -> (index: BreachIndex, standInKey: BreachPSIStandInKey)? {
            let path = breachTop ?? Keyhaven.Breach.Top.defaultOutput(vault: options.vault ?? root.vault).path
            guard breachTop != nil || FileManager.default.fileExists(atPath: path) else { return nil }
            let index: BreachIndex
            do {
                index = try BreachIndex(url: URL(fileURLWithPath: path))
            } catch {
                throw Output.failure(
                    "the local list of common leaked passwords \(path): \(error.message); rebuild it with `keyhaven breach top HIBP_FILE --output \(path)`"
                )
            }
            do throws(BreachPSIError) {
                return (index, try BreachPSIStandInKey.loadOrCreate(besideList: URL(fileURLWithPath: path)))
            } catch {
                throw Output.failure(error.message)
            }
        }

        func run() async throws {
            let start = Date()
            let source = try breachSource()
            let session = try await openSession()
            let opened = Date()
            let bar = ProgressBar()
            let service = AuditService(
                breachSource: source,
                network: noNetwork ? .none : .init(probe: HTTPWellKnownProbe(), manifests: HTTPManifestReader()),
                reveal: reveal
            )
            let outcome = try await reportingAsync {
                try await service.run(session) { stage, done, total in bar.update(stage, done: done, total: total) }
            }
            bar.finish()
            for failure in outcome.unreadable {
                Output.error("keyhaven: error: \(failure.message)")
            }
            let (report, stages) = (outcome.report, outcome.timings)
            if timings {
                Output.error(String(format: "timing: unlock and decrypt %.3f s", opened.timeIntervalSince(start)))
                for stage in stages.stages {
                    Output.error(String(format: "timing: %@ %.3f s", stage.name, stage.seconds))
                }
                Output.error(String(format: "timing: total %.3f s", Date().timeIntervalSince(start)))
            }
            if json {
                print(try Output.json(report))
                return
            }
            printTable(report)
        }

        func printTable(_ report: AuditReport) {
            let summary = report.summary
            print("Security recommendations for \(summary.credentials) credentials: \(summary.withIssues) with issues.")
            for severity in AuditSeverity.allCases where severity != .none {
                let items = report.items.filter { $0.severity == severity }
                guard !items.isEmpty else { continue }
                print("")
                print("\(severity.title) (\(items.count))")
                for item in items {
                    var line = "  \(item.id.prefix(8))  \(item.service)  \(item.user.isEmpty ? "-" : item.user)  "
                    line += item.issues.map(\.rawValue).joined(separator: ", ")
                    if item.breachSource == "local-list" {
                        // The list's count is a power of two at most the times seen: a lower bound.
                        line += " (a common leaked password, found on this device"
                        line += (item.breachCount ?? 0) > 1 ? "; seen at least \(item.breachCount ?? 0)×)" : ")"
                    } else if let count = item.breachCount, count > 0, summary.breachCheck != .psi,
                        summary.breachCheck != .skipped
                    {
                        line += " (seen \(count)×)"
                    }
                    if let weakness = item.weakness { line += " — \(weakness)" }
                    if let reveal = item.password { line += "  password: \(reveal)" }
                    print(line)
                    if let url = item.actions.changePasswordURL {
                        print("      change it at \(url) (\(item.actions.changePasswordSource ?? ""))")
                    }
                    if let offer = item.actions.upgrade, offer.passkey {
                        print("      recommended: upgrade to a passkey: keyhaven upgrade \(item.service) --to passkey")
                    }
                    if let offer = item.actions.upgrade, offer.strongPassword || offer.signIn {
                        print("      one-tap upgrade available: keyhaven upgrade \(item.service)")
                    }
                }
            }
            print("")
            print("No issues: \(summary.bySeverity[.none] ?? 0)")
            let breach: String
            switch summary.breachCheck {
            case .index: breach = "offline index"
            case .api: breach = "range API (only 5 hex digits of each hash were sent)"
            case .psi:
                breach = "private set intersection (only a 15-bit bucket and a blinded element per password were sent)"
            case .skipped, .pending: breach = "skipped"
            }
            print("Breach check: \(breach).")
            for notice in summary.notices {
                print("Note: \(notice)")
            }
        }
    }
}
