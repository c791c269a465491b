public import AutoFill
public import Foundation
import KeyhavenApp
public import _KeyhavenSupport

/// A frame on the agent's socket, read once into what it is (docs/autofill-protocol.md §1, "Who
/// talks on the socket"). The first frame of a connection says who is calling:
///
/// - `{"v": 1, "type": "host.hello", …}`: the browser's native host (``BrowserHostHello``); the
///   AutoFill protocol follows (``BrowserClearRequest``, then sealed ``BrowserRequest``s);
/// - `{"type": "session", "v": 1, …}` or its parts header `session.parts`: a vault command's
///   typed ``SessionRequest`` (``SessionProtocol``, which checks its own version);
/// - `{"v": 1, "id": N, "type": "agent.…", …}`: one of the agent's own ``AgentCommand``s.
///
/// Every later frame of a CLI connection is read the same way. Each kind carries its protocol
/// version and a frame of another version is refused before anything else of it is read.
public enum AgentFrame: Sendable, Hashable {
    /// The native host's first frame, or why it is refused (another version: the connection ends).
    case browserHost(Result<BrowserHostHello, AutoFillError>)
    /// A ``SessionProtocol`` request: the session reads the whole frame.
    case session
    /// The header of a ``SessionProtocol`` message in parts.
    case sessionParts
    /// An `agent.*` request and its `id` (echoed), or why it cannot be served (answered, and the
    /// connection goes on).
    case command(id: JSONValue, Result<AgentCommand, AutoFillError>)

    enum Keys: String, CodingKey { case type, id }

    /// What `frame` is; nil when it is not a JSON object (the connection ends).
    public static func read(_ frame: Data) -> AgentFrame? {
        guard let message = try? JSONValue.parse(frame), message.object != nil else { return nil }
        let type = message["type"]?.string
        switch type {
        case BrowserHostHello.type:
            return .browserHost(
                Result { try JSONDecoder().decode(BrowserHostHello.self, from: frame) }.mapError(
                    AutoFillError.init(decoding:)
                )
            )
        case SessionProtocol.type: return .session
        case SessionProtocol.partsType: return .sessionParts
        default:
            let id = message["id"] ?? .null
            guard let type, type.hasPrefix(AgentCommand.prefix) else {
                return .command(id: id, .failure(AutoFillError(.badRequest, "Unknown request type.")))
            }
            return .command(
                id: id,
                Result { try JSONDecoder().decode(AgentCommand.self, from: frame) }.mapError(
                    AutoFillError.init(decoding:)
                )
            )
        }
    }
}

/// What the CLI asks of the agent itself (`keyhaven unlock`, `lock`, `agent status`, `agent stop`,
/// `browser pair`, `ui`…): `{"v": 1, "id": N, "type": "agent.…", …members}`, answered with `ok`
/// (the command's ``AgentReply`` type) or `error`, as the browser protocol's replies are
/// (``AgentResponse``). The CLI builds these (``AgentFrame/read(_:)`` reads them) and asks them
/// through ``AgentCall``, so a member renamed on one side does not compile.
public enum AgentCommand: Sendable, Hashable, Codable {
    /// The agent's state, vault, revision, idle lock, pid and socket.
    case status
    case unlock(masterPassword: String)
    case lock
    /// Stops the agent (after its answer).
    case stop
    /// Waits up to `timeoutSeconds` (120 when absent) for a browser's pairing request; its code.
    case pairCode(timeoutSeconds: Double?)
    case pairings
    case revokePairing(pairingId: String)
    /// The sites of the vault's credentials (the shell's completion of account names).
    case sites
    /// A launch of the web app on `port` (any when absent), with a launch file when `launchFile`.
    case ui(port: Int?, launchFile: Bool?)

    /// What every command's `type` starts with.
    public static let prefix = "agent."

    /// The commands; each one's `type` is `agent.` and its name.
    public enum Kind: String, CaseIterable, Sendable {
        case status, unlock, lock, stop, pairCode, pairings, revokePairing, sites, ui

        /// `agent.status`, …
        public var type: String { AgentCommand.prefix + rawValue }
    }

    public var kind: Kind {
        switch self {
        case .status: .status
        case .unlock: .unlock
        case .lock: .lock
        case .stop: .stop
        case .pairCode: .pairCode
        case .pairings: .pairings
        case .revokePairing: .revokePairing
        case .sites: .sites
        case .ui: .ui
        }
    }

    enum Keys: String, CodingKey { case v, type, masterPassword, timeoutSeconds, pairingId, port, launchFile }

    /// Reads `v` (1), `type`, then that command's members.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        _ = try container.decode(ProtocolVersion<AgentCommandVersionRule>.self, forKey: .v)
        let type = try container.decode(String.self, forKey: .type)
        guard type.hasPrefix(Self.prefix), let kind = Kind(rawValue: String(type.dropFirst(Self.prefix.count))) else {
            throw AutoFillError(.badRequest, "Unknown request type.")
        }
        switch kind {
        case .status: self = .status
        case .unlock:
            guard let password = try container.decodeIfPresent(String.self, forKey: .masterPassword), !password.isEmpty
            else { throw AutoFillError(.badRequest, "masterPassword is missing.") }
            self = .unlock(masterPassword: password)
        case .lock: self = .lock
        case .stop: self = .stop
        case .pairCode:
            self = .pairCode(timeoutSeconds: try container.decodeIfPresent(Double.self, forKey: .timeoutSeconds))
        case .pairings: self = .pairings
        case .revokePairing:
            guard let id = try container.decodeIfPresent(String.self, forKey: .pairingId) else {
                throw AutoFillError(.badRequest, "pairingId is missing.")
            }
            self = .revokePairing(pairingId: id)
        case .sites: self = .sites
        case .ui:
            let port = try container.decodeIfPresent(Int.self, forKey: .port)
            guard (0...65535).contains(port ?? 0) else { throw AutoFillError(.badRequest, "port must be 0…65535.") }
            self = .ui(port: port, launchFile: try container.decodeIfPresent(Bool.self, forKey: .launchFile))
        }
    }

    /// `v`, `type` and the command's members, in one object (the CLI adds `id`).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(ProtocolVersion<AgentCommandVersionRule>(), forKey: .v)
        try container.encode(kind.type, forKey: .type)
        switch self {
        case .status, .lock, .stop, .pairings, .sites: break
        case .unlock(let password): try container.encode(password, forKey: .masterPassword)
        case .pairCode(let timeout): try container.encodeIfPresent(timeout, forKey: .timeoutSeconds)
        case .revokePairing(let id): try container.encode(id, forKey: .pairingId)
        case .ui(let port, let launchFile):
            try container.encodeIfPresent(port, forKey: .port)
            try container.encodeIfPresent(launchFile, forKey: .launchFile)
        }
    }

    /// The frame to send: the command with `id`.
    public func frame(id: Int) -> JSONValue {
        guard case .object(var members) = JSONValue(encoding: self) else { return .null }
        members["id"] = .number(Double(id))
        return .object(members)
    }
}

/// `agent.*` commands are version 1: the CLI and the agent are one Keyhaven.
public enum AgentCommandVersionRule: ProtocolVersionRule {
    public static func refusal(_ version: Int) -> String {
        "This request is of the agent's protocol version \(version) and this agent speaks version 1: the CLI and "
            + "the agent must be the same Keyhaven (restart the agent after updating: `keyhaven agent stop`)."
    }
}
