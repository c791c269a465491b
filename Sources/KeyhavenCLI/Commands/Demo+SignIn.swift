import AccountModification
import Foundation
import IdentityProvider
import IdentityProviderServer
import KeyhavenApp
import KeyhavenJOSE
import Logging
import ShinyService
import Vault

extension Keyhaven.Demo {
    /// The sign-in part of the demo: a Sign in with Keyhaven provider in-process, shiny registered
    /// with it, Keyhaven signed in to it (`keyhaven idp login`), and a third shiny account switched
    /// to Sign in with Keyhaven in one step (`keyhaven upgrade … --to sign-in --email hide`). Ends
    /// with the person stopping the service's use of it, which shiny hears about.
    func signInPart(
        vault: Vault,
        shiny: Shiny,
        origin: String,
        coordinator: UpgradeService,
        say: @escaping @Sendable (String) -> Void
    ) async throws -> (checks: [(String, Bool)], upgraded: Bool) {
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
        defer { server.cancel() }
        var iterator = ready.stream.makeAsyncIterator()
        guard let port = await iterator.next() else { throw Output.failure("the provider did not start") }
        let providerURL = "http://127.0.0.1:\(port)"
        say("\n▶ keyhaven idp serve   (Sign in with Keyhaven, issuer \(configuration.issuer), at \(providerURL))")

        let team = try await provider.createTeam(name: "Shiny Inc")
        let key = try await provider.createTeamKey(teamId: team.id)
        try await provider.registerClient(
            id: "com.example.shiny",
            teamId: team.id,
            name: "shiny",
            redirectURIs: [origin + Shiny.signInCallbackPath],
            notificationURL: origin + Shiny.notificationPath
        )
        _ = try await provider.createUser(
            email: "carol@example.com",
            password: "carol's provider password",
            firstName: "Carol",
            lastName: "Example"
        )
        try shiny.enableSignIn(
            ShinySignInConfiguration(
                issuer: configuration.issuer,
                providerURL: providerURL,
                clientId: "com.example.shiny",
                teamId: team.id,
                keyId: key.kid,
                privateKeyPEM: key.pemRepresentation,
                redirectURI: origin + Shiny.signInCallbackPath
            )
        )
        say("  team \(team.id), service com.example.shiny (shiny), person carol@example.com registered")

        let carolPassword = "Sunshine2024"
        try shiny.createAccount(user: "carol", password: carolPassword)
        let carol = try vault.add(
            CredentialContent(
                title: "shiny (carol)",
                services: [.init("\(origin)/signin")],
                user: "carol",
                password: carolPassword
            )
        )

        let device = ProviderDeviceClient()
        // `keyhaven idp login` discovers the provider from its issuer URL; the demo's provider has an
        // issuer of its own (https://id.keyhaven.demo) and listens on loopback, so it is named directly.
        let (issuer, baseURL) = (configuration.issuer, providerURL)
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
        let subject = try shiny.linkedSubject(user: "carol")
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
                try !shiny.signIn(user: "carol", password: carolPassword)
            ),
            (
                "carol's old password is kept in the history",
                try vault.history(carol).map(\.password) == [carolPassword]
            ),
        ]

        say("\n▶ keyhaven idp services --stop-using com.example.shiny")
        try await device.stopUsing(session, clientId: "com.example.shiny")
        let deadline = Date().addingTimeInterval(10)
        while shiny.receivedNotifications.isEmpty && Date() < deadline {
            try await Task.sleep(for: .milliseconds(100))
        }
        let heard = shiny.receivedNotifications.first
        say("  shiny received the server-to-server notification: \(heard?.type ?? "nothing")")
        checks.append(
            ("shiny heard consent-revoked for carol's sub", heard?.type == "consent-revoked" && heard?.sub == subject)
        )
        return (checks, result == .upgraded(credential: carol, substituted: false))
    }
}
