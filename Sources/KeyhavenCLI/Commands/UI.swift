import ArgumentParser
import AutoFill
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
                try AgentClient.request(connection, .status).session.state != .unlocked
            {
                let password = try options.masterPassword()
                _ = try AgentClient.request(connection, .unlock(masterPassword: password))
            }
            // A launch file only for a browser we start (it is written for nobody else).
            let opens = !noOpen && browserOpener() != nil
            let answer = try AgentClient.request(connection, .ui(port: port, launchFile: opens))
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

        /// `keyhaven agent start` in a session of its own, its output in `agent.log` beside the socket
        /// (in the checked folder, never through a link), with an environment cleared of secrets.
        func startAgent() throws -> Int32 {
            let vaultURL = options.url(global: root.vault)
            guard FileManager.default.fileExists(atPath: vaultURL.path) else {
                throw Output.failure("no vault at \(vaultURL.path): create one with `keyhaven init`")
            }
            guard let executable = CommandIO.current.executable?.path else {
                throw Output.failure("cannot find the keyhaven executable to start the agent")
            }
            let location = AgentClient.location(socket)
            do throws(AgentRuntimeDirectoryError) {
                try location.verify(create: true)
            } catch {
                throw Output.failure("cannot start the agent: \(error.message)")
            }
            var arguments = [executable, "agent", "start", "--vault", vaultURL.path]
            // The agent finds the same socket from the environment it keeps; a chosen one is passed on.
            if let socket, !socket.isEmpty { arguments += ["--socket", location.socketPath] }
            if options.insecureKDF { arguments.append("--insecure-kdf") }
            do {
                return try Spawn.detached(
                    arguments,
                    log: location.file(named: "agent.log").path,
                    environment: Spawn.agentEnvironment(CommandIO.current.environment)
                )
            } catch {
                throw Output.failure("cannot start the agent: \(error)")
            }
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

    /// What the agent keeps of the caller's environment (security review #8): where things are
    /// (home, XDG folders, the socket, the vault), locale and time zone, the display for nothing
    /// secret, and `KEYHAVEN_*` settings. Never a password, a token or a key: `KEYHAVEN_PASSWORD`
    /// (and every variable whose name says PASSWORD, PASSPHRASE, SECRET, TOKEN, CREDENTIAL or
    /// KEY_FILE) is dropped, and so is everything not named here (cloud keys, proxies with
    /// credentials, `SSH_AUTH_SOCK`). Forwarded vault commands bring their own environment.
    static func agentEnvironment(_ environment: [String: String]) -> [String: String] {
        let kept: Set<String> = [
            "HOME", "USER", "LOGNAME", "PATH", "SHELL", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TERM", "NO_COLOR",
            "DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "LD_LIBRARY_PATH", "SSL_CERT_FILE",
            "SSL_CERT_DIR",
        ]
        let secret = ["PASSWORD", "PASSPHRASE", "SECRET", "TOKEN", "CREDENTIAL", "KEY_FILE", "PRIVATE"]
        return environment.filter { name, _ in
            let upper = name.uppercased()
            guard !secret.contains(where: { upper.contains($0) }) else { return false }
            return kept.contains(name) || name.hasPrefix("LC_") || name.hasPrefix("XDG_")
                || name.hasPrefix("KEYHAVEN_")
        }
    }

    /// Starts `arguments` detached, its standard output and error appended to `log`.
    ///
    /// The log is opened here with `O_NOFOLLOW` and mode 0600 and must be a regular file of ours
    /// with one link, so a link or file someone planted at that path is refused, not written
    /// through (security review #6).
    static func detached(_ arguments: [String], log: String, environment: [String: String]) throws -> Int32 {
        let logDescriptor = open(log, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0o600)
        guard logDescriptor >= 0 else {
            let code = errno
            if code == ELOOP {
                throw Failure(
                    description: "\(log) is a symbolic link; Keyhaven does not write through it: remove it "
                        + "(rm \(log)) and run this again"
                )
            }
            throw Failure(description: "cannot open \(log): \(String(cString: strerror(code)))")
        }
        defer { close(logDescriptor) }
        var info = stat()
        guard fstat(logDescriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_uid == getuid(),
            info.st_nlink == 1
        else {
            throw Failure(
                description: "\(log) is not a plain file of yours (another user's, a device or a hard link?): "
                    + "remove it (rm \(log)) and run this again"
            )
        }
        fchmod(logDescriptor, 0o600)
        // Blocking again (O_NONBLOCK kept a planted FIFO from hanging the open).
        _ = fcntl(logDescriptor, F_SETFL, O_APPEND)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, logDescriptor, 1)
        posix_spawn_file_actions_adddup2(&actions, logDescriptor, 2)
        // Nothing else of ours: a pipe the caller reads to its end must not stay open in the agent.
        // (glibc's addclosefrom_np is not visible to Swift; the open descriptors are listed instead.)
        let inherited = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).compactMap {
            Int32($0)
        }
        for descriptor in inherited
        where descriptor > 2 && descriptor != logDescriptor && fcntl(descriptor, F_GETFD) != -1 {
            posix_spawn_file_actions_addclose(&actions, descriptor)
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // POSIX_SPAWN_SETSID (glibc 2.26+; not imported into Swift as a constant), and no signal
        // blocked or ignored because the calling thread had it so (Swift's threads block most):
        // the agent must see SIGTERM, SIGINT and SIGHUP (POSIX_SPAWN_SETSIGMASK 0x08,
        // POSIX_SPAWN_SETSIGDEF 0x04).
        posix_spawnattr_setflags(&attributes, 0x80 | 0x08 | 0x04)
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for number in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&defaults, number) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
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
