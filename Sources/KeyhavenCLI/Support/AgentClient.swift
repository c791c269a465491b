import AutoFill
import Foundation
import KeyhavenAgent
import Vault
import _KeyhavenSupport

/// The CLI's side of `keyhaven agent`: finds its socket, sends ``AgentCommand``s, and reaches an
/// unlocked agent's session for the vault commands (``store(for:)``) instead of opening the vault.
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

    /// Sends one command and returns what it is answered with (``AgentReply``), turning a refusal
    /// into a failure (exit 2 for a wrong password or a locked agent, as for the vault) and an
    /// answer it cannot read (another protocol version, another shape) into one that says so.
    static func request<Reply>(_ connection: FrameConnection, _ call: AgentCall<Reply>) throws -> Reply {
        let frame: Data
        do {
            try connection.send(call.command.frame(id: 1))
            guard let received = try connection.receive() else {
                throw Output.failure("the agent closed the connection")
            }
            frame = received
        } catch let failure as CommandFailure {
            throw failure
        } catch {
            throw Output.failure("the agent did not answer: \(error)")
        }
        switch AgentResponse.decode(frame, as: call) {
        case .success(let reply):
            return reply
        case .failure(let error):
            let reason = error.message.hasSuffix(".") ? String(error.message.dropLast()) : error.message
            let exit: Int32 = [.wrongPassword, .locked].contains(error.code) ? 2 : 1
            throw Output.failure(reason, exitCode: exit)
        }
    }

    /// The running agent's unlocked session for the vault at `vaultURL`, reached with typed
    /// requests; nil to open the vault here: no agent runs, it is locked or holds another vault,
    /// or `KEYHAVEN_NO_AGENT=1`, or the command runs in-process (``Keyhaven/run(_:io:)``).
    ///
    /// - Throws: a failure when the agent's socket is not the person's own (nothing was sent):
    ///   the command does not quietly open the vault here instead, so the person learns of it.
    static func store(for vaultURL: URL) throws -> AgentCredentialStore? {
        guard CommandIO.current.isProcess, CommandIO.current.environment["KEYHAVEN_NO_AGENT"] != "1" else {
            return nil
        }
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
            let status = try? request(connection, .status).session,
            status.state == .unlocked,
            URL(fileURLWithPath: status.vault).standardizedFileURL == vaultURL.standardizedFileURL
        else { return nil }
        return AgentCredentialStore(connection: connection)
    }
}
