import AccountModification
import ArgumentParser
import Foundation
import KeyhavenHTTP
import KeyhavenUpgrade
import Vault

extension Keyhaven {
    struct Upgrade: VaultCommand {
        static let configuration = CommandConfiguration(
            abstract: "Change an account to a new strong password in one step.",
            discussion: """
                Works with services that publish an account-modification manifest \
                (/.well-known/account-modification). Keyhaven generates a password that meets the \
                service's requirements (else Apple's published rule for the site, else Apple's \
                format), writes it to the vault's upgrade journal before asking the service, and \
                stores what the service confirms (the old password goes to the history). If the \
                service needs you (a second factor), Keyhaven prints its page, opens a browser when \
                one is available, and waits; Ctrl-C cancels the request on the service. An upgrade \
                interrupted by a crash is settled the next time Keyhaven opens the vault.
                """
        )
        @OptionGroup var options: VaultOptions
        @ParentCommand var root: Keyhaven
        @Argument(help: "The service: a domain, or a URL such as http://127.0.0.1:8081 for a local one.")
        var service: String?
        @Option(name: .long, help: "The account's user name, when the vault has several for the service.") var user:
            String?
        @Option(name: .long, help: "strong-password (sign-in arrives with the identity provider).") var to =
            "strong-password"
        @Flag(name: .customLong("no-browser"), help: "Print the service's page instead of opening a browser.")
        var noBrowser = false
        @Flag(name: .customLong("no-interaction"), help: "Fail instead of waiting when the service needs you.")
        var noInteraction = false
        @Flag(name: .long, help: "Only settle interrupted upgrades.") var reconcile = false
        @Option(name: .long, help: "Seconds to wait for the service before giving up.") var timeout = 600

        func validate() throws {
            if !reconcile && service == nil {
                throw ValidationError("name the service to upgrade (or use --reconcile)")
            }
            if to != "strong-password" && to != "sign-in" {
                throw ValidationError("--to is strong-password or sign-in")
            }
        }

        func run() async throws {
            let vault = try await openVault()
            if reconcile {
                let left = (try? vault.pendingUpgrades().count) ?? 0
                print(left == 0 ? "No upgrade is pending." : "\(left) upgrade(s) still unconfirmed.")
                if left > 0 { throw ExitCode(3) }
                return
            }
            guard let service else { return }
            let candidates = try reporting { try vault.credentials(forService: service).credentials }
            let matching = candidates.filter { user == nil || $0.user == user }
            guard !matching.isEmpty else {
                throw Output.failure(
                    candidates.isEmpty
                        ? "the vault has no credential for \(service)"
                        : "no credential for \(service) with user \(user ?? "")"
                )
            }
            guard matching.count == 1, let credential = matching.first else {
                let users = matching.map { $0.user.isEmpty ? "(no user name)" : $0.user }.joined(separator: ", ")
                throw Output.failure("several accounts for \(service) (\(users)): choose one with --user")
            }
            guard to == "strong-password" else {
                throw Output.failure("upgrading to sign-in needs an identity provider: see `keyhaven idp login`")
            }
            let interrupt = InterruptFlag()
            interrupt.install()
            let coordinator = UpgradeCoordinator(
                vault: vault,
                environment: HTTPUpgradeEnvironment(),
                host: TerminalHost(openBrowser: !noBrowser),
                deadline: .seconds(timeout)
            )
            let result = await coordinator.upgradeToStrongPassword(
                credential.id,
                service: service,
                allowInteraction: !noInteraction
            ) { interrupt.isRaised }
            let name = credential.user.isEmpty ? service : "\(credential.user) on \(service)"
            switch result {
            case .upgraded(_, let substituted):
                print(
                    "Upgraded \(name): a new strong password is saved"
                        + (substituted ? " (the service chose it)" : "") + "; the old one is in the history."
                )
            case .failed(let reason, let code):
                if code == .userCanceled {
                    throw Output.failure("cancelled: \(name) keeps its password")
                }
                throw Output.failure("\(name) was not upgraded: \(reason)")
            case .pending(let reason):
                Output.error(
                    "keyhaven: the service did not confirm (\(reason)). Both passwords are kept; Keyhaven will ask it "
                        + "again next time (or run `keyhaven upgrade --reconcile`)."
                )
                throw ExitCode(3)
            }
        }
    }
}
