import ArgumentParser
import Foundation
import KeyhavenAgent
import _KeyhavenSupport

#if canImport(Glibc)
import Glibc
#endif

extension Keyhaven {
    struct UI: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "ui",
            abstract: "Open Keyhaven's web app: the vault, Security Recommendations and one-tap upgrades in a browser.",
            discussion: """
                The agent serves the app on 127.0.0.1 (it is started in the background when none runs; \
                `keyhaven agent stop` ends it). The first line of standard output is the app's URL: it \
                carries a one-time secret that lets one browser in and expires after 5 minutes unused; \
                run `keyhaven ui` again for another. Unless --no-open, a browser ($BROWSER, else \
                xdg-open) is given not that URL but a private file (0600, in the agent's runtime \
                folder) that leads to it, so the secret is in no command line other users can read; \
                the file is removed once used or expired. The browser's session needs both an \
                HttpOnly cookie and the capability in its address (/s/…), so the cookie alone, which \
                browsers send to every port of 127.0.0.1, opens nothing. The app asks for the master \
                password itself; with --password-stdin or $KEYHAVEN_PASSWORD the agent is unlocked \
                first (exit status 2 when the password is wrong).

                Best leave out --port: any free port is chosen. A fixed port can be taken by another \
                user while the agent is not running; `keyhaven ui` then refuses it and says who holds \
                it, rather than send you to a server that may not be Keyhaven.

                Examples:
                  keyhaven ui
                  keyhaven ui --no-open
                """
        )
        @OptionGroup var options: VaultOptions
        @ParentCommand var root: Keyhaven
        @Option(
            name: .long,
            help: ArgumentHelp(
                "The port (default and best: any free one; the first `ui` chooses). A port another program holds is refused.",
                valueName: "port"
            )
        )
        var port: Int = 0
        @Flag(name: .customLong("no-open"), help: "Print the URL only; do not open a browser.") var noOpen = false
        @Flag(
            name: .long,
            help: "Print {\"url\", \"agentStarted\"} (the pid of an agent it started, else null) as JSON."
        )
        var json = false
        @Option(name: .long, help: ArgumentHelp("The agent's socket.", valueName: "path")) var socket: String?

        func validate() throws {
            guard (0...65535).contains(port) else { throw ValidationError("--port must be 0…65535") }
        }

        func run() async throws {
            var started: Int32?
            var connection = try AgentClient.connect(socket)
            if connection == nil {
                started = try startAgent()
                connection = try await waitForAgent()
            }
            guard let connection else {
                throw Output.failure(
                    "the agent did not start; run `keyhaven agent` in a terminal to see why"
                )
            }
            let environment = CommandIO.current.environment
            if options.passwordStdin || !(environment["KEYHAVEN_PASSWORD"] ?? "").isEmpty,
                try AgentClient.request(connection, "agent.status")["state"]?.string != "unlocked"
            {
                let password = try options.masterPassword()
                _ = try AgentClient.request(connection, "agent.unlock", ["masterPassword": .string(password)])
            }
            // A launch file only for a browser we start (it is written for nobody else).
            let opens = !noOpen && browserOpener() != nil
            let answer = try AgentClient.request(
                connection,
                "agent.ui",
                ["port": .number(Double(port)), "launchFile": .bool(opens)]
            )
            let launch = try WebLaunch(answer, port: port, socketPath: AgentClient.socketPath(socket), file: opens)
            if json {
                let started: JSONValue = started.map { .number(Double($0)) } ?? .null
                print(
                    String(
                        decoding: JSONValue.object(["url": .string(launch.url), "agentStarted": started]).encoded(),
                        as: UTF8.self
                    )
                )
            } else {
                // Standard output is the person's, not a command line: the URL may be pasted from it.
                print(launch.url)
            }
            if let started {
                Output.error(
                    "keyhaven: started an agent (pid \(started)) for \(options.url(global: root.vault).path); "
                        + "it keeps running — `keyhaven agent stop` ends it"
                )
            }
            if !noOpen, launch.file.map({ openInBrowser($0.absoluteString) }) != true {
                Output.error("keyhaven: no browser to open (set $BROWSER); open the URL above yourself")
            }
        }

        /// `keyhaven agent start` in a session of its own, its output in `agent.log` beside the socket.
        func startAgent() throws -> Int32 {
            let vaultURL = options.url(global: root.vault)
            guard FileManager.default.fileExists(atPath: vaultURL.path) else {
                throw Output.failure("no vault at \(vaultURL.path): create one with `keyhaven init`")
            }
            guard let executable = CommandIO.current.executable?.path else {
                throw Output.failure("cannot find the keyhaven executable to start the agent")
            }
            let socketPath = AgentClient.socketPath(socket)
            let directory = (socketPath as NSString).deletingLastPathComponent
            try? PrivateFile.createDirectory(at: URL(fileURLWithPath: directory))
            let log = (directory as NSString).appendingPathComponent("agent.log")
            var arguments = [executable, "agent", "start", "--vault", vaultURL.path, "--socket", socketPath]
            if options.insecureKDF { arguments.append("--insecure-kdf") }
            return try Spawn.detached(arguments, log: log, environment: CommandIO.current.environment)
        }

        func waitForAgent() async throws -> FrameConnection? {
            for _ in 0..<100 {
                if let connection = try? AgentClient.connect(socket) { return connection }
                try await Task.sleep(for: .milliseconds(100))
            }
            return nil
        }
    }
}

/// Starting a process that outlives `keyhaven` (the agent): a session of its own (no terminal's
/// Ctrl-C reaches it), standard input from /dev/null, output appended to a log file.
enum Spawn {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static func detached(_ arguments: [String], log: String, environment: [String: String]) throws -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // Nothing else of ours: a pipe the caller reads to its end must not stay open in the agent.
        // (glibc's addclosefrom_np is not visible to Swift; the open descriptors are listed instead.)
        let open = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).compactMap {
            Int32($0)
        }
        for descriptor in open where descriptor > 2 && fcntl(descriptor, F_GETFD) != -1 {
            posix_spawn_file_actions_addclose(&actions, descriptor)
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // POSIX_SPAWN_SETSID (glibc 2.26+; not imported into Swift as a constant).
        posix_spawnattr_setflags(&attributes, 0x80)
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv + envp { free(pointer) }
        }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, arguments[0], &actions, &attributes, argv, envp)
        guard status == 0 else {
            throw Failure(description: "cannot start \(arguments[0]): \(String(cString: strerror(status)))")
        }
        return pid
    }
}
