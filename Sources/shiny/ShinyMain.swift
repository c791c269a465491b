import ArgumentParser
import Foundation
import ShinyService

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `shiny`: run the example service.
@main
struct ShinyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "shiny",
        abstract: "An example service with Keyhaven's account-modification extension.",
        discussion: """
            The first line shiny prints is `shiny listening on ORIGIN` (with the port it chose, for \
            --port 0), for people and for programs that start it.

            With --client-id (and the team's key), shiny also offers "Sign in with Keyhaven" and \
            upgrades to it. Register it with the provider first:
              keyhaven idp service add CLIENT_ID --team TEAM --name shiny \\
                --redirect-uri PUBLIC_URL/signin/keyhaven/callback \\
                --notification-url PUBLIC_URL/signin/keyhaven/notifications
            """
    )

    @Option(name: .long, help: "Address to listen on.") var host = "127.0.0.1"
    @Option(name: .long, help: "Port to listen on (0: a free one).") var port = 8081
    @Option(name: .long, help: "SQLite file for accounts (default: in memory).") var database: String?
    @Option(name: .customLong("idp-url"), help: "The Sign in with Keyhaven provider's URL.") var providerURL: String?
    @Option(name: .customLong("idp-issuer"), help: "Its issuer (default: its URL).") var issuer: String?
    @Option(name: .customLong("client-id"), help: "shiny's client id at the provider.") var clientId: String?
    @Option(name: .customLong("team-id"), help: "The team that owns the client id.") var teamId: String?
    @Option(name: .customLong("key-id"), help: "The team key's id.") var keyId: String?
    @Option(name: .customLong("key-file"), help: "The team key (.p8, PKCS#8 PEM).") var keyFile: String?
    @Option(name: .customLong("public-url"), help: "Where people reach shiny (default: the origin it listens on).")
    var publicURL: String?
    @Flag(
        name: .long,
        help: """
            For `keyhaven demo`: also serve /api/demo/… (any account's status, the notifications \
            received). Loopback only; never for a service people use.
            """
    )
    var demo = false
    @Flag(
        name: .customLong("stop-when-stdin-closes"),
        help: "Stop when standard input closes (a program that starts shiny cannot leave it running)."
    )
    var stopWhenStdinCloses = false

    func validate() throws {
        let signIn = [providerURL, clientId, teamId, keyId, keyFile]
        if signIn.contains(where: { $0 != nil }) && signIn.contains(where: { $0 == nil }) {
            throw ValidationError(
                "Sign in with Keyhaven needs --idp-url, --client-id, --team-id, --key-id and --key-file"
            )
        }
    }

    func run() async throws {
        let shiny = try Shiny(
            configuration: .init(host: host, port: port, publicURL: publicURL, databasePath: database, demo: demo)
        )
        let signIn = try signInConfiguration()
        if let signIn {
            // Reads the key now, so that a bad one stops shiny before it listens.
            try shiny.enableSignIn(signIn(publicURL ?? "http://\(host):\(port)"))
        }
        if stopWhenStdinCloses { Self.stopWhenStandardInputCloses() }
        try await shiny.run { origin in
            let base = publicURL ?? origin
            if let signIn, publicURL == nil {
                // The redirect URI is on the port shiny got (the key was read above).
                do { try shiny.enableSignIn(signIn(base)) } catch { Self.exit(withError: error) }
            }
            Self.say("shiny listening on \(origin)")
            if let clientId, let providerURL {
                Self.say(
                    """
                    shiny offers Sign in with Keyhaven (\(issuer ?? providerURL), client \(clientId)); \
                    redirect URI \(base + Shiny.signInCallbackPath), \
                    notification URL \(base + Shiny.notificationPath)
                    """
                )
            }
        }
    }

    /// The Sign in with Keyhaven settings for shiny at a base URL, if the options ask for it.
    func signInConfiguration() throws -> (@Sendable (String) -> ShinySignInConfiguration)? {
        guard let providerURL, let clientId, let teamId, let keyId, let keyFile else { return nil }
        guard let pem = try? String(contentsOfFile: keyFile, encoding: .utf8) else {
            throw ValidationError("cannot read \(keyFile)")
        }
        let issuer = issuer ?? providerURL
        return { base in
            ShinySignInConfiguration(
                issuer: issuer,
                providerURL: providerURL,
                clientId: clientId,
                teamId: teamId,
                keyId: keyId,
                privateKeyPEM: pem,
                redirectURI: base + Shiny.signInCallbackPath
            )
        }
    }

    /// Writes a line to standard output at once, unbuffered even into a pipe (the program reading
    /// it waits for it).
    static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    /// Reads (and drops) standard input on a thread of its own; at its end, stops shiny gracefully,
    /// as SIGTERM does.
    static func stopWhenStandardInputCloses() {
        Thread {
            var buffer = [UInt8](repeating: 0, count: 512)
            while true {
                let count = read(STDIN_FILENO, &buffer, buffer.count)
                if count > 0 || (count < 0 && errno == EINTR) { continue }
                break  // the end (or an unreadable standard input)
            }
            kill(getpid(), SIGTERM)
        }.start()
    }
}
