import ArgumentParser
import Crypto
import Foundation
import IdentityProvider
import IdentityProviderPostgres
import IdentityProviderServer
import KeyhavenJOSE
import Logging
import _KeyhavenSupport

extension Keyhaven {
    struct Idp: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "idp",
            abstract: "Sign in with Keyhaven: run the identity provider, administer it, sign Keyhaven in to one.",
            discussion: """
                The provider speaks Sign in with Apple's protocol (/auth/authorize, /auth/token, /auth/keys, \
                /auth/revoke, /auth/usermigrationinfo, discovery), so a client written for Apple works by \
                changing the issuer and the keys URL. Its data lives in SQLite (--database PATH, the \
                default) or PostgreSQL (--database postgres://user:password@host/db); several instances \
                may share one PostgreSQL database.

                Set up: `keyhaven idp team add "Example Corp"`, `keyhaven idp team key create TEAM \
                --output team.p8`, `keyhaven idp service add com.example.web --team TEAM --name Example \
                --redirect-uri https://example.com/callback`, `keyhaven idp user add ada@example.com`, \
                then `keyhaven idp serve --issuer https://id.example.com`.
                """,
            subcommands: [
                ProviderServe.self, ProviderTeam.self, ProviderService.self, ProviderUser.self, ProviderKeys.self,
                ProviderOutbox.self, ProviderSecrets.self, ProviderLogin.self, ProviderLogout.self,
                ProviderServices.self,
            ]
        )
        @ParentCommand var root: Keyhaven
    }
}

/// Where the provider's data is, and how it checks URLs.
struct ProviderOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "SQLite file or postgres:// URL (default: $KEYHAVEN_IDP_DATABASE, else $XDG_DATA_HOME/keyhaven/idp.sqlite).",
            valueName: "path-or-url"
        )
    )
    var database: String?

    @Option(name: .long, help: "The issuer: iss of every token, aud of client secrets (default: where it serves).")
    var issuer: String?

    @Flag(
        name: .customLong("allow-insecure-urls"),
        help: "Development: accept http:// loopback redirect URIs and notification URLs (Apple requires https)."
    )
    var allowInsecureURLs = false

    @Option(
        name: .customLong("secrets-key-file"),
        help: ArgumentHelp(
            "A file with a base64 32-byte key that seals the signing keys, the access-token key and "
                + "one-time-code secrets in the database (default: $KEYHAVEN_IDP_SECRETS_KEY_FILE, else "
                + "NAME.secrets-key beside NAME.sqlite, created 0600 on first use; see `keyhaven idp secrets`).",
            valueName: "path"
        )
    )
    var secretsKeyFile: String?

    var location: String {
        let environment = CommandIO.current.environment
        if let given = database ?? environment["KEYHAVEN_IDP_DATABASE"], !given.isEmpty {
            return given.hasPrefix("postgres") ? given : (given as NSString).expandingTildeInPath
        }
        let data =
            environment["XDG_DATA_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? (NSHomeDirectory() as NSString).appendingPathComponent(".local/share")
        return (data as NSString).appendingPathComponent("keyhaven/idp.sqlite")
    }

    func configuration(defaultIssuer: String = "http://127.0.0.1:8090") throws -> ProviderConfiguration {
        var configuration = ProviderConfiguration(issuer: issuer ?? defaultIssuer)
        configuration.allowInsecureURLs = allowInsecureURLs
        // Tests: cheaper hashes. Bounded, and loud when it weakens them, so that a copied test
        // environment cannot silently make a deployment's password hashes cheap to crack.
        if let given = CommandIO.current.environment["KEYHAVEN_IDP_SCRYPT_LOG_N"] {
            let standard = configuration.passwordLogN
            guard let logN = Int(given), (10...22).contains(logN) else {
                throw Output.failure(
                    "KEYHAVEN_IDP_SCRYPT_LOG_N must be a whole number from 10 to 22 (the default is \(standard))"
                )
            }
            if logN < standard {
                Output.error(
                    "keyhaven: warning: KEYHAVEN_IDP_SCRYPT_LOG_N=\(logN): new provider passwords are hashed with scrypt N=2^\(logN), cheaper to crack than the default 2^\(standard); set it only in tests"
                )
            }
            configuration.passwordLogN = logN
        }
        return configuration
    }

    /// The database at ``location``, not yet migrated; PostgreSQL's pool does not run yet.
    func openDatabase() throws -> any SQLDatabase {
        do {
            if isPostgres {
                var logger = Logger(label: "keyhaven.idp.postgres")
                logger.logLevel = .error
                return try PostgresDatabase(url: location, logger: logger)
            }
            // A folder made here is 0700; the database is created 0600 (SQLiteDatabase).
            try PrivateFile.createDirectory(at: URL(fileURLWithPath: location).deletingLastPathComponent())
            let database = try SQLiteDatabase(path: location)
            for warning in database.fileWarnings { Output.error("keyhaven: warning: \(warning)") }
            return database
        } catch {
            throw Output.failure("cannot open the provider's database: \(error)")
        }
    }

    /// The provider for `configuration`, not prepared yet (``IdentityProvider/prepare()``), with
    /// its secrets key (``loadSecretsKey()``; `createdKey`: this run made the key file).
    func unprepared(
        _ configuration: ProviderConfiguration? = nil
    ) throws -> (provider: IdentityProvider, createdKey: Bool) {
        var configuration = try configuration ?? self.configuration()
        let database = try openDatabase()
        let (key, created) = try loadSecretsKey()
        if created {
            Output.error(
                "keyhaven: created the provider's secrets key \(keyFile.path) (mode 0600); "
                    + "keep it apart from the database's backups"
            )
        }
        configuration.secretsKey = key
        return (IdentityProvider(configuration: configuration, unpreparedDatabase: database), created)
    }

    /// Runs `body` with the provider open and prepared (PostgreSQL's pool running meanwhile).
    func withOpened<T: Sendable>(_ body: (IdentityProvider) async throws -> T) async throws -> T {
        let (provider, createdKey) = try unprepared()
        func prepared() async throws -> IdentityProvider {
            do {
                try await provider.prepare()
            } catch {
                let explained = explained(error, createdKey: createdKey)
                if explained is CommandFailure { throw explained }
                throw Output.failure("cannot open the provider's database: \(error)")
            }
            return provider
        }
        if let postgres = provider.database as? PostgresDatabase {
            return try await postgres.withRunning { try await body(try await prepared()) }
        }
        return try await body(try await prepared())
    }
}

/// Runs an administrative call, turning provider errors into clear messages.
@discardableResult
func administering<T>(_ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let error as ProviderError {
        throw Output.failure(error.message)
    } catch {
        throw Output.failure(from: error) { Output.failure("\($0)") }
    }
}

struct ProviderServe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the identity provider.",
        discussion: """
            Serves Sign in with Apple's endpoints, the sign-in and consent pages, the account page \
            (/account: stop using a service, relay forwarding, delete the account), the credential-state \
            endpoint (/auth/credentialstate), Keyhaven's device API, and sends server-to-server \
            notifications from the database's outbox, retrying until the service answers 2xx. \
            Ctrl-C (SIGINT) or SIGTERM stops it gracefully.

            Wrong sign-in guesses are limited per account (5, then lockouts of 30 s doubling to \
            15 min) and per client address (50, then the same). Behind a reverse proxy every client \
            has the proxy's address: pass --client-address-header X-Forwarded-For (and \
            --trusted-proxy ADDRESS unless the proxy runs on this machine) so the address your proxy \
            saw is counted instead.
            """
    )
    @OptionGroup var provider: ProviderOptions
    @Option(name: .long, help: "Address to listen on.") var host = "127.0.0.1"
    @Option(name: .long, help: "Port (0 picks a free one).") var port = 8090
    @Option(name: .customLong("public-url"), help: "Where clients reach the endpoints, when not the issuer.")
    var publicURL: String?
    @Flag(
        name: .customLong("string-booleans"),
        help:
            "Compatibility test switch: email_verified/is_private_email as \"true\" strings, as Apple sent until 2024."
    )
    var stringBooleans = false
    @OptionGroup var proxy: ReverseProxyOptions

    func validate() throws {
        // The issuer is in every token and must be known before the port is: with a port picked at
        // start, the default issuer would name port 0 (found by an independent client, issue 13).
        if port == 0 && provider.issuer == nil {
            throw ValidationError(
                "--port 0 needs --issuer: the issuer names where clients reach the provider, so it must be known before start"
            )
        }
    }

    func run() async throws {
        var configuration = try provider.configuration(
            defaultIssuer: "http://\(host == "0.0.0.0" ? "127.0.0.1" : host):\(port)"
        )
        configuration.publicURL = publicURL
        configuration.stringBooleans = stringBooleans
        let (opened, createdKey) = try provider.unprepared(configuration)
        let postgres = opened.database as? PostgresDatabase
        if postgres == nil {
            // SQLite needs nothing running: a database that cannot be opened fails here, as before.
            do {
                try await opened.prepare()
            } catch {
                let explained = provider.explained(error, createdKey: createdKey)
                if explained is CommandFailure { throw explained }
                throw Output.failure("cannot open the provider's database: \(error)")
            }
        }
        var logger = Logger(label: "keyhaven.idp")
        logger.logLevel = .notice
        let location = provider.location.hasPrefix("postgres") ? "PostgreSQL" : provider.location
        let issuer = configuration.issuer
        do {
            try await ProviderServer(
                provider: opened,
                clientAddressHeader: proxy.clientAddressHeader,
                trustedProxies: proxy.trusted
            ).run(
                host: host,
                port: port,
                logger: logger,
                // PostgreSQL's pool runs in the server's service group; the server prepares the provider.
                services: postgres.map { [$0] } ?? []
            ) { bound in
                Output.error(
                    "keyhaven: Sign in with Keyhaven on http://\(host):\(bound) (issuer \(issuer), "
                        + "data in \(location)); Ctrl-C stops"
                )
            }
        } catch {
            // PostgreSQL: the server prepared the provider, so a wrong secrets key surfaces here.
            throw provider.explained(error, createdKey: createdKey)
        }
    }
}
