import AutoFill
import Foundation
import KeyhavenAgent
import Vault
import _KeyhavenSupport

/// The CLI's side of `keyhaven agent`: finds its socket, sends `agent.*` requests, and runs vault
/// commands through an unlocked agent instead of opening the vault itself.
enum AgentClient {
    /// Where the agent's socket is: `override` (`--socket`), `$KEYHAVEN_AGENT_SOCKET`,
    /// `$XDG_RUNTIME_DIR/keyhaven/agent.sock`, else `$XDG_STATE_HOME/keyhaven/run/agent.sock`
    /// (``AgentRuntimeDirectory``).
    static func location(_ override: String? = nil) -> AgentRuntimeDirectory {
        AgentRuntimeDirectory.locate(socket: override, environment: CommandIO.current.environment)
    }

    /// The socket's path (see ``location(_:)``).
    static func socketPath(_ override: String? = nil) -> String {
        location(override).socketPath
    }

    /// A connection to the running agent; nil when none runs. The socket's folder is checked
    /// first, then the socket and the peer's uid: every refusal happens before anything is sent.
    static func connect(_ socket: String? = nil) throws -> FrameConnection? {
        do {
            return try UnixSocket.connect(to: location(socket))
        } catch {
            throw Output.failure("refusing the agent socket \(socketPath(socket)): \(error)")
        }
    }

    /// The running agent, or a failure that says how to start one.
    static func require(_ socket: String? = nil) throws -> FrameConnection {
        guard let connection = try connect(socket) else {
            throw Output.failure(
                "no Keyhaven agent runs on \(socketPath(socket)): start it with `keyhaven agent` "
                    + "(or `keyhaven agent install-service` to have systemd start it)"
            )
        }
        return connection
    }

    /// Sends one request and returns its `ok`, turning an `error` into a failure (exit 2 for a
    /// wrong password or a locked agent, as for the vault).
    static func request(
        _ connection: FrameConnection,
        _ type: String,
        _ fields: [String: JSONValue] = [:]
    ) throws
        -> JSONValue
    {
        var message = fields
        message["v"] = 1
        message["id"] = 1
        message["type"] = .string(type)
        let reply: JSONValue
        do {
            try connection.send(JSONValue.object(message))
            guard let frame = try connection.receive() else {
                throw Output.failure("the agent closed the connection")
            }
            reply = try JSONValue.parse(frame)
        } catch let failure as CommandFailure {
            throw failure
        } catch {
            throw Output.failure("the agent did not answer: \(error)")
        }
        if let error = reply["error"] {
            let code = error["code"]?.string ?? "failed"
            let reason = error["localizedFailureReason"]?.string ?? "the agent refused"
            let exit: Int32 = ["wrongPassword", "locked"].contains(code) ? 2 : 1
            throw Output.failure(reason.hasSuffix(".") ? String(reason.dropLast()) : reason, exitCode: exit)
        }
        return reply["ok"] ?? .null
    }

    /// Vault commands an unlocked agent runs for the CLI (none of them prompts).
    static let forwarded: Set<String> = [
        "add", "list", "show", "copy", "otp", "search", "edit", "rm", "restore", "import", "export",
    ]
    /// Those of them that change the vault (the agent re-reads its identities after them).
    static let changing: Set<String> = ["add", "edit", "rm", "restore", "import"]

    /// Runs `arguments` in the agent when it is unlocked for the vault the command names and the
    /// command is one it runs; nil to run it here. Prints what the agent's run printed.
    ///
    /// - Throws: a failure when the agent's socket is not the person's own (nothing was sent):
    ///   the command does not quietly run here instead, so the person learns of it.
    static func forward(_ command: any ParsableCommandWithVault, arguments: [String]) throws -> Int32? {
        guard command.forwardable,
            CommandIO.current.isProcess,
            CommandIO.current.environment["KEYHAVEN_NO_AGENT"] != "1"
        else { return nil }
        let reached: FrameConnection?
        do {
            reached = try connect()
        } catch let failure as CommandFailure {
            throw Output.failure(
                failure.message + " (KEYHAVEN_NO_AGENT=1 runs the command without the agent)",
                exitCode: failure.exitCode
            )
        }
        guard let connection = reached,
            let status = try? request(connection, "agent.status"),
            status["state"]?.string == "unlocked",
            let path = status["vault"]?.string,
            URL(fileURLWithPath: path).standardizedFileURL == command.vaultFileURL.standardizedFileURL
        else { return nil }
        let keep = ["HOME", "PATH", "NO_COLOR", "TERM", "LANG", "LC_ALL", "DISPLAY", "WAYLAND_DISPLAY", "COLUMNS"]
        var environment: [String: JSONValue] = [:]
        for (key, value) in CommandIO.current.environment
        where keep.contains(key) || key.hasPrefix("XDG_") || key.hasPrefix("KEYHAVEN_") {
            environment[key] = .string(value)
        }
        environment["KEYHAVEN_PASSWORD"] = nil
        guard
            let result = try? request(
                connection,
                "agent.run",
                [
                    "arguments": .array(arguments.map { .string($0) }), "environment": .object(environment),
                    "changesVault": .bool(changing.contains(type(of: command).commandName)),
                    "workingDirectory": .string(FileManager.default.currentDirectoryPath),
                ]
            )
        else { return nil }
        FileHandle.standardOutput.write(Data((result["standardOutput"]?.string ?? "").utf8))
        FileHandle.standardError.write(Data((result["standardError"]?.string ?? "").utf8))
        return Int32(result["status"]?.integer ?? 1)
    }
}

/// A parsed vault command, as the forwarding sees it.
protocol ParsableCommandWithVault {
    static var commandName: String { get }
    var forwardable: Bool { get }
    var vaultFileURL: URL { get }
}

/// The unlocked vault of the agent running this command (`agent.run`), if any.
enum AgentVault {
    @TaskLocal static var current: Vault?
}
