import ArgumentParser
import Foundation
import Logging
import SyncServer
import SyncServerHTTP
import SyncServerPostgres
import _KeyhavenSupport

struct SyncServe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the sync server.",
        discussion: """
            Serves the sync API (docs/openapi/sync.yaml): accounts created with a first device's key, \
            devices enrolled with an enrolled device's approval, signed challenges for short-lived \
            bearer tokens, compare-and-swap pushes (409 with the current item when stale), changes \
            since a cursor and long polls that answer as soon as another device writes. Its data is \
            a SQLite file (WAL, created 0600) or PostgreSQL (--database postgres://user:password@host/db), \
            which several instances may share; for a URL with a password prefer $KEYHAVEN_SYNC_DATABASE \
            to --database (a command line is visible to other users). The server speaks plain HTTP: \
            off loopback put a TLS-terminating reverse proxy in front of it (docs/sync.md). \
            Devices sign every sign-in and enrolment for the server URL they use, and the server \
            refuses a signature for another one (a relaying server): behind a TLS proxy, set \
            --public-url to the https:// URL devices use (the default, http://HOST:PORT as it \
            listens, is right only on loopback: a --host beyond this machine needs --public-url, and a \
            plain http:// --public-url off loopback is refused, since devices refuse it). \
            The origin must match to the letter: devices using http://localhost:8095 against a server \
            listening on 127.0.0.1 (default origin http://127.0.0.1:8095) are refused as signing for \
            another server. --max-wait 0 disables long polls. Ctrl-C (SIGINT) or SIGTERM stops it \
            gracefully.

            Join requests (`keyhaven sync join`, open to anyone) are capped at 5 pending per client \
            address (an IPv6 /64) and 1,000 per server. Behind a reverse proxy every client has the \
            proxy's address: pass --client-address-header X-Forwarded-For (and --trusted-proxy \
            ADDRESS unless the proxy runs on this machine) so the address your proxy saw is counted.

            Examples:
              keyhaven sync serve --port 8095
              keyhaven sync serve --host 0.0.0.0 --port 8095 --public-url https://sync.example.org
            """
    )

    @Option(
        name: .long,
        help: ArgumentHelp(
            "SQLite file or postgres:// URL; prefer $KEYHAVEN_SYNC_DATABASE for a URL with a password (default: $KEYHAVEN_SYNC_DATABASE, else "
                + "$XDG_DATA_HOME/keyhaven/sync.sqlite, XDG_DATA_HOME defaulting to ~/.local/share).",
            valueName: "path-or-url"
        )
    )
    var database: String?
    @Option(name: .long, help: "Address to listen on.") var host = "127.0.0.1"
    @Option(name: .long, help: "Port (0 picks a free one).") var port = 8095
    @Option(
        name: .customLong("public-url"),
        help: ArgumentHelp(
            "The URL devices use to reach this server, whose origin (scheme://host[:port]) they sign for; behind "
                + "a TLS-terminating proxy, the proxy's https:// URL (default: http://HOST:PORT as it listens, for a "
                + "loopback --host only; off loopback it is required and https).",
            valueName: "url"
        )
    )
    var publicURL: String?
    @Option(name: .customLong("max-item-bytes"), help: "The largest item payload accepted (larger pushes get 413).")
    var maxItemBytes = SyncServerConfiguration().maxItemBytes
    @Option(
        name: .customLong("max-wait"),
        help: "The longest a long poll (GET /v1/changes?wait=S) waits, in seconds (0 disables long polls)."
    )
    var maxWait = 60
    @OptionGroup var proxy: ReverseProxyOptions

    func validate() throws {
        let page = SyncServerConfiguration().changesMaxBytes
        guard (1024..<page).contains(maxItemBytes) else {
            throw ValidationError("--max-item-bytes: from 1024 to \(page - 1) (an item must fit in a changes page)")
        }
        guard (0...60).contains(maxWait) else { throw ValidationError("--max-wait: from 0 to 60 seconds") }
        guard let origin = try publicOrigin else {
            // Devices sign for the URL they use; off loopback that is a TLS proxy's https:// URL,
            // never http://HOST:PORT (devices refuse plain http to another machine), so the
            // default would refuse every device's signature.
            guard ServiceOrigin(scheme: .http, host: host)?.isLoopback == true else {
                throw ValidationError(
                    "--host \(host) listens beyond this machine: pass --public-url with the https:// URL devices "
                        + "use (the TLS proxy in front of this server, e.g. --public-url https://sync.example.com); "
                        + "devices sign for that URL, and without it the server would refuse every signature"
                )
            }
            return
        }
        guard origin.isPotentiallyTrustworthy else {
            throw ValidationError(
                "--public-url \(origin.serialized) is plain http to another machine, which devices refuse: give the "
                    + "https:// URL of the TLS proxy in front of this server"
            )
        }
    }

    /// The origin of --public-url; nil when it is not given.
    var publicOrigin: ServiceOrigin? {
        get throws {
            guard let publicURL else { return nil }
            guard let components = URLComponents(string: publicURL), components.user == nil,
                components.password == nil, components.query == nil, components.fragment == nil,
                let origin = ServiceOrigin.of(url: publicURL)
            else {
                throw ValidationError(
                    "--public-url: the URL devices use, https://HOST[:PORT][/PATH] (no user, password, query or fragment)"
                )
            }
            return origin
        }
    }

    var location: String {
        let environment = CommandIO.current.environment
        if let given = database ?? environment["KEYHAVEN_SYNC_DATABASE"], !given.isEmpty {
            return Self.isPostgresURL(given) ? given : (given as NSString).expandingTildeInPath
        }
        let data =
            environment["XDG_DATA_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? (NSHomeDirectory() as NSString).appendingPathComponent(".local/share")
        return (data as NSString).appendingPathComponent("keyhaven/sync.sqlite")
    }

    /// A `postgres://` or `postgresql://` URL (any other text is a SQLite file's path).
    static func isPostgresURL(_ text: String) -> Bool {
        let lowered = text.lowercased()
        return lowered.hasPrefix("postgres://") || lowered.hasPrefix("postgresql://")
    }

    func run() async throws {
        let location = self.location
        var configuration = SyncServerConfiguration()
        configuration.maxItemBytes = maxItemBytes
        configuration.maxWait = .seconds(maxWait)
        configuration.publicOrigin = try publicOrigin
        configuration.clientAddressHeader = proxy.clientAddressHeader
        if !proxy.trustedProxies.isEmpty { configuration.trustedProxies = Set(proxy.trustedProxies) }
        var logger = Logger(label: "keyhaven.sync")
        // Notices and errors (a failing database is logged at .error) go to standard error.
        logger.logLevel = .notice
        let (host, port, publicOrigin) = (self.host, self.port, configuration.publicOrigin)
        func serve(_ store: any SyncStore, shown: String) async throws {
            try await SyncHTTPServer(service: SyncService(store: store, configuration: configuration)).run(
                host: host,
                port: port,
                logger: logger
            ) { bound in
                // Origins as serialised (an IPv6 host in brackets): what devices sign for.
                let listening = ServiceOrigin(scheme: .http, host: host, port: bound)?.serialized ?? "\(host):\(bound)"
                let origin = publicOrigin?.serialized ?? listening
                Output.error(
                    "keyhaven: sync server on \(listening) for devices at \(origin) (data in \(shown)); Ctrl-C stops"
                )
            }
        }
        if Self.isPostgresURL(location) {
            var postgresLogger = Logger(label: "keyhaven.sync.postgres")
            postgresLogger.logLevel = .error
            let store: PostgresSyncStore
            do {
                store = try PostgresSyncStore(url: location, logger: postgresLogger)
            } catch {
                throw Output.failure("cannot use the sync database: \(error)")
            }
            try await store.withRunning {
                do {
                    try await store.prepare()
                } catch {
                    throw Output.failure("cannot open the sync database in PostgreSQL: \(error)")
                }
                try await serve(store, shown: "PostgreSQL")
            }
            return
        }
        let store: SQLiteSyncStore
        do {
            // A folder made here is 0700; the database is created 0600.
            try PrivateFile.createDirectory(at: URL(fileURLWithPath: location).deletingLastPathComponent())
            store = try SQLiteSyncStore(path: location)
        } catch {
            throw Output.failure("cannot open the sync database \(location): \(error)")
        }
        for warning in store.fileWarnings { Output.error("keyhaven: warning: \(warning)") }
        try await serve(store, shown: location)
    }
}
