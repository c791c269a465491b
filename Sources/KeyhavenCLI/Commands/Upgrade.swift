import AccountModification
import ArgumentParser
import Foundation
import IdentityProvider
import IdentityProviderClient
import KeyhavenApp
import UpgradeHTTP
import Vault
import _KeyhavenSupport

extension Keyhaven {
    struct Upgrade: VaultCommand {
        static let configuration = CommandConfiguration(
            abstract: "Change an account to a new strong password, Sign in with Keyhaven, or a passkey, in one step.",
            discussion: """
                Works with services that publish an account-modification manifest \
                (/.well-known/account-modification). Keyhaven generates a password that meets the \
                service's requirements (else Apple's published rule for the site, else Apple's \
                format), writes it to the vault's upgrade journal before asking the service, and \
                stores what the service confirms (the old password goes to the history). If the \
                service needs you (a second factor), Keyhaven prints its page, opens a browser when \
                one is available, and waits; Ctrl-C cancels the request on the service. An upgrade \
                interrupted by a crash is settled by the next `keyhaven upgrade` (or `--reconcile`), \
                which asks the service what happened; until then both passwords are kept.

                `--to passkey`: the service (its manifest says supportsUpgradeToPasskey) sends \
                WebAuthn creation options; Keyhaven makes the passkey, journals it, and sends it; \
                the service links it and may retire the password (then it moves to the history). \
                The passkey is in `keyhaven passkey list` and signs in through the browser extension.
                """
        )
        @OptionGroup var options: VaultOptions
        @ParentCommand var root: Keyhaven
        @Argument(help: "The service: a domain, or a URL such as http://127.0.0.1:8081 for a local one.")
        var service: String?
        @Option(name: .long, help: "The account's user name, when the vault has several for the service.") var user:
            String?
        @Option(
            name: .long,
            help:
                "strong-password, sign-in (Sign in with Keyhaven; needs `keyhaven idp login` first), or passkey."
        ) var to: Target = .strongPassword
        @Option(
            name: .long,
            help: "Sign-in upgrades, first time with the service: share or hide your e-mail (asked when absent)."
        ) var email: EmailChoice?
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
        }

        func run() async throws {
            let unlocked = try await options.openSession(global: root.vault)
            try await withUnlockedVault(unlocked) { vault in
                // The one command that settles interrupted upgrades (it contacts services anyway).
                let (pendingBefore, left) = try await Reconciler.run(vault)
                if reconcile {
                    print(
                        left > 0
                            ? "\(left) upgrade(s) still unconfirmed."
                            : pendingBefore == 0 ? "No upgrade is pending." : "Every pending upgrade is settled."
                    )
                    if left > 0 { throw ExitCode(3) }
                    return
                }
                guard let service else { return }
                // Only credentials saved for this very origin (scheme, host and port): an upgrade sends
                // the current password to the service, so a parent domain's or another port's will not do.
                let candidates = try reporting {
                    try vault.credentials(
                        forService: ServiceOrigin(service: service)?.serialized ?? service,
                        accepting: .exact
                    )
                    .credentials
                }
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
                let interrupt = InterruptFlag()
                interrupt.install()
                let coordinator = UpgradeService(
                    vault: vault,
                    environment: HTTPUpgradeEnvironment(),
                    host: TerminalHost(openBrowser: !noBrowser),
                    deadline: .seconds(timeout)
                )
                let result: UpgradeResult
                if to == .signIn {
                    let manifest: AccountModificationManifest
                    do {
                        manifest = try await HTTPUpgradeEnvironment().manifest(for: service)
                    } catch let error as ManifestError where error.code == .unreachable {
                        // Not an answer: the service may well offer it (P4 of the 11-27 review).
                        throw Output.failure(
                            "cannot read \(service)'s upgrade manifest (\(error.message)); nothing was changed: try again when it can be reached"
                        )
                    } catch {
                        throw Output.failure("\(service) does not offer upgrades to Sign in with Keyhaven (\(error))")
                    }
                    guard let issuer = manifest.signIn?.issuer else {
                        throw Output.failure("\(service) does not offer upgrades to Sign in with Keyhaven")
                    }
                    let session = try providerSession(vault, issuer)
                    let choice = email?.rawValue
                    let authority = DeviceSignInAuthority(session: session) { consent in
                        await Self.consent(consent, choice: choice)
                    }
                    result = await coordinator.upgradeToSignIn(
                        credential.id,
                        service: service,
                        authority: authority,
                        allowInteraction: !noInteraction
                    ) { interrupt.isRaised }
                } else if to == .passkey {
                    result = await coordinator.upgradeToPasskey(
                        credential.id,
                        service: service,
                        allowInteraction: !noInteraction
                    ) { interrupt.isRaised }
                } else {
                    result = await coordinator.upgradeToStrongPassword(
                        credential.id,
                        service: service,
                        allowInteraction: !noInteraction
                    ) { interrupt.isRaised }
                }
                let name = credential.user.isEmpty ? service : "\(credential.user) on \(service)"
                switch result {
                case .upgraded where to == .signIn:
                    print(
                        "Upgraded \(name): it now signs in with Keyhaven; the password no longer works and is kept "
                            + "in the history."
                    )
                case .upgraded(let id, _) where to == .passkey:
                    let kept = (try? vault.credential(id).password) != nil
                    print(
                        "Upgraded \(name): it now signs in with a passkey kept in Keyhaven"
                            + (kept
                                ? "; its password still works."
                                : "; the password no longer works and is kept in the history.")
                    )
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
}

extension Keyhaven.Upgrade {
    /// `--to`: what the account becomes.
    enum Target: String, ExpressibleByArgument, CaseIterable {
        case strongPassword = "strong-password"
        case signIn = "sign-in"
        case passkey
    }

    /// `--email`: the answer to the consent step's e-mail question.
    enum EmailChoice: String, ExpressibleByArgument, CaseIterable {
        case share
        case hide
    }

    /// The consent step on the terminal. It always names the service being switched and the
    /// provider's client it is registered as, also when the person already uses Sign in with
    /// Keyhaven with it; `--email` (`choice`) answers the e-mail question only. On a terminal the
    /// person confirms (or cancels); without one the command line itself is the confirmation, and the
    /// first time needs `--email`.
    static func consent(_ consent: SignInConsent, choice: String?) async -> String? {
        Output.error(
            "keyhaven: switching \(consent.service) to Sign in with Keyhaven: \(consent.issuer) signs you in to it "
                + "as \(consent.serviceName) (\(consent.clientId))."
        )
        if let prompt = consent.prompt {
            if prompt.asksName, let name = prompt.name {
                Output.error("keyhaven: it receives your name (\(name)) once.")
            }
        } else {
            Output.error(
                "keyhaven: you already use Sign in with Keyhaven with \(consent.serviceName); it keeps what you chose "
                    + "before."
            )
        }
        guard let prompt = consent.prompt, prompt.asksEmail else {
            // No e-mail question: confirm on a terminal; without one, the command line is the answer.
            if let choice { return choice }
            guard let answer = Terminal.ask("Switch \(consent.service) to Sign in with Keyhaven? [yes/cancel] ") else {
                return "share"
            }
            return ["yes", "y"].contains(answer.lowercased()) ? "share" : nil
        }
        if let choice {
            Output.error(
                choice == "hide"
                    ? "keyhaven: it receives a private relay address that forwards to \(prompt.email)."
                    : "keyhaven: it receives your e-mail \(prompt.email)."
            )
            return choice
        }
        guard
            let answer = Terminal.ask(
                "Share your e-mail (\(prompt.email)) or hide it behind a relay address? [share/hide/cancel] "
            )
        else {
            Output.error("keyhaven: no terminal to ask: pass --email share or --email hide")
            return nil
        }
        switch answer.lowercased() {
        case "share", "s": return "share"
        case "hide", "h": return "hide"
        default: return nil
        }
    }
}
