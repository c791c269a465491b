public import AutoFill
public import Foundation
public import KeyhavenSync
public import _KeyhavenSupport

/// What the agent answers an ``AgentCommand`` in a reply's `ok`, one type per command:
///
/// | command | `ok` |
/// |---|---|
/// | `agent.status` | ``Status`` |
/// | `agent.unlock`, `agent.lock`, `agent.stop` | ``State`` |
/// | `agent.pairCode` | ``PairingCode`` |
/// | `agent.pairings` | `[`` Pairing ``]` |
/// | `agent.revokePairing` | ``Revoked`` |
/// | `agent.sites` | `[String]` |
/// | `agent.ui` | ``WebAppLaunch`` |
///
/// The server encodes them and the CLI decodes them (``AgentResponse``), each through the
/// ``AgentCall`` that asked, so a member renamed on one side does not compile on the other.
public enum AgentReply {
    /// `agent.status`: the session's state (``AutoFillAgent/Status``) and the agent's process.
    public struct Status: Codable, Sendable, Hashable {
        public var session: AutoFillAgent.Status
        /// The Keyhaven version the agent runs.
        public var agentVersion: String
        public var socket: String
        public var pid: Int
        /// The background sync's state (absent from an agent without it).
        public var sync: BackgroundSync.State?

        public init(session: AutoFillAgent.Status, agentVersion: String, socket: String, pid: Int) {
            (self.session, self.agentVersion, self.socket, self.pid) = (session, agentVersion, socket, pid)
        }

        enum CodingKeys: String, CodingKey { case agentVersion, socket, pid, sync }

        /// One flat object: the session's members and the process's.
        public init(from decoder: any Decoder) throws {
            session = try AutoFillAgent.Status(from: decoder)
            let container = try decoder.container(keyedBy: CodingKeys.self)
            agentVersion = try container.decode(String.self, forKey: .agentVersion)
            socket = try container.decode(String.self, forKey: .socket)
            pid = try container.decode(Int.self, forKey: .pid)
            sync = try container.decodeIfPresent(BackgroundSync.State.self, forKey: .sync)
        }

        public func encode(to encoder: any Encoder) throws {
            try session.encode(to: encoder)
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(agentVersion, forKey: .agentVersion)
            try container.encode(socket, forKey: .socket)
            try container.encode(pid, forKey: .pid)
            try container.encodeIfPresent(sync, forKey: .sync)
        }
    }

    /// `agent.unlock`, `agent.lock` and `agent.stop`: the state the agent is in after it.
    public struct State: Codable, Sendable, Hashable {
        public enum Value: String, Codable, Sendable, Hashable {
            case locked, unlocked, stopped
        }
        public var state: Value

        public init(_ state: Value) { self.state = state }
    }

    /// `agent.pairCode`: the code to type into the extension and the browser that asked.
    public struct PairingCode: Codable, Sendable, Hashable {
        public var code: String
        public var clientName: String

        public init(code: String, clientName: String) { (self.code, self.clientName) = (code, clientName) }
    }

    /// One of `agent.pairings`: a paired browser (never its key).
    public struct Pairing: Codable, Sendable, Hashable {
        public var id: String
        public var name: String
        /// The extension origin or id the browser host reported.
        public var caller: String
        public var browser: String
        /// When it was paired, ISO 8601 (`2026-11-27T21:00:00Z`).
        public var created: String

        public init(id: String, name: String, caller: String, browser: String, created: String) {
            (self.id, self.name, self.caller, self.browser, self.created) = (id, name, caller, browser, created)
        }

        /// What the CLI may see of `pairing`.
        public init(_ pairing: AutoFillAgent.Pairing) {
            self.init(
                id: pairing.id,
                name: pairing.name,
                caller: pairing.caller,
                browser: pairing.browser,
                created: ISO8601DateFormatter().string(from: pairing.created)
            )
        }
    }

    /// `agent.revokePairing`: the pairing revoked.
    public struct Revoked: Codable, Sendable, Hashable {
        public var revoked: String

        public init(revoked: String) { self.revoked = revoked }
    }

    /// `agent.ui`: a launch of the web app (`keyhaven ui`).
    public struct WebAppLaunch: Codable, Sendable, Hashable {
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
}

extension AgentCommand.Kind {
    /// The type of the `ok` this command is answered with (the server checks its answers against
    /// it in debug builds; ``AgentCall`` ties each command to it for the client).
    public var replyType: any (Codable & Sendable).Type {
        switch self {
        case .status: AgentReply.Status.self
        case .unlock, .lock, .stop: AgentReply.State.self
        case .pairCode: AgentReply.PairingCode.self
        case .pairings: [AgentReply.Pairing].self
        case .revokePairing: AgentReply.Revoked.self
        case .sites: [String].self
        case .ui: AgentReply.WebAppLaunch.self
        }
    }
}

/// An ``AgentCommand`` with the type it is answered with: the CLI asks `AgentClient.request(
/// connection, .status)` and gets an ``AgentReply/Status``, never untyped JSON.
public struct AgentCall<Reply: Codable & Sendable>: Sendable {
    public let command: AgentCommand

    init(_ command: AgentCommand) { self.command = command }
}

extension AgentCall where Reply == AgentReply.Status {
    public static var status: Self { Self(.status) }
}

extension AgentCall where Reply == AgentReply.State {
    public static func unlock(masterPassword: String) -> Self { Self(.unlock(masterPassword: masterPassword)) }
    public static var lock: Self { Self(.lock) }
    public static var stop: Self { Self(.stop) }
}

extension AgentCall where Reply == AgentReply.PairingCode {
    public static func pairCode(timeoutSeconds: Double?) -> Self { Self(.pairCode(timeoutSeconds: timeoutSeconds)) }
}

extension AgentCall where Reply == [AgentReply.Pairing] {
    public static var pairings: Self { Self(.pairings) }
}

extension AgentCall where Reply == AgentReply.Revoked {
    public static func revokePairing(pairingId: String) -> Self { Self(.revokePairing(pairingId: pairingId)) }
}

extension AgentCall where Reply == [String] {
    public static var sites: Self { Self(.sites) }
}

extension AgentCall where Reply == AgentReply.WebAppLaunch {
    public static func ui(port: Int?, launchFile: Bool?) -> Self { Self(.ui(port: port, launchFile: launchFile)) }
}

/// A reply to an ``AgentCommand``: `{"v": 1, "id": N, "ok": REPLY}`, or `{"v": 1, "id": N,
/// "error": {"code", "localizedFailureReason"}}` (the browser protocol's reply shape; the `id` is
/// the request's, `null` when it had none). The agent writes it (``encode(id:_:)``) and the CLI
/// reads it (``decode(_:as:)``) into the type the command is answered with, or a typed error.
public enum AgentResponse {
    struct Written: Encodable {
        var v = ProtocolVersion<AgentCommandVersionRule>()
        var id: JSONValue
        var ok: (any Encodable & Sendable)?
        var error: BrowserReply.Failure?

        enum CodingKeys: String, CodingKey { case v, id, ok, error }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(v, forKey: .v)
            try container.encode(id, forKey: .id)
            if let ok { try container.encode(ok, forKey: .ok) }
            try container.encodeIfPresent(error, forKey: .error)
        }
    }

    struct Read<Reply: Decodable>: Decodable {
        var ok: Reply?
        var error: BrowserReply.Failure?
    }

    struct Version: Decodable {
        var v: Int?
    }

    /// The reply to request `id` (keys sorted, slashes unescaped). A reply that cannot be written
    /// (it cannot happen: every reply type encodes) becomes a `failed` error.
    public static func encode(id: JSONValue, _ answer: Result<any Codable & Sendable, AutoFillError>) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var reply = Written(id: id)
        switch answer {
        case .success(let ok): reply.ok = ok
        case .failure(let error): reply.error = BrowserReply.Failure(error)
        }
        if let data = try? encoder.encode(reply) { return data }
        reply.ok = nil
        reply.error = BrowserReply.Failure(AutoFillError(.failed, "The answer could not be written."))
        return (try? encoder.encode(reply)) ?? Data()
    }

    /// The answer in `frame`: what the command is answered with, the agent's refusal (its code
    /// and reason, as sent), or why the frame is not an answer this Keyhaven can read
    /// (``AutoFillError/Code/unsupportedVersion``: another protocol version;
    /// ``AutoFillError/Code/badReply``: not JSON, or not the shape of `Reply`). The error never
    /// repeats what the frame holds.
    public static func decode<Reply>(_ frame: Data, as call: AgentCall<Reply>) -> Result<Reply, AutoFillError> {
        let decoder = JSONDecoder()
        guard let version = try? decoder.decode(Version.self, from: frame) else {
            let why =
                (try? JSONValue.parse(frame))?.object == nil ? "is not a JSON object" : "has a v that is not an integer"
            return .failure(AutoFillError(.badReply, "The agent's answer \(why)." + sameKeyhaven))
        }
        guard let v = version.v else {
            return .failure(AutoFillError(.badReply, "The agent's answer has no protocol version." + sameKeyhaven))
        }
        guard v == AgentCommandVersionRule.required else {
            return .failure(
                AutoFillError(
                    .unsupportedVersion,
                    "The agent answered in its protocol version \(v) and this Keyhaven speaks version "
                        + "\(AgentCommandVersionRule.required)." + sameKeyhaven
                )
            )
        }
        let read: Read<Reply>
        do {
            read = try decoder.decode(Read<Reply>.self, from: frame)
        } catch {
            let why = AutoFillError(decoding: error).message
            return .failure(
                AutoFillError(
                    .badReply,
                    "The agent's answer to \(call.command.kind.type) could not be read: \(why)" + sameKeyhaven
                )
            )
        }
        if let error = read.error {
            return .failure(AutoFillError(AutoFillError.Code(error.code), error.localizedFailureReason))
        }
        guard let ok = read.ok else {
            return .failure(
                AutoFillError(
                    .badReply,
                    "The agent's answer to \(call.command.kind.type) has neither ok nor error." + sameKeyhaven
                )
            )
        }
        return .success(ok)
    }

    /// What an answer this Keyhaven cannot read asks the person to do.
    static let sameKeyhaven =
        " The CLI and the agent must be the same Keyhaven: restart the agent (`keyhaven agent stop`) and try again."
}

extension AutoFillError.Code {
    /// The CLI's own reading of an agent's answer, never sent: the answer is of another protocol version.
    public static var unsupportedVersion: Self { Self("unsupportedVersion") }
    /// The CLI's own reading of an agent's answer, never sent: the answer is not JSON or not the
    /// shape the command is answered with.
    public static var badReply: Self { Self("badReply") }
}
