public import AutoFill
import Foundation
import Synchronization
public import Vault
public import _KeyhavenSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `keyhaven agent`: serves an ``AutoFillAgent`` on a Unix socket (0700 directory, 0600 socket,
/// peer uid checked), one thread per connection, and locks it when idle.
///
/// A connection is either a browser's (its first frame is the browser host's `host.hello`; then
/// the AutoFill protocol, sealed after `session.open`) or the CLI's (`agent.*` requests in the
/// clear: unlock, lock, status, pairing codes, pairings, and vault commands run with the unlocked
/// vault). Only processes of the agent's own user can connect at all.
public final class AgentServer: Sendable {
    /// Runs a `keyhaven` vault command in-process with the agent's unlocked vault:
    /// `(arguments, environment, standard input, vault) → (exit status, standard output, standard error)`.
    public typealias CommandRunner =
        @Sendable (AgentCommand, Vault) async -> (Int32, String, String)

    /// A command the CLI asked the agent to run (`agent.run`).
    public struct AgentCommand: Sendable {
        public var arguments: [String]
        public var environment: [String: String]
        public var standardInput: String
        /// The CLI's working directory (relative paths are resolved against it).
        public var workingDirectory: String?
    }

    /// What `agent.ui` answers (`keyhaven ui`).
    public struct WebAppLaunch: Sendable {
        /// The one-time launch URL, `http://127.0.0.1:PORT/launch?secret=…`.
        public var url: String
        /// The port the web app itself bound (the URL names it).
        public var port: Int
        /// The private redirect file that carries the URL to a browser, when one was asked for: a
        /// browser is given this path, never the URL, so the secret is in no process's argv.
        public var launchFile: String?

        public init(url: String, port: Int, launchFile: String?) {
            self.url = url
            self.port = port
            self.launchFile = launchFile
        }
    }

    /// Starts the web app if needed (on the port asked for, 0: any) and returns a new launch, with
    /// a launch file when `launchFile` (`keyhaven ui`). Called on a connection thread: it may block
    /// until the app listens.
    public typealias WebAppLauncher = @Sendable (_ port: Int, _ launchFile: Bool) throws -> WebAppLaunch

    public let agent: AutoFillAgent
    /// The socket's folder, checked before the agent listens (``AgentRuntimeDirectory``).
    public let runtimeDirectory: AgentRuntimeDirectory
    public var socketPath: String { runtimeDirectory.socketPath }
    let runCommand: CommandRunner?
    let launchWebApp: WebAppLauncher?
    let version: String
    /// The listening descriptor and the inode of the socket file it made.
    let listener = Mutex<(descriptor: Int32, inode: ino_t)>((-1, 0))
    let stopped = Mutex(false)

    public init(
        agent: AutoFillAgent,
        runtimeDirectory: AgentRuntimeDirectory,
        version: String,
        runCommand: CommandRunner?,
        launchWebApp: WebAppLauncher? = nil
    ) {
        self.agent = agent
        self.runtimeDirectory = runtimeDirectory
        self.version = version
        self.runCommand = runCommand
        self.launchWebApp = launchWebApp
    }

    /// An agent on a socket path chosen by its caller (``AgentRuntimeDirectory/Kind/chosen``).
    public convenience init(
        agent: AutoFillAgent,
        socketPath: String,
        version: String,
        runCommand: CommandRunner?,
        launchWebApp: WebAppLauncher? = nil
    ) {
        self.init(
            agent: agent,
            runtimeDirectory: AgentRuntimeDirectory(chosenSocket: socketPath),
            version: version,
            runCommand: runCommand,
            launchWebApp: launchWebApp
        )
    }

    /// Checks the socket's folder and binds the socket (throws when the folder is not the
    /// person's own or another agent answers there).
    public func bind() throws {
        let bound = try UnixSocket.listen(at: runtimeDirectory)
        listener.withLock { $0 = bound }
    }

    /// Accepts connections until ``stop()``; call from a thread of its own. Starts the idle timer.
    public func serve() {
        let timer = Thread { [self] in
            while !self.stopped.withLock({ $0 }) {
                Thread.sleep(forTimeInterval: 1)
                self.agent.tick()
            }
        }
        timer.start()
        let fd = listener.withLock { $0.descriptor }
        while !stopped.withLock({ $0 }) {
            let client = accept(fd, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                break
            }
            guard UnixSocket.peerUID(client) == getuid() else {
                close(client)
                continue
            }
            let connection = FrameConnection(socket: client)
            let thread = Thread { [self] in self.serve(connection) }
            thread.stackSize = 1 << 20
            thread.start()
        }
    }

    /// Stops accepting, locks the vault and removes the socket.
    public func stop() {
        guard
            !stopped.withLock({
                let was = $0
                $0 = true
                return was
            })
        else { return }
        // The socket goes first: once the listener closes, the process may end at any moment. Only
        // the socket this agent made is removed (not one a later agent put there).
        let (fd, inode) = listener.withLock { $0 }
        var info = stat()
        if fd >= 0, lstat(socketPath, &info) == 0, info.st_ino == inode, info.st_mode & S_IFMT == S_IFSOCK {
            unlink(socketPath)
        }
        agent.lock()
        if fd >= 0 {
            shutdown(fd, Int32(SHUT_RDWR))
            close(fd)
        }
    }

    // MARK: Connections

    func serve(_ connection: FrameConnection) {
        guard let first = try? connection.receive(), let message = try? JSONValue.parse(first) else { return }
        if message["type"]?.string == "host.hello" {
            BrowserConnection(server: self, connection: connection, hello: message).run()
        } else {
            var next: JSONValue? = message
            while let request = next {
                let reply = answerCLI(request)
                guard (try? connection.send(reply)) != nil else { return }
                guard let frame = try? connection.receive(), let parsed = try? JSONValue.parse(frame) else { return }
                next = parsed
            }
        }
    }

    /// One CLI request (`agent.*`), answered with `{ok}` or `{error}`.
    func answerCLI(_ request: JSONValue) -> JSONValue {
        let id = request["id"] ?? .null
        do {
            return ["v": 1, "id": id, "ok": try cliAnswer(request)]
        } catch let error as AutoFillError {
            return ["v": 1, "id": id, "error": error.json]
        } catch {
            return ["v": 1, "id": id, "error": AutoFillError(.failed, "\(error)").json]
        }
    }

    func cliAnswer(_ request: JSONValue) throws -> JSONValue {
        switch request["type"]?.string ?? "" {
        case "agent.status":
            var status = agent.status()
            if case .object(var members) = status {
                members["agentVersion"] = .string(version)
                members["socket"] = .string(socketPath)
                members["pid"] = .number(Double(getpid()))
                status = .object(members)
            }
            return status
        case "agent.unlock":
            guard let password = request["masterPassword"]?.string, !password.isEmpty else {
                throw AutoFillError(.badRequest, "masterPassword is missing.")
            }
            try agent.unlock(masterPassword: password)
            return ["state": "unlocked"]
        case "agent.lock":
            agent.lock()
            return ["state": "locked"]
        case "agent.stop":
            Thread { [self] in
                Thread.sleep(forTimeInterval: 0.1)
                stop()
            }.start()
            return ["state": "stopped"]
        case "agent.pairCode":
            _ = try agent.vault()
            let timeout = request["timeoutSeconds"]?.number ?? 120
            guard let (code, name) = agent.waitForPairingCode(timeout: timeout) else {
                throw AutoFillError(
                    .userCanceled,
                    "No browser asked to pair within \(Int(timeout)) seconds: click Pair in Keyhaven's browser extension."
                )
            }
            return ["code": .string(code), "clientName": .string(name)]
        case "agent.pairings":
            let formatter = ISO8601DateFormatter()
            return .array(
                try agent.pairings().map { pairing in
                    [
                        "id": .string(pairing.id), "name": .string(pairing.name), "caller": .string(pairing.caller),
                        "browser": .string(pairing.browser),
                        "created": .string(formatter.string(from: pairing.created)),
                    ]
                }
            )
        case "agent.revokePairing":
            guard let id = request["pairingId"]?.string else {
                throw AutoFillError(.badRequest, "pairingId is missing.")
            }
            try agent.revokePairing(id)
            return ["revoked": .string(id)]
        case "agent.sites":
            return .array(agent.sites().map { .string($0) })
        case "agent.run":
            return try run(request)
        case "agent.ui":
            guard let launchWebApp else { throw AutoFillError(.failed, "This agent does not serve the web app.") }
            let port = request["port"]?.integer ?? 0
            guard (0...65535).contains(port) else { throw AutoFillError(.badRequest, "port must be 0…65535.") }
            let launch: WebAppLaunch
            do {
                launch = try launchWebApp(port, request["launchFile"]?.bool ?? false)
            } catch {
                throw AutoFillError(.failed, "\(error)")
            }
            var answer: [String: JSONValue] = ["url": .string(launch.url), "port": .number(Double(launch.port))]
            if let file = launch.launchFile { answer["launchFile"] = .string(file) }
            return .object(answer)
        default:
            throw AutoFillError(.badRequest, "Unknown request type.")
        }
    }

    /// `agent.run`: a vault command with the unlocked vault, its output returned.
    func run(_ request: JSONValue) throws -> JSONValue {
        guard let runCommand else { throw AutoFillError(.failed, "This agent does not run commands.") }
        let vault = try agent.vault()
        let arguments = request["arguments"]?.array?.compactMap(\.string) ?? []
        var environment: [String: String] = [:]
        if case .object(let members)? = request["environment"] {
            for (key, value) in members { environment[key] = value.string }
        }
        let input = request["standardInput"]?.string ?? ""
        let result = Mutex<(Int32, String, String)?>(nil)
        let done = DispatchSemaphore(value: 0)
        // This is a connection thread of the agent's own: waiting here blocks no async work.
        Task {
            let command = AgentCommand(
                arguments: arguments,
                environment: environment,
                standardInput: input,
                workingDirectory: request["workingDirectory"]?.string
            )
            let outcome = await runCommand(command, vault)
            result.withLock { $0 = outcome }
            done.signal()
        }
        done.wait()
        let (status, output, errors) = result.withLock { $0 } ?? (1, "", "")
        // A command that may have changed the vault: identities are read again and browsers told.
        if request["changesVault"]?.bool == true { agent.vaultChanged() }
        return ["status": .number(Double(status)), "standardOutput": .string(output), "standardError": .string(errors)]
    }
}
