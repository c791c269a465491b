import ArgumentParser
import Foundation
import IdentityProvider
import IdentityProviderClient
import KeyhavenApp
import Vault

/// Unlocks the vault for an `idp` subcommand (contacting nothing; pending upgrades are mentioned).
/// `global` is `keyhaven --vault PATH idp …`.
func openSession(_ options: VaultOptions, global: String?) async throws -> KeyhavenSession {
    let session = try await options.openSession(global: global)
    await LocalCredentialStore(session: session).noticePendingUpgrades()
    return session
}

/// The session for `issuerOrURL` (an issuer, or the URL Keyhaven logged in to), or the only one.
func providerSession(_ vault: Vault, _ issuerOrURL: String?) throws -> ProviderSession {
    let sessions: [ProviderSession]
    do {
        sessions = try vault.providerSessions()
    } catch {
        throw Output.vaultFailure(error)
    }
    if let issuerOrURL {
        var wanted = issuerOrURL
        while wanted.hasSuffix("/") { wanted.removeLast() }
        guard let session = sessions.first(where: { $0.issuer == wanted || $0.baseURL == wanted }) else {
            throw Output.failure("Keyhaven is not signed in to \(wanted): run `keyhaven idp login \(wanted)`")
        }
        return session
    }
    guard let only = sessions.first else {
        throw Output.failure("Keyhaven is not signed in to a provider: run `keyhaven idp login URL`")
    }
    guard sessions.count == 1 else {
        throw Output.failure(
            "signed in to several providers: name one (\(sessions.map(\.issuer).joined(separator: ", ")))"
        )
    }
    return only
}

struct ProviderLogin: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "login",
        abstract: "Sign Keyhaven in to a Sign in with Keyhaven provider, once.",
        discussion: """
            Keyhaven gets a device token (sealed in the vault, never shown) with which it shows you the \
            consent step and obtains authorizations when you upgrade an account to sign-in \
            (`keyhaven upgrade SERVICE --to sign-in`). The provider password comes from \
            $KEYHAVEN_IDP_PASSWORD or a prompt; the one-time code from --code or a prompt. \
            It is sent only to the provider's own origin: the URL must be the provider's issuer \
            (https; plain http only on loopback), and its discovery document must name that issuer \
            and endpoints on its origin, else nothing is sent.
            """
    )
    @OptionGroup var options: VaultOptions
    @ParentCommand var idp: Keyhaven.Idp
    @Argument(help: "The provider's issuer URL (where /.well-known/openid-configuration is).") var url: String
    @Option(name: .long, help: "Your e-mail address at the provider (asked when absent).") var email: String?
    @Option(name: .long, help: "The one-time code, if your account has one.") var code: String?
    @Option(name: .long, help: "A name for this Keyhaven on your account page.") var name = "Keyhaven"

    func run() async throws {
        try await withUnlockedVault(try await openSession(options, global: idp.root.vault)) { vault in
            let client = ProviderDeviceClient()
            let (issuer, baseURL): (String, String)
            do {
                (issuer, baseURL) = try await client.discover(url)
            } catch {
                throw Output.failure("\(error)")
            }
            let address =
                try email
                ?? {
                    CommandIO.current.writeError(Data("E-mail at \(issuer): ".utf8))
                    guard let line = CommandIO.current.readLine(), !line.isEmpty else {
                        throw Output.failure("an e-mail address is needed")
                    }
                    return line
                }()
            let password =
                try CommandIO.current.environment["KEYHAVEN_IDP_PASSWORD"].flatMap { $0.isEmpty ? nil : $0 }
                ?? Terminal.askSecret("Password at \(issuer): ")
            // Signing in again: the token held so far proves this is a known device (the provider
            // then counts the attempt on the device's own counter, not the account's).
            let previous = try? vault.providerSession(issuer: issuer)
            var oneTimeCode = code
            var result: (token: String, email: String)?
            while result == nil {
                do {
                    result = try await client.login(
                        baseURL: baseURL,
                        email: address,
                        password: password,
                        code: oneTimeCode,
                        name: name,
                        deviceToken: previous?.baseURL == baseURL ? previous?.deviceToken : nil
                    )
                } catch let failure as ProviderDeviceClient.Failure where failure.code == .secondFactorRequired {
                    guard oneTimeCode == nil else { throw Output.failure(failure.message) }
                    oneTimeCode = try Terminal.askSecret("One-time code: ")
                } catch {
                    throw Output.failure("\(error)")
                }
            }
            guard let result else { return }
            do {
                try vault.saveProviderSession(
                    ProviderSession(
                        issuer: issuer,
                        baseURL: baseURL,
                        email: result.email,
                        deviceToken: result.token,
                        created: Date()
                    )
                )
            } catch {
                throw Output.vaultFailure(error)
            }
            // The token it replaces is revoked (best effort: it is forgotten here either way).
            if let replaced = previous, replaced.deviceToken != result.token {
                try? await client.logout(replaced)
            }
            print("Signed in to \(issuer) as \(result.email).")
        }
    }
}

struct ProviderLogout: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "logout",
        abstract: "Sign Keyhaven out of a provider (its device token is revoked and forgotten)."
    )
    @OptionGroup var options: VaultOptions
    @ParentCommand var idp: Keyhaven.Idp
    @Argument(help: "The provider's issuer or URL (optional when there is one).") var provider: String?

    func run() async throws {
        try await withUnlockedVault(try await openSession(options, global: idp.root.vault)) { vault in
            let session = try providerSession(vault, provider)
            try? await ProviderDeviceClient().logout(session)
            do {
                try vault.removeProviderSession(issuer: session.issuer)
            } catch {
                throw Output.vaultFailure(error)
            }
            print("Signed out of \(session.issuer).")
        }
    }
}

struct ProviderServices: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "services",
        abstract: "The services you sign in to with Keyhaven; stop using one, or switch relay forwarding.",
        discussion: """
            Each change is sent to the service as a server-to-server notification \
            (consent-revoked, email-disabled, email-enabled).
            """
    )
    @OptionGroup var options: VaultOptions
    @ParentCommand var idp: Keyhaven.Idp
    @Argument(help: "The provider's issuer or URL (optional when there is one).") var provider: String?
    @Option(name: .customLong("stop-using"), help: "Stop using Sign in with Keyhaven with this client id.")
    var stopUsing: String?
    @Option(name: .customLong("relay-off"), help: "Stop forwarding relay mail from this client id.") var relayOff:
        String?
    @Option(name: .customLong("relay-on"), help: "Resume forwarding relay mail from this client id.") var relayOn:
        String?
    @Flag(name: .long, help: "JSON output.") var json = false

    func run() async throws {
        try await withUnlockedVault(try await openSession(options, global: idp.root.vault)) { vault in
            let session = try providerSession(vault, provider)
            let client = ProviderDeviceClient()
            do {
                if let stopUsing { try await client.stopUsing(session, clientId: stopUsing) }
                if let relayOff { try await client.setRelayForwarding(session, clientId: relayOff, enabled: false) }
                if let relayOn { try await client.setRelayForwarding(session, clientId: relayOn, enabled: true) }
                let services = try await client.services(session)
                if json { return print(try Output.json(services)) }
                if services.isEmpty { print("No service signs you in with \(session.issuer) yet.") }
                for service in services {
                    let email = service.email.map { " as \($0)" } ?? ""
                    let relay = service.hidesEmail ? (service.relayForwarding ? " (relay on)" : " (relay off)") : ""
                    print("\(service.clientId)\t\(service.name)\t\(service.state.rawValue)\(email)\(relay)")
                }
            } catch {
                throw Output.failure(from: error) { Output.failure("\($0)") }
            }
        }
    }
}
