public import Foundation
public import _KeyhavenSupport

/// What the agent pushes on an open session without being asked (docs/autofill-protocol.md §2.4,
/// "Events"): sealed like a reply, `{"v": 1, "event": "…", …members}` and no `id`. Every event the
/// agent sends is one of these cases, written by ``encode(to:)`` (the only place an event becomes
/// JSON), and `Extension/protocol.schema.json` describes each shape (``Shape``; `#/$defs/event`).
public enum BrowserEvent: Sendable, Hashable, Codable {
    /// `state`: the agent locked or unlocked.
    case state(State)
    /// `identities.changed` after a save: the identities saved and the records removed since the
    /// previous revision.
    case identitiesChanged(IdentitiesChanged)
    /// `identities.changed` with `replaced: true`: everything may have changed (an unlock, a lock, a
    /// command the agent ran, another process's change): forget what was learned.
    case identitiesReplaced(IdentitiesReplaced)

    /// `state`'s members.
    public struct State: Codable, Sendable, Hashable {
        public var state: BrowserReply.LockState

        public init(state: BrowserReply.LockState) { self.state = state }
    }

    /// An incremental `identities.changed`'s members: its identities carry no `match` (a match
    /// belongs to a query).
    public struct IdentitiesChanged: Codable, Sendable, Hashable {
        public var revision: Int
        public var saved: [CredentialIdentity]
        /// Record identifiers.
        public var removed: [String]

        public init(revision: Int, saved: [CredentialIdentity], removed: [String]) {
            (self.revision, self.saved, self.removed) = (revision, saved, removed)
        }
    }

    /// A replacing `identities.changed`'s members.
    public struct IdentitiesReplaced: Codable, Sendable, Hashable {
        public var revision: Int
        public var replaced = AlwaysTrue()

        public init(revision: Int) { self.revision = revision }
    }

    /// The event shapes: each one's `event` on the wire and its name in the schema (`event:NAME`).
    public enum Shape: String, CaseIterable, Sendable {
        case state
        case identitiesChanged = "identities.changed"
        case identitiesReplaced = "identities.changed+replaced"

        /// The `event` member.
        public var event: String {
            switch self {
            case .state: "state"
            case .identitiesChanged, .identitiesReplaced: "identities.changed"
            }
        }
    }

    public var shape: Shape {
        switch self {
        case .state: .state
        case .identitiesChanged: .identitiesChanged
        case .identitiesReplaced: .identitiesReplaced
        }
    }

    enum Keys: String, CodingKey { case v, event, replaced }

    /// Reads `event` (and `replaced`, which tells the two `identities.changed` apart), then that
    /// shape's members.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        let event = try container.decode(String.self, forKey: .event)
        let shape: Shape
        switch event {
        case Shape.state.event: shape = .state
        case Shape.identitiesChanged.event:
            shape = container.contains(.replaced) ? .identitiesReplaced : .identitiesChanged
        default: throw AutoFillError(.badRequest, "Unknown event \(event).")
        }
        self = try Self(shape, from: decoder)
    }

    /// The event of `shape` in `decoder` (the schema describes each shape through this).
    init(_ shape: Shape, from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        _ = try container.decode(ProtocolVersion<SealedVersionRule>.self, forKey: .v)
        let event = try container.decode(String.self, forKey: .event)
        guard event == shape.event else { throw AutoFillError(.badRequest, "event must be \(shape.event).") }
        switch shape {
        case .state: self = .state(try State(from: decoder))
        case .identitiesChanged: self = .identitiesChanged(try IdentitiesChanged(from: decoder))
        case .identitiesReplaced: self = .identitiesReplaced(try IdentitiesReplaced(from: decoder))
        }
    }

    /// `{"v": 1, "event": …, …members}`, one flat object.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(ProtocolVersion<SealedVersionRule>(), forKey: .v)
        try container.encode(shape.event, forKey: .event)
        switch self {
        case .state(let members): try members.encode(to: encoder)
        case .identitiesChanged(let members): try members.encode(to: encoder)
        case .identitiesReplaced(let members): try members.encode(to: encoder)
        }
    }

    /// The plaintext to seal.
    public func encoded() -> Data {
        // Strings, integers and fixed values only: encoding cannot fail.
        (try? JSONEncoder().encode(self)) ?? Data("{}".utf8)
    }
}

/// A member that is always `true` (`replaced`); anything else is refused.
public struct AlwaysTrue: BrowserProtocolValue, Hashable {
    public init() {}

    public init(from decoder: any Decoder) throws {
        guard try decoder.singleValueContainer().decode(Bool.self) else {
            throw AutoFillError(.badRequest, "\(BrowserProtocolSchema.name(decoder.codingPath)) must be true.")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(true)
    }

    public static var jsonSchema: JSONValue { ["const": true] }
    public static var example: AlwaysTrue { AlwaysTrue() }
}
