public import Foundation
public import _KeyhavenSupport

/// A value a browser message carries, with the JSON Schema of it that ``BrowserProtocolSchema``
/// writes into `Extension/protocol.schema.json`, and an example the schema's probe decodes in its
/// place. Every member of a request is one of these: a request that reads anything else cannot be
/// described, and the schema test fails.
public protocol BrowserProtocolValue: Codable, Sendable {
    static var jsonSchema: JSONValue { get throws }
    static var example: Self { get throws }
}

/// An object of the protocol (a reply, a part of one): its schema and example are what
/// ``BrowserProtocolSchema`` reads when its probe decodes one.
public protocol BrowserProtocolObject: BrowserProtocolValue {}

extension BrowserProtocolObject {
    public static var jsonSchema: JSONValue { get throws { try BrowserProtocolSchema.describe(Self.self).schema } }
    public static var example: Self { get throws { try BrowserProtocolSchema.describe(Self.self).value } }
}

/// Any JSON (the WebAuthn response a passkey call answers with).
extension JSONValue: BrowserProtocolValue {
    public static var jsonSchema: JSONValue { [:] }
    public static var example: JSONValue { .null }
}

extension String: BrowserProtocolValue {
    public static var jsonSchema: JSONValue { ["type": "string"] }
    public static var example: String { "" }
}

extension Bool: BrowserProtocolValue {
    public static var jsonSchema: JSONValue { ["type": "boolean"] }
    public static var example: Bool { false }
}

extension Int: BrowserProtocolValue {
    public static var jsonSchema: JSONValue { ["type": "integer"] }
    public static var example: Int { 0 }
}

extension Double: BrowserProtocolValue {
    public static var jsonSchema: JSONValue { ["type": "number"] }
    public static var example: Double { 0 }
}

extension Array: BrowserProtocolValue where Element: BrowserProtocolValue {
    public static var jsonSchema: JSONValue { get throws { ["type": "array", "items": try Element.jsonSchema] } }
    public static var example: [Element] { [] }
}

/// One of a fixed set of strings (`kind`: `create` or `get`); another is refused with
/// `badRequest` naming the member and the strings it may be.
public protocol BrowserProtocolEnum: BrowserProtocolValue, CaseIterable, RawRepresentable, Hashable
where RawValue == String {}

extension BrowserProtocolEnum {
    public static var jsonSchema: JSONValue {
        ["type": "string", "enum": .array(allCases.map { .string($0.rawValue) })]
    }
    public static var example: Self { allCases.first! }

    /// The case a string names, or `badRequest` (call it from `init(from:)`).
    public static func decodeCase(from decoder: any Decoder) throws -> Self {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let value = Self(rawValue: text) else {
            throw AutoFillError(
                .badRequest,
                "\(BrowserProtocolSchema.name(decoder.codingPath)) must be one of "
                    + allCases.map(\.rawValue).joined(separator: ", ") + "."
            )
        }
        return value
    }
}

/// What a member's value must be beyond its JSON type, with its schema and an example.
public protocol MemberRule: Sendable {
    associatedtype Value: Codable & Sendable & Hashable
    static var jsonSchema: JSONValue { get }
    static var example: Value { get }
    /// Why `value` will not do (`is missing.`), or nil.
    static func problem(with value: Value) -> String?
}

/// A member whose value `Rule` checks as it is decoded: one that fails is refused with `badRequest`.
@propertyWrapper
public struct Checked<Rule: MemberRule>: BrowserProtocolValue, Hashable {
    public var wrappedValue: Rule.Value

    public init(wrappedValue: Rule.Value) { self.wrappedValue = wrappedValue }

    public init(from decoder: any Decoder) throws {
        wrappedValue = try decoder.singleValueContainer().decode(Rule.Value.self)
        if let problem = Rule.problem(with: wrappedValue) {
            throw AutoFillError(.badRequest, "\(BrowserProtocolSchema.name(decoder.codingPath)) \(problem)")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(wrappedValue)
    }

    public static var jsonSchema: JSONValue { Rule.jsonSchema }
    public static var example: Checked { Checked(wrappedValue: Rule.example) }
}

/// A string that must not be empty (a URL, a record identifier, a password): an empty one is
/// missing, as a member that is absent.
public typealias NonEmpty = Checked<NonEmptyRule>

public enum NonEmptyRule: MemberRule {
    public static var jsonSchema: JSONValue { ["type": "string", "minLength": 1] }
    public static var example: String { "x" }
    public static func problem(with value: String) -> String? { value.isEmpty ? "is missing." : nil }
}

/// A page's WebAuthn options (`PublicKeyCredentialCreationOptionsJSON` or `…RequestOptionsJSON`),
/// passed on as the page gave them: the authenticator reads them (Passkeys' `CreationRequest`).
public typealias JSONObject = Checked<JSONObjectRule>

public enum JSONObjectRule: MemberRule {
    public static var jsonSchema: JSONValue { ["type": "object"] }
    public static var example: JSONValue { [:] }
    public static func problem(with value: JSONValue) -> String? { value.object == nil ? "must be an object." : nil }
}

/// Bytes as unpadded base64url (nonces, CPace shares and tags).
@propertyWrapper
public struct Base64URLBytes: BrowserProtocolValue, Hashable {
    public var wrappedValue: Data

    public init(wrappedValue: Data) { self.wrappedValue = wrappedValue }

    public init(from decoder: any Decoder) throws {
        let text = try? decoder.singleValueContainer().decode(String.self)
        guard let text, let bytes = Base64URL.decode(text) else {
            throw AutoFillError(
                .badRequest,
                "\(BrowserProtocolSchema.name(decoder.codingPath)) is missing or not base64url."
            )
        }
        wrappedValue = Data(bytes)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(Base64URL.encode(wrappedValue))
    }

    public static var jsonSchema: JSONValue { ["type": "string", "pattern": "^[A-Za-z0-9_-]*$"] }
    public static var example: Base64URLBytes { Base64URLBytes(wrappedValue: Data()) }
}

/// Which version a message must carry in `v`, and what a sender of another is told.
public protocol ProtocolVersionRule: Sendable {
    static var required: Int { get }
    static func refusal(_ version: Int) -> String
}

extension ProtocolVersionRule {
    /// Version 1 unless the rule says otherwise.
    public static var required: Int { 1 }
}

/// `v`: the one version a message of this kind may carry; another is refused with `badRequest`.
public struct ProtocolVersion<Rule: ProtocolVersionRule>: BrowserProtocolValue, Hashable {
    public init() {}

    public init(from decoder: any Decoder) throws {
        let version = try decoder.singleValueContainer().decode(Int.self)
        guard version == Rule.required else { throw AutoFillError(.badRequest, Rule.refusal(version)) }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(Rule.required)
    }

    public static var jsonSchema: JSONValue { ["const": .number(Double(Rule.required))] }
    public static var example: ProtocolVersion { ProtocolVersion() }
}

/// Sealed requests are version 1.
public enum SealedVersionRule: ProtocolVersionRule {
    public static func refusal(_ version: Int) -> String {
        "This request is of protocol version \(version) and Keyhaven's agent speaks version 1: update Keyhaven "
            + "and its extension together (`keyhaven browser extension --output DIR`)."
    }
}

/// Pairing is protocol 2 (CPace; docs/autofill-protocol.md §2.2). An extension from before pairs
/// with an X25519 key and an HMAC of the code, which a relay could test offline: it is told to
/// update rather than answered.
public enum PairingVersionRule: ProtocolVersionRule {
    public static var required: Int { 2 }
    public static func refusal(_ version: Int) -> String {
        "This Keyhaven extension is older than Keyhaven's agent: it pairs with protocol \(version), and the agent "
            + "pairs with protocol 2 only. Update the extension (`keyhaven browser extension --output DIR`, then "
            + "reload it in the browser) and pair again."
    }
}

/// Two parts of one flat JSON object, each decoded from (and encoded into) the same members: the
/// caller of a passkey call and what one kind of call adds.
public struct Merged<First: Codable & Sendable & Hashable, Second: Codable & Sendable & Hashable>: Codable,
    Sendable, Hashable
{
    public var first: First
    public var second: Second

    public init(_ first: First, _ second: Second) { (self.first, self.second) = (first, second) }

    public init(from decoder: any Decoder) throws {
        first = try First(from: decoder)
        second = try Second(from: decoder)
    }

    public func encode(to encoder: any Encoder) throws {
        try first.encode(to: encoder)
        try second.encode(to: encoder)
    }
}

extension AutoFillError {
    /// Why a message could not be read, for its sender: the member and what is wrong with it.
    public init(decoding error: any Error) {
        if let error = error as? AutoFillError {
            self = error
            return
        }
        guard let error = error as? DecodingError else {
            self = AutoFillError(.badRequest, "The message could not be read.")
            return
        }
        switch error {
        case .keyNotFound(let key, let context):
            self = AutoFillError(.badRequest, "\(BrowserProtocolSchema.name(context.codingPath + [key])) is missing.")
        case .valueNotFound(_, let context):
            self = AutoFillError(.badRequest, "\(BrowserProtocolSchema.name(context.codingPath)) is missing.")
        case .typeMismatch(let type, let context) where context.codingPath.isEmpty:
            self = AutoFillError(.badRequest, "The message is not a JSON object (\(type) expected).")
        case .typeMismatch(let type, let context):
            let wanted =
                switch type {
                case is String.Type: "a string"
                case is Bool.Type: "true or false"
                case is Int.Type: "an integer"
                case is Double.Type: "a number"
                case is [Any].Type: "a list"
                default: "an object"
                }
            self = AutoFillError(.badRequest, "\(BrowserProtocolSchema.name(context.codingPath)) must be \(wanted).")
        case .dataCorrupted(let context) where context.codingPath.isEmpty:
            self = AutoFillError(.badRequest, "The message is not JSON.")
        case .dataCorrupted(let context):
            self = AutoFillError(.badRequest, "\(BrowserProtocolSchema.name(context.codingPath)) is not valid.")
        @unknown default:
            self = AutoFillError(.badRequest, "The message could not be read.")
        }
    }
}
