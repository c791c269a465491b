import ArgumentParser
import Foundation
import ShinyService

/// `shiny`: run the example service.
@main
struct ShinyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "shiny",
        abstract: "An example service with Keyhaven's account-modification extension.",
        discussion: """
            With --client-id (and the team's key), shiny also offers "Sign in with Keyhaven" and \
            upgrades to it. Register it with the provider first:
              keyhaven idp service add CLIENT_ID --team TEAM --name shiny \\
                --redirect-uri PUBLIC_URL/signin/keyhaven/callback \\
                --notification-url PUBLIC_URL/signin/keyhaven/notifications
            """
    )

    @Option(name: .long, help: "Address to listen on.") var host = "127.0.0.1"
    @Option(name: .long, help: "Port to listen on.") var port = 8081
    @Option(name: .long, help: "SQLite file for accounts (default: in memory).") var database: String?
    @Option(name: .customLong("idp-url"), help: "The Sign in with Keyhaven provider's URL.") var providerURL: String?
    @Option(name: .customLong("idp-issuer"), help: "Its issuer (default: its URL).") var issuer: String?
    @Option(name: .customLong("client-id"), help: "shiny's client id at the provider.") var clientId: String?
    @Option(name: .customLong("team-id"), help: "The team that owns the client id.") var teamId: String?
    @Option(name: .customLong("key-id"), help: "The team key's id.") var keyId: String?
    @Option(name: .customLong("key-file"), help: "The team key (.p8, PKCS#8 PEM).") var keyFile: String?
    @Option(name: .customLong("public-url"), help: "Where people reach shiny (default: http://HOST:PORT).")
    var publicURL: String?

    func validate() throws {
        let signIn = [providerURL, clientId, teamId, keyId, keyFile]
        if signIn.contains(where: { $0 != nil }) && signIn.contains(where: { $0 == nil }) {
            throw ValidationError(
                "Sign in with Keyhaven needs --idp-url, --client-id, --team-id, --key-id and --key-file"
            )
        }
    }

    func run() async throws {
        let shiny = try Shiny(configuration: .init(host: host, port: port, databasePath: database))
        let base = publicURL ?? "http://\(host):\(port)"
        if let providerURL, let clientId, let teamId, let keyId, let keyFile {
            guard let pem = try? String(contentsOfFile: keyFile, encoding: .utf8) else {
                throw ValidationError("cannot read \(keyFile)")
            }
            try shiny.enableSignIn(
                ShinySignInConfiguration(
                    issuer: issuer ?? providerURL,
                    providerURL: providerURL,
                    clientId: clientId,
                    teamId: teamId,
                    keyId: keyId,
                    privateKeyPEM: pem,
                    redirectURI: base + Shiny.signInCallbackPath
                )
            )
            print("shiny offers Sign in with Keyhaven (\(issuer ?? providerURL), client \(clientId))")
        }
        print("shiny on http://\(host):\(port)")
        try await shiny.run()
    }
}
