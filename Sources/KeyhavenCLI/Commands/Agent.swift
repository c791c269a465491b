import ArgumentParser
import AutoFill
import Foundation
import KeyhavenAgent
import KeyhavenApp
import KeyhavenSync
import KeyhavenWebApp
import Vault
import _KeyhavenSupport

#if canImport(Glibc)
import Glibc
#endif

extension Keyhaven {
    struct Agent: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run the agent: the one process that holds the unlocked vault (AutoFill, quick commands).",
            discussion: """
                `keyhaven agent` (= `keyhaven agent start`) runs in the foreground and serves the \
                AutoFill protocol (docs/autofill-protocol.md) and the CLI on a Unix socket: \
                $KEYHAVEN_AGENT_SOCKET, else $XDG_RUNTIME_DIR/keyhaven/agent.sock, else \
                $XDG_STATE_HOME/keyhaven/run/agent.sock (~/.local/state/…; the folder must be yours, \
                0700 and no link, or the agent and every client refuse it; socket 0600; only processes \
                of your own user are answered, and clients talk only to an agent of their own user). \
                It starts locked: `keyhaven unlock` unlocks it; it locks again after --idle-lock \
                without a request, on `keyhaven lock`, and when it stops (`keyhaven agent stop`, \
                SIGTERM, SIGINT or SIGHUP). While it is unlocked, the vault commands (add, list, \
                show, copy, otp, search, edit, rm, restore, import, export) ask it for what they \
                need instead of opening the vault, so no master password is asked; they prompt and \
                print here as always. `init`, `passwd`, the other commands, and any command given \
                --password-stdin or KEYHAVEN_NO_AGENT=1 open the vault themselves.

                With sync on (`keyhaven sync enable`), the unlocked agent syncs in the background: \
                it waits on the server for the other devices' changes (a long poll) and sends this \
                vault's edits about a second after they are made; a server out of reach is tried \
                again after 1 s, 2 s, 4 s … up to 5 minutes. It stops at lock. `keyhaven agent \
                status` shows the last sync, the last error and the next attempt.

                Examples:
                  keyhaven agent --idle-lock 5m &
                  keyhaven unlock
                  keyhaven agent status --json
                  keyhaven agent install-service && systemctl --user enable --now keyhaven-agent
                """,
            subcommands: [Start.self, Status.self, Stop.self, InstallService.self],
            defaultSubcommand: Start.self
        )

        struct Start: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Run the agent in the foreground (the default).")
            @OptionGroup var options: VaultOptions
            @Option(
                name: .long,
                help: ArgumentHelp(
                    "Lock after this long without a request: 90s, 15m, 1h (default 15m; 0 never).",
                    valueName: "duration"
                )
            )
            var idleLock: String = "15m"
            @Option(
                name: .long,
                help: ArgumentHelp(
                    "How long the unlock verifies you for passkeys that require it; after that the master password is asked again.",
                    valueName: "duration"
                )
            )
            var passkeyVerification: String = "5m"
            @Option(name: .long, help: ArgumentHelp("The socket (default: see above).", valueName: "path"))
            var socket: String?

            func run() async throws {
                guard let idle = parseDuration(idleLock) else {
                    throw Output.failure(
                        "--idle-lock \(idleLock): give a duration such as 90s, 15m or 1h",
                        exitCode: 64
                    )
                }
                guard let verification = parseDuration(passkeyVerification) else {
                    throw Output.failure(
                        "--passkey-verification \(passkeyVerification): give a duration such as 90s, 5m or 1h",
                        exitCode: 64
                    )
                }
                let vaultURL = options.url()
                guard FileManager.default.fileExists(atPath: vaultURL.path) else {
                    throw Output.failure("no vault at \(vaultURL.path): create one with `keyhaven init`")
                }
                // The one unlocked Keyhaven of this process: the CLI's requests, browsers and the web
                // app all reach the vault through it.
                let session = KeyhavenSession(
                    .init(
                        vaultURL: vaultURL,
                        idleLock: idle == 0 ? .infinity : idle,
                        allowInsecureKDF: options.insecureKDF,
                        verificationWindow: verification
                    )
                )
                let agent = AutoFillAgent(session: session)
                let location = AgentClient.location(socket)
                let path = location.socketPath
                // `keyhaven ui`: the web app, started on the first request for it.
                var services = WebApp.Services.http(environment: CommandIO.current.environment)
                services.sync = { await session.answerWithSync($0) }
                let web = WebApp(agent: agent, services: services)
                let server = AgentServer(
                    agent: agent,
                    runtimeDirectory: location,
                    version: KeyhavenVersion.current,
                    launchWebApp: { port, withFile in
                        let bound = try await web.start(port: port)
                        // The launch file goes into the agent's private runtime folder, the socket's.
                        let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
                        let launch = try web.launch(redirectFileIn: withFile ? folder : nil)
                        return .init(url: launch.url, port: bound, launchFile: launch.file?.path)
                    }
                )
                do {
                    try server.bind()
                } catch {
                    throw Output.failure("\(error)")
                }
                Output.error(
                    "keyhaven agent: listening on \(path) for \(vaultURL.path) (locked; "
                        + (idle == 0 ? "no idle lock" : "locks after \(idleLock) idle")
                        + "); `keyhaven unlock` unlocks it"
                )
                // A client that hangs up while it is answered must not end the agent (the write fails
                // with EPIPE instead).
                signal(SIGPIPE, SIG_IGN)
                // A logout, `kill`, Ctrl-C or `systemctl --user stop`: lock, remove the socket, end
                // (security review #12). A second signal while stopping ends the process at once.
                do {
                    try TerminationSignals.watch { number, count in
                        if count > 1 {
                            // The unlocked key ends with the process.
                            _exit(128 + number)
                        }
                        Output.error("keyhaven agent: signal \(number): locking and stopping")
                        Task { await server.stop() }
                    }
                } catch {
                    await server.stop()
                    throw Output.failure("\(error)")
                }
                do {
                    try await server.serve()
                } catch {
                    await server.stop()
                    throw Output.failure("the agent stopped: \(error)")
                }
                web.stop()
                Output.error("keyhaven agent: stopped")
            }
        }

        struct Status: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Whether an agent runs, and locked or not.")
            @Option(name: .long, help: ArgumentHelp("The agent's socket.", valueName: "path")) var socket: String?
            @Flag(
                name: .long,
                help:
                    "Print JSON: {running, state, vault, socket, identities, lockInSeconds, sync: {phase, lastSync, lastError, nextAttempt, …}, …}."
            )
            var json = false

            func run() async throws {
                guard let connection = try AgentClient.connect(socket) else {
                    if json {
                        print(#"{"running":false,"socket":"\#(AgentClient.socketPath(socket))"}"#)
                    } else {
                        print("No agent runs on \(AgentClient.socketPath(socket)) (start one with `keyhaven agent`).")
                    }
                    throw ExitCode(1)
                }
                let status = try AgentClient.request(connection, .status)
                if json {
                    print(try Output.jsonLine(RunningStatus(status: status)))
                    return
                }
                let session = status.session
                var line = "Agent \(status.pid) on \(status.socket): \(session.state.rawValue)"
                if session.state == .unlocked {
                    line += ", \(session.identities ?? 0) credentials"
                    if let left = session.lockInSeconds, left.isFinite {
                        line += ", locks in \(Int(left)) s unless used"
                    }
                }
                print(line + " (vault \(session.vault)).")
                if let sync = status.sync, !["locked", "off"].contains(sync.phase) { print(Self.describe(sync)) }
            }

            /// The background sync's line.
            static func describe(_ sync: BackgroundSync.State) -> String {
                var line = "Background sync: "
                switch sync.phase {
                case "waiting": line += "waiting for changes"
                case "syncing": line += "syncing"
                case "backingOff": line += "the last attempt failed"
                default: line += sync.phase
                }
                if let last = sync.lastSync { line += "; last sync \(last.formatted(.iso8601))" }
                if let error = sync.lastError {
                    line += "; last error \(error): \(TerminalText.neutralised(sync.lastErrorMessage ?? ""))"
                }
                if let next = sync.nextAttempt { line += "; next attempt \(next.formatted(.iso8601))" }
                return line + "."
            }

            /// `--json`: the agent's status and `running: true`, in one object.
            struct RunningStatus: Encodable {
                var status: AgentReply.Status
                enum CodingKeys: CodingKey { case running }

                func encode(to encoder: any Encoder) throws {
                    try status.encode(to: encoder)
                    var container = encoder.container(keyedBy: CodingKeys.self)
                    try container.encode(true, forKey: .running)
                }
            }
        }

        struct Stop: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Lock and stop the running agent.")
            @Option(name: .long, help: ArgumentHelp("The agent's socket.", valueName: "path")) var socket: String?

            func run() async throws {
                _ = try AgentClient.request(try AgentClient.require(socket), .stop)
                print("Stopped the agent.")
            }
        }

        struct InstallService: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "install-service",
                abstract: "Write a systemd user unit that runs the agent.",
                discussion: """
                    Writes keyhaven-agent.service into $XDG_CONFIG_HOME/systemd/user (or --output) \
                    with this keyhaven's absolute path, then prints how to start it: \
                    `systemctl --user daemon-reload && systemctl --user enable --now keyhaven-agent`.
                    """
            )
            @Option(name: .long, help: ArgumentHelp("The directory to write the unit into.", valueName: "dir"))
            var output: String?
            @Option(name: .long, help: ArgumentHelp("Passed on as --idle-lock.", valueName: "duration"))
            var idleLock = "15m"
            @OptionGroup var options: VaultOptions

            func run() async throws {
                guard parseDuration(idleLock) != nil else {
                    throw Output.failure(
                        "--idle-lock \(idleLock): give a duration such as 90s, 15m or 1h",
                        exitCode: 64
                    )
                }
                let environment = CommandIO.current.environment
                let config =
                    environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 }
                    ?? (NSHomeDirectory() as NSString).appendingPathComponent(".config")
                let directory = output ?? (config as NSString).appendingPathComponent("systemd/user")
                let binary = (CommandIO.current.executable ?? URL(fileURLWithPath: "/usr/bin/keyhaven")).path
                let unit = AgentUnit.text(binary: binary, vault: options.url().path, idleLock: idleLock)
                do {
                    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                    let path = (directory as NSString).appendingPathComponent("keyhaven-agent.service")
                    try Data(unit.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
                    print("Wrote \(path).")
                } catch {
                    throw Output.failure("cannot write the unit into \(directory): \(error.localizedDescription)")
                }
                print("Start it: systemctl --user daemon-reload && systemctl --user enable --now keyhaven-agent")
            }
        }
    }

    struct Unlock: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Unlock the running agent with the master password.",
            discussion: """
                The password comes from --password-stdin, $KEYHAVEN_PASSWORD or a prompt. Exit status 2 \
                when it is wrong.

                Examples:
                  keyhaven unlock
                  pass show keyhaven | keyhaven unlock --password-stdin
                """
        )
        @OptionGroup var options: VaultOptions
        @Option(name: .long, help: ArgumentHelp("The agent's socket.", valueName: "path")) var socket: String?

        func run() async throws {
            let connection = try AgentClient.require(socket)
            let status = try AgentClient.request(connection, .status).session
            if status.state == .unlocked {
                print("The agent is already unlocked.")
                return
            }
            let password = try options.masterPassword()
            _ = try AgentClient.request(connection, .unlock(masterPassword: password))
            print("Unlocked \(status.vault).")
        }
    }

    struct Lock: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Lock the running agent now.")
        @Option(name: .long, help: ArgumentHelp("The agent's socket.", valueName: "path")) var socket: String?

        func run() async throws {
            guard let connection = try AgentClient.connect(socket) else {
                print("No agent runs; nothing is unlocked.")
                return
            }
            _ = try AgentClient.request(connection, .lock)
            print("Locked.")
        }
    }
}

/// "90s", "15m", "1h", "2h30m" or plain seconds; nil when unreadable.
func parseDuration(_ text: String) -> TimeInterval? {
    if let seconds = TimeInterval(text), seconds >= 0 { return seconds }
    var total: TimeInterval = 0
    var number = ""
    for character in text {
        if character.isNumber {
            number.append(character)
            continue
        }
        guard let value = TimeInterval(number) else { return nil }
        switch character {
        case "s": total += value
        case "m": total += value * 60
        case "h": total += value * 3600
        case "d": total += value * 86400
        default: return nil
        }
        number = ""
    }
    return number.isEmpty && !text.isEmpty ? total : nil
}

/// The systemd user unit of `keyhaven agent install-service`.
enum AgentUnit {
    static func text(binary: String, vault: String, idleLock: String) -> String {
        """
        [Unit]
        Description=Keyhaven agent (holds the unlocked vault; AutoFill)
        Documentation=man:keyhaven.agent(1)

        [Service]
        Type=simple
        ExecStart=\(quoted(binary)) agent start --vault \(quoted(vault)) --idle-lock \(quoted(idleLock))
        Restart=on-failure
        # The agent holds secrets: keep it from being dumped or traced.
        LimitCORE=0
        NoNewPrivileges=true

        [Install]
        WantedBy=default.target

        """
    }

    /// systemd's quoting: a word in double quotes with `\\`, `"` and `%` escaped.
    static func quoted(_ word: String) -> String {
        "\""
            + word.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "%", with: "%%") + "\""
    }
}
