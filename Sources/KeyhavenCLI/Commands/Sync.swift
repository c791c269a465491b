import ArgumentParser
import Foundation
import KeyhavenApp
import KeyhavenSync
import Logging
import SyncServer
import SyncServerHTTP
import SyncServerPostgres
import _KeyhavenSupport

extension Keyhaven {
    struct Sync: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "sync",
            abstract: "End-to-end encrypted sync: turn it on, sync, see what waits; run the server.",
            discussion: """
                Devices sync through a server the person runs (`keyhaven sync serve`), which stores each \
                device's public key and the items as ciphertext it cannot read; devices authenticate with \
                their own keys, never with the master password. Every change lands in the vault first: \
                with the server out of reach nothing is lost, it waits for the next sync. See \
                docs/sync.md and the API in docs/openapi/sync.yaml.

                Examples:
                  keyhaven sync serve --port 8095
                  keyhaven sync enable --server https://sync.example.org --name laptop
                  keyhaven sync join --server https://sync.example.org --name phone
                  keyhaven sync now
                  keyhaven sync status --json
                  keyhaven list --conflicts
                  keyhaven sync resolve github.com --field password --keep other
                  keyhaven sync disable --yes
                """,
            subcommands: [
                SyncEnable.self, SyncJoin.self, SyncNow.self, SyncStatusCommand.self, SyncResolve.self,
                SyncDisable.self, SyncServe.self,
            ]
        )

        @ParentCommand var root: Keyhaven
    }
}

/// A `keyhaven sync` subcommand that works on the vault (through the agent's session when one
/// holds it unlocked, else a session of this process, as every vault command).
protocol SyncVaultCommand: VaultCommand {
    var sync: Keyhaven.Sync { get }
}

extension SyncVaultCommand {
    var root: Keyhaven { sync.root }
}

struct SyncEnable: SyncVaultCommand {
    static let configuration = CommandConfiguration(
        commandName: "enable",
        abstract: "Turn sync on: this device creates an account on the server and sends every credential.",
        discussion: """
            For the first device of a person. It makes this device's own key (Ed25519; the server keeps \
            only the public half) and a random sync key that seals every item before it leaves (not \
            derived from the master password), creates an account on the server, takes in every credential with its \
            password history (recently deleted ones as deletions) and syncs. The keys and the sync \
            state are kept sealed in the vault. The server URL is https://, or http:// to this \
            machine (127.0.0.1, localhost, ::1). Refused when sync is already on. Should the vault be \
            locked or the process stop between creating the account and saving it, the account stays on \
            the server unused (nothing of the vault is in it) and running enable again makes a new one. \
            Should the first sync fail (the server out of reach), sync stays on with everything \
            pending: run `keyhaven sync now` later, not enable again.

            For the person's further devices use `keyhaven sync join` there (and `keyhaven device \
            approve` here): running enable on another device makes a separate account that never syncs \
            with this one.

            Examples:
              keyhaven sync enable --server https://sync.example.org
              keyhaven sync enable --server http://127.0.0.1:8095 --name laptop --json
            """
    )
    @OptionGroup var options: VaultOptions
    @ParentCommand var sync: Keyhaven.Sync
    @Option(name: .long, help: ArgumentHelp("The sync server's URL (`keyhaven sync serve`).", valueName: "url"))
    var server: String
    @OptionGroup var device: DeviceNameOption
    @Flag(
        name: .long,
        help:
            "Print the status as JSON: {enabled, server, account, deviceID, deviceName, pending, conflicts, lastSync}."
    )
    var json = false

    func run() async throws {
        let store = try await openStore()
        let status = try await store.enableSync(server: server, deviceName: device.name)
        if json {
            print(try Output.json(status))
        } else {
            print(
                "Sync is on: this device (\(status.deviceName ?? "")) created account \(status.account ?? "") on \(status.server ?? "")."
            )
            SyncStatusCommand.describe(status)
        }
    }
}

/// `--name`: this device's name for the person's other devices (`sync enable`, `sync join`).
struct DeviceNameOption: ParsableArguments {
    @Option(
        name: .customLong("name"),
        help: ArgumentHelp(
            "This device's name, shown to the person's other devices (default: the host name).",
            valueName: "name"
        )
    )
    var given: String?

    /// The name given, or this machine's.
    var name: String { given ?? SyncEnable.hostName() }
}

extension SyncEnable {
    /// This machine's name (`gethostname`: no DNS lookup, which could block), cut to what the
    /// server takes as a device name (100 characters, 200 UTF-8 bytes); "this device" without one.
    static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "this device" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return deviceName(name)
    }

    /// `name` cut to the server's limits, on character boundaries.
    static func deviceName(_ name: String) -> String {
        var cut = String(name.trimmingCharacters(in: .whitespacesAndNewlines).prefix(100))
        while cut.utf8.count > 200 { cut.removeLast() }
        return cut.isEmpty ? "this device" : cut
    }
}

struct SyncJoin: SyncVaultCommand {
    static let configuration = CommandConfiguration(
        commandName: "join",
        abstract: "Turn sync on as a further device of an account: a device already in approves it with a code.",
        discussion: """
            Shows a join code (16 letters and digits, like K7QM-2XPA-9FRT-4HDW) and waits. On a device \
            already in sync, run `keyhaven device approve` and type the code within the time given (10 \
            minutes by default, and never longer than the server keeps the request: 10 minutes unless \
            it is set otherwise). Keep the code to yourself: whoever approves it first brings this \
            device into their account. This device then receives the account's sync key, sealed to a key it made for the \
            purpose, enrols its own device key, and syncs: every credential of the account comes in, and \
            this vault's own credentials are kept and sent as new items (nothing here is lost). \
            The code never goes to the server: both devices prove with it that the request and the \
            approval are the ones the other made, so the server cannot put its own key in between. Both \
            devices must use the same server URL. Nothing is written to this vault before the approval \
            arrives: when the time runs out, on Ctrl-C (with or without the agent), or when the vault is \
            locked meanwhile, sync stays off (run join again for a new code). Once enrolled, a failure \
            to save here names the device id to revoke from another device; a failed first sync leaves \
            sync on with everything pending (`keyhaven sync now` retries). Once joined it says which \
            account, and which device approved it. Refused when sync is already on. --json prints the status after the first sync: \
            {enabled, server, account, deviceID, deviceName, pending, conflicts, lastSync}.

            Examples:
              keyhaven sync join --server https://sync.example.org
              keyhaven sync join --server http://127.0.0.1:8095 --name phone --timeout 300 --json
            """
    )
    @OptionGroup var options: VaultOptions
    @ParentCommand var sync: Keyhaven.Sync
    @Option(name: .long, help: ArgumentHelp("The sync server's URL, as the other devices use it.", valueName: "url"))
    var server: String
    @OptionGroup var device: DeviceNameOption
    @Option(
        name: .long,
        help: ArgumentHelp(
            "How long to wait for the approval, in seconds (at most as long as the server keeps the request).",
            valueName: "seconds"
        )
    )
    var timeout = 600
    @Flag(name: .long, help: "Print the status as JSON once joined.") var json = false

    func validate() throws {
        guard (1...3600).contains(timeout) else { throw ValidationError("--timeout: from 1 to 3600 seconds") }
    }

    func run() async throws {
        let store = try await openStore()
        let code = KeyhavenSession.makeJoinCode()
        Output.error("keyhaven: join code: \(code)")
        Output.error(
            "Waiting for approval — on a device already in sync run `keyhaven device approve` and type this code"
                + " (within \(timeout >= 60 && timeout % 60 == 0 ? "\(timeout / 60) minutes" : "\(timeout) seconds"))"
        )
        let status = try await store.joinSync(
            server: server,
            deviceName: device.name,
            code: code,
            timeoutSeconds: timeout
        )
        if json {
            print(try Output.json(status))
        } else {
            print(
                "Sync is on: this device (\(status.deviceName ?? "")) joined account \(status.account ?? "") on \(status.server ?? "")."
            )
            // Which device let it in, as the server lists it: a surprise here means the code was
            // used by someone else (revoke, `sync disable`, and join again).
            if let devices = try? await store.syncDevices(), let this = devices.first(where: \.current),
                let approverID = this.approvedBy
            {
                let approver = devices.first { $0.id == approverID }
                print("Approved by device '\(approver?.name ?? "?")' (\(approverID)).")
            }
            SyncStatusCommand.describe(status)
        }
    }
}

struct SyncNow: SyncVaultCommand {
    static let configuration = CommandConfiguration(
        commandName: "now",
        abstract: "Sync now: send this vault's changes, bring in the other devices'.",
        discussion: """
            Edits made in the vault since the last sync go out; what other devices wrote comes in and is \
            merged per field (a concurrent change of the same field keeps the later value and the other \
            in the item's history, marked as a conflict); new credentials are created, changed ones \
            updated, deleted ones moved to recently deleted. A server that cannot be reached fails at \
            once (exit 1) and every change stays pending for the next sync. --json prints {pushed, \
            pulled, created, updated, deleted, restored, rejections, status}.

            Examples:
              keyhaven sync now
              keyhaven sync now --json
            """
    )
    @OptionGroup var options: VaultOptions
    @ParentCommand var sync: Keyhaven.Sync
    @Flag(name: .long, help: "Print JSON.") var json = false

    func run() async throws {
        let store = try await openStore()
        let report = try await store.syncNow()
        if json {
            print(try Output.json(report))
            return
        }
        print(
            "Synced with \(report.status.server ?? "the server"): \(report.pushed) sent, \(report.pulled) received; "
                + "here \(report.created) new, \(report.updated) changed, \(report.deleted) deleted, "
                + "\(report.restored) restored."
        )
        for rejection in report.rejections { Output.error("keyhaven: warning: the server refused \(rejection)") }
        SyncStatusCommand.describe(report.status)
    }
}

struct SyncDisable: SyncVaultCommand {
    static let configuration = CommandConfiguration(
        commandName: "disable",
        abstract: "Turn sync off on this device: its sync keys and state leave the vault.",
        discussion: """
            Removes this device's sync state from the vault: its device key, the sync key and what \
            was waiting to be sent (changes not synced yet stay in this vault only). The credentials \
            stay as they are. The server keeps the account and this device's entry (its public key \
            only; the private key leaves with the state, so nobody can sign in as it), and the other \
            devices go on syncing; to remove this device from the server run `keyhaven device revoke ID` \
            on another device. Turning sync on again makes a new account (`keyhaven sync enable`) or \
            joins one (`keyhaven sync join`). Says \
            what it does and asks first (reads y from standard input); --yes does not ask. --json prints the status sync had: {enabled, \
            server, account, deviceID, deviceName, pending, conflicts, lastSync}.

            Examples:
              keyhaven sync disable
              keyhaven sync disable --yes --json
            """
    )
    @OptionGroup var options: VaultOptions
    @ParentCommand var sync: Keyhaven.Sync
    @Flag(name: .long, help: "Do not ask; turn sync off.") var yes = false
    @Flag(name: .long, help: "Print JSON.") var json = false

    func run() async throws {
        let store = try await openStore()
        if !yes {
            let status = try await store.syncStatus()
            guard status.enabled else { throw Output.failure("sync is already off for this vault") }
            Output.error(
                "keyhaven: this removes this device's sync keys and state from the vault (\(status.pending) "
                    + "pending change\(status.pending == 1 ? "" : "s") will not be sent); the credentials stay. "
                    + "The server \(status.server ?? "") keeps account \(status.account ?? "") and this device."
            )
            Output.error("Turn sync off? [y/N]")
            let answer = CommandIO.current.readLine()?.trimmingCharacters(in: .whitespaces).lowercased()
            guard answer == "y" || answer == "yes" else {
                throw Output.failure("sync stays on (nothing changed); to turn it off without the question, pass --yes")
            }
        }
        let status = try await store.disableSync()
        if json {
            print(try Output.json(status))
            return
        }
        print(
            "Sync is off on this device (it was with \(status.server ?? "the server"), account \(status.account ?? ""))."
        )
        print(
            "The server keeps the account and this device's public key (its private key is gone from this "
                + "vault); to remove it there, run `keyhaven device revoke \(status.deviceID ?? "ID")` on another device."
        )
    }
}

struct SyncStatusCommand: SyncVaultCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show whether sync is on, with which server, and what is pending.",
        discussion: """
            Reads the vault only (nothing is sent). Pending counts the items with changes the server has \
            not confirmed, edits made since the last sync included; conflicts the items with a value \
            that lost to a concurrent write (kept in history). --json prints {enabled, server, account, \
            deviceID, deviceName, pending, conflicts, lastSync}.

            Examples:
              keyhaven sync status
              keyhaven sync status --json | jq .pending
              keyhaven --vault ~/work.sqlite sync status
            """
    )
    @Flag(name: .long, help: "Print JSON.") var json = false
    @ParentCommand var sync: Keyhaven.Sync
    @OptionGroup var options: VaultOptions

    func run() async throws {
        let status = try await openStore().syncStatus()
        if json {
            print(try Output.json(status))
        } else if !status.enabled {
            print("Sync is off. Turn it on with: keyhaven sync enable --server URL")
        } else {
            print("Sync is on: server \(status.server ?? ""), account \(status.account ?? "").")
            Self.describe(status)
        }
    }

    /// The lines every sync command ends with.
    static func describe(_ status: SyncStatus) {
        print("This device: \(status.deviceName ?? "") (\(status.deviceID ?? "")).")
        print("Pending: \(status.pending) item\(status.pending == 1 ? "" : "s"); conflicts: \(status.conflicts).")
        let formatter = ISO8601DateFormatter()
        print("Last sync: \(status.lastSync.map { formatter.string(from: $0) } ?? "never").")
    }
}

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
