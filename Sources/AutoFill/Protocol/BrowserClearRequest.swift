public import Foundation
public import _KeyhavenSupport

/// A message in the clear, before a session (docs/autofill-protocol.md §2.1, §2.2): `hello`, the
/// pairing (protocol 2, `"v": 2`) and `session.open`. Anything else is refused with `notPaired`:
/// a browser's connection reaches no other request before its session.
public enum BrowserClearRequest: Sendable, Hashable, Codable {
    case hello(Hello)
    case pairBegin(PairBegin)
    case pairFinish(PairFinish)
    case sessionOpen(SessionOpen)

    public enum Kind: String, CaseIterable, Sendable {
        case hello
        case pairBegin = "pair.begin"
        case pairFinish = "pair.finish"
        case sessionOpen = "session.open"

        /// What a reply's `ok` is for this message (`reply:TYPE` in the schema).
        public var replyType: any BrowserProtocolObject.Type {
            switch self {
            case .hello: BrowserReply.Hello.self
            case .pairBegin: BrowserReply.PairingOffer.self
            case .pairFinish: BrowserReply.Paired.self
            case .sessionOpen: BrowserReply.SessionOpened.self
            }
        }
    }

    /// `hello`: the extension's version and browser, as it reports them (the agent names a pairing
    /// by the browser the native host reports, never by these).
    public struct Hello: Codable, Sendable, Hashable {
        public var extensionVersion: String?
        public var browser: String?
    }

    /// `pair.begin`: a new pairing request, or another try of `pairingRequest`.
    public struct PairBegin: Codable, Sendable, Hashable {
        /// Read first: an extension of protocol 1 is told to update before anything else.
        public var v = ProtocolVersion<PairingVersionRule>()
        @Base64URLBytes public var clientNonce: Data
        public var pairingRequest: String?
    }

    /// `pair.finish`: the extension's CPace share and confirmation tag for the try under way.
    public struct PairFinish: Codable, Sendable, Hashable {
        public var v = ProtocolVersion<PairingVersionRule>()
        public var pairingRequest: String
        @Base64URLBytes public var clientShare: Data
        @Base64URLBytes public var clientConfirm: Data
    }

    /// `session.open`: a session of the pairing `pairingId`.
    public struct SessionOpen: Codable, Sendable, Hashable {
        public var pairingId: String
        @Base64URLBytes public var clientNonce: Data
    }

    public var kind: Kind {
        switch self {
        case .hello: .hello
        case .pairBegin: .pairBegin
        case .pairFinish: .pairFinish
        case .sessionOpen: .sessionOpen
        }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: BrowserRequest.TypeKey.self)
        guard let kind = (try? container.decodeIfPresent(String.self, forKey: .type)).flatMap(Kind.init(rawValue:))
        else {
            throw AutoFillError(.notPaired, "Open a session first (pair this browser with Keyhaven).")
        }
        switch kind {
        case .hello: self = .hello(try Hello(from: decoder))
        case .pairBegin: self = .pairBegin(try PairBegin(from: decoder))
        case .pairFinish: self = .pairFinish(try PairFinish(from: decoder))
        case .sessionOpen: self = .sessionOpen(try SessionOpen(from: decoder))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: BrowserRequest.TypeKey.self)
        try container.encode(kind.rawValue, forKey: .type)
        switch self {
        case .hello(let request): try request.encode(to: encoder)
        case .pairBegin(let request): try request.encode(to: encoder)
        case .pairFinish(let request): try request.encode(to: encoder)
        case .sessionOpen(let request): try request.encode(to: encoder)
        }
    }
}

/// A message in the clear, read once: its `id` and `v` (echoed in the reply: 2 for protocol 2's
/// pairing, else 1) and its request, or why it could not be read.
public struct BrowserClearMessage: Sendable, Decodable {
    public var id: Int?
    public var version: Int
    public var request: Result<BrowserClearRequest, AutoFillError>

    enum Keys: String, CodingKey { case id, v }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        id = try? container.decodeIfPresent(Int.self, forKey: .id)
        version = (try? container.decodeIfPresent(Int.self, forKey: .v)) == 2 ? 2 : 1
        do {
            request = .success(try BrowserClearRequest(from: decoder))
        } catch {
            request = .failure(AutoFillError(decoding: error))
        }
    }

    /// The message in `frame`; nil when it is not a JSON object (the connection ends).
    public static func read(_ frame: Data) -> BrowserClearMessage? {
        try? JSONDecoder().decode(Self.self, from: frame)
    }
}

/// The native host's first frame on the agent's socket (`keyhaven browser-host`): who the browser
/// says is calling (its command line), which the agent binds the pairing to.
public struct BrowserHostHello: Codable, Sendable, Hashable {
    public static let type = "host.hello"
    public var caller: String
    public var browser: String

    enum Keys: String, CodingKey { case v, type, caller, browser }

    public init(caller: String, browser: String) { (self.caller, self.browser) = (caller, browser) }

    /// Reads `v` first: a host of another protocol version is refused (``HostVersionRule``).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        _ = try container.decode(ProtocolVersion<HostVersionRule>.self, forKey: .v)
        caller = (try? container.decodeIfPresent(String.self, forKey: .caller)) ?? ""
        browser = (try? container.decodeIfPresent(String.self, forKey: .browser)) ?? ""
    }

    /// `{"v": 1, "type": "host.hello", "caller": …, "browser": …}`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(ProtocolVersion<HostVersionRule>(), forKey: .v)
        try container.encode(Self.type, forKey: .type)
        try container.encode(caller, forKey: .caller)
        try container.encode(browser, forKey: .browser)
    }

    /// The frame the host sends.
    public func encoded() -> Data { (try? JSONEncoder().encode(self)) ?? Data() }
}

/// The native host's `host.hello` is version 1: the host (`keyhaven browser-host`) and the agent are
/// one Keyhaven, and a host of another version is refused before the browser's messages are relayed.
public enum HostVersionRule: ProtocolVersionRule {
    public static func refusal(_ version: Int) -> String {
        "Keyhaven's browser host speaks protocol version \(version) and its agent version 1: the browser "
            + "runs another Keyhaven's `keyhaven browser-host` than the agent's. Install the browser host of this "
            + "Keyhaven (`keyhaven browser install`) or restart the agent after updating."
    }
}
