import AccountModification
import Foundation
import IdentityProvider
import IdentityProviderClient
import IdentityProviderServer
import KeyhavenApp
import KeyhavenJOSE
import Logging
import Vault
import _KeyhavenSupport

/// The demo's Sign in with Keyhaven provider, run in this process (`keyhaven idp serve`), with
/// shiny's team and its key, and carol, registered.
struct DemoProvider {
    var provider: IdentityProvider
    var issuer: String
    var url: String
    var server: Task<Void, any Error>
    var teamId: String
    var keyId: String
    /// The team's private key, written 0600 for shiny (`--key-file`).
    var keyFile: URL

    static let clientId = "com.example.shiny"
    /// Where shiny takes the provider's answers, as `shiny --help` tells an operator to register them.
    static let callbackPath = "/signin/keyhaven/callback"
    static let notificationPath = "/signin/keyhaven/notifications"

    /// shiny's command line: a free loopback port, the demo's status endpoints, stopped when this
    /// process goes, and Sign in with Keyhaven with this provider.
    var shinyArguments: [String] {
        [
            "--port", "0", "--demo", "--stop-when-stdin-closes",
            "--idp-url", url, "--idp-issuer", issuer, "--client-id", Self.clientId,
            "--team-id", teamId, "--key-id", keyId, "--key-file", keyFile.path,
        ]
    }
}

extension Keyhaven.Demo {
    /// Starts the provider on a free loopback port and registers what the demo needs: the team that
    /// owns shiny's client id, the team's key (written to `folder` for shiny, mode 0600) and carol.
    func startProvider(folder: URL, say: @escaping @Sendable (String) -> Void) async throws -> DemoProvider {
        var configuration = ProviderConfiguration(issuer: "https://id.keyhaven.demo")
        configuration.allowInsecureURLs = true
        configuration.passwordLogN = 12
        let provider = try await IdentityProvider(configuration: configuration, database: try SQLiteDatabase())
        let ready = AsyncStream.makeStream(of: Int.self)
        var logger = Logger(label: "keyhaven.demo.idp")
        logger.logLevel = .critical
        let server = Task {
            try await ProviderServer(provider: provider, deliveryInterval: .milliseconds(100)).run(
                host: "127.0.0.1",
                port: 0,
                logger: logger
            ) { ready.continuation.yield($0) }
        }
        var iterator = ready.stream.makeAsyncIterator()
        guard let port = await iterator.next() else {
            server.cancel()
            throw Output.failure("the provider did not start")
        }
        let providerURL = "http://127.0.0.1:\(port)"
        say("▶ keyhaven idp serve   (Sign in with Keyhaven, issuer \(configuration.issuer), at \(providerURL))")
        do {
            let team = try await provider.createTeam(name: "Shiny Inc")
            let key = try await provider.createTeamKey(teamId: team.id)
            let keyFile = folder.appendingPathComponent("shiny-team-key.p8")
            try PrivateFile.create(at: keyFile, contents: Array(key.pemRepresentation.utf8))
            _ = try await provider.createUser(
                email: "carol@example.com",
                password: "carol's provider password",
                firstName: "Carol",
                lastName: "Example"
            )
            say("  team \(team.id) and its key for shiny (mode 0600), person carol@example.com registered")
            return DemoProvider(
                provider: provider,
                issuer: configuration.issuer,
                url: providerURL,
                server: server,
                teamId: team.id,
                keyId: key.kid,
                keyFile: keyFile
            )
        } catch {
            server.cancel()
            throw error
        }
    }

    /// Registers shiny, now that its origin is known, as the provider's client (`keyhaven idp
    /// service add`).
    func registerShiny(
        _ shiny: ShinyProcess,
        with provider: DemoProvider,
        say: @escaping @Sendable (String) -> Void
    ) async throws {
        try await provider.provider.registerClient(
            id: DemoProvider.clientId,
            teamId: provider.teamId,
            name: "shiny",
            redirectURIs: [shiny.origin + DemoProvider.callbackPath],
            notificationURL: shiny.origin + DemoProvider.notificationPath
        )
        say(
            "  service \(DemoProvider.clientId) (shiny) registered with the provider; shiny offers Sign in with Keyhaven"
        )
    }

    /// The sign-in part of the demo: Keyhaven signed in to the provider (`keyhaven idp login`), and
    /// a third shiny account switched to Sign in with Keyhaven in one step (`keyhaven upgrade … --to
    /// sign-in --email hide`). Ends with the person stopping the service's use of it, which shiny
    /// hears about.
    func signInPart(
        vault: Vault,
        shiny: ShinyProcess,
        provider: DemoProvider,
        coordinator: UpgradeService,
        say: @escaping @Sendable (String) -> Void
    ) async throws -> (checks: [(String, Bool)], upgraded: Bool) {
        let origin = shiny.origin
        let providerURL = provider.url
        let carolPassword = "Sunshine2024"
        try await shiny.signUp(user: "carol", password: carolPassword)
        let carol = try vault.add(shiny.credential(user: "carol", password: carolPassword))

        let device = ProviderDeviceClient()
        // `keyhaven idp login` discovers the provider from its issuer URL; the demo's provider has an
        // issuer of its own (https://id.keyhaven.demo) and listens on loopback, so it is named directly.
        let (issuer, baseURL) = (provider.issuer, providerURL)
        let login = try await device.login(
            baseURL: baseURL,
            email: "carol@example.com",
            password: "carol's provider password",
            code: nil,
            name: "Keyhaven demo"
        )
        let session = ProviderSession(
            issuer: issuer,
            baseURL: baseURL,
            email: login.email,
            deviceToken: login.token,
            created: Date()
        )
        try vault.saveProviderSession(session)
        say("\n▶ keyhaven idp login \(providerURL)\n  signed in as \(login.email) (device token sealed in the vault)")

        say("\n▶ keyhaven upgrade \(origin) --user carol --to sign-in --email hide")
        let authority = DeviceSignInAuthority(session: session) { consent in
            say(
                "  consent: switching \(consent.service) as \(consent.serviceName) (\(consent.clientId)); it asks for "
                    + "your name and e-mail; Keyhaven hides the e-mail"
            )
            return "hide"
        }
        let result = await coordinator.upgradeToSignIn(carol, service: origin, authority: authority)
        say(
            "  \(result == .upgraded(credential: carol, substituted: false) ? "✓ carol now signs in to shiny with Keyhaven" : "✗ \(result)")"
        )

        let record = try vault.credential(carol)
        let subject = try await shiny.account("carol").signInSubject
        var checks: [(String, Bool)] = [
            (
                "carol's vault record has no password and is marked Sign in with Keyhaven",
                record.password == nil && record.content.signIn?.issuer == issuer
            ),
            (
                "shiny linked carol's account to the same sub",
                subject != nil && subject == record.content.signIn?.subject
            ),
            (
                "carol's old password no longer signs in to shiny",
                try await !shiny.signsIn(user: "carol", password: carolPassword)
            ),
            (
                "carol's old password is kept in the history",
                try vault.history(carol).map(\.password) == [carolPassword]
            ),
        ]

        say("\n▶ keyhaven idp services --stop-using \(DemoProvider.clientId)")
        try await device.stopUsing(session, clientId: DemoProvider.clientId)
        let deadline = Date().addingTimeInterval(10)
        var heard = try await shiny.notifications().first
        while heard == nil && Date() < deadline {
            try await Task.sleep(for: .milliseconds(100))
            heard = try await shiny.notifications().first
        }
        say("  shiny received the server-to-server notification: \(heard?.type ?? "nothing")")
        checks.append(
            ("shiny heard consent-revoked for carol's sub", heard?.type == "consent-revoked" && heard?.sub == subject)
        )
        return (checks, result == .upgraded(credential: carol, substituted: false))
    }
}
