import Foundation
public import _KeyhavenSupport

/// The JSON Schema of the browser protocol (`Extension/protocol.schema.json`), made from the Swift
/// types that read and write it: for each request type, the agent's own decoder
/// (``BrowserSealedMessage``, ``BrowserClearMessage``) runs against a probe that answers every
/// member with an example of its type and writes down what was read: the member, its
/// ``BrowserProtocolValue/jsonSchema``, and whether it was required (`decode`) or optional
/// (`decodeIfPresent`). A reply type (``BrowserReply``) is described the same way, by decoding
/// one. Nothing here lists members by hand, so the schema says what the agent reads and answers,
/// and the extension's messages are checked against it in `node`
/// (`Tests/browser/protocol_schema_test.mjs`).
///
/// The schema is stricter than the agent in one way: it allows no member the agent does not
/// read (`additionalProperties: false`), so a member renamed on one side is caught.
public enum BrowserProtocolSchema {
    /// The schema document: `$defs` holds one object schema per request type, and
    /// `#/$defs/sealedRequest` and `#/$defs/clearRequest` pick among them by `type`; `reply:TYPE` is
    /// the `ok` of its reply (``BrowserRequest/Kind/replyType``) and `error` a reply's error;
    /// `event:SHAPE` is one shape of the agent's events (``BrowserEvent/Shape``) and `#/$defs/event`
    /// picks among them.
    public static func document() throws -> JSONValue {
        var definitions: [String: JSONValue] = ["error": try BrowserReply.Failure.jsonSchema]
        let sealed = try add(
            BrowserRequest.Kind.allCases.map { ($0.rawValue, $0.replyType) },
            to: &definitions
        ) { decoder in try BrowserSealedMessage(from: decoder).request.get() }
        let clear = try add(
            BrowserClearRequest.Kind.allCases.map { ($0.rawValue, $0.replyType) },
            to: &definitions
        ) { decoder in try BrowserClearMessage(from: decoder).request.get() }
        definitions["sealedRequest"] = [
            "description": "A request inside a session: the plaintext of a sealed frame (§2.3, §2.4).",
            "oneOf": sealed,
        ]
        definitions["clearRequest"] = [
            "description": "A message in the clear, before the session (§2.1, §2.2).",
            "oneOf": clear,
        ]
        var events: [JSONValue] = []
        for shape in BrowserEvent.Shape.allCases {
            let name = "event:" + shape.rawValue
            definitions[name] = try object(fixed: ["event": .string(shape.event)]) { decoder in
                try BrowserEvent(shape, from: decoder)
            }
            events.append(["$ref": .string("#/$defs/\(name)")])
        }
        definitions["event"] = [
            "description": """
            What the agent pushes on an open session unasked: the plaintext of a sealed frame with \
            `event` and no `id` (§2.4, Events). An extension ignores an event it does not know.
            """,
            "oneOf": .array(events),
        ]
        return [
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Keyhaven AutoFill browser protocol: the extension's requests, the agent's replies and events",
            "description": """
            Generated from the Swift types the agent decodes and encodes (AutoFill's BrowserRequest, \
            BrowserClearRequest, BrowserReply and BrowserEvent; docs/autofill-protocol.md): do not edit. \
            Regenerate with scripts/generate-protocol-schema.sh; BrowserProtocolTests fails while this \
            file differs.
            """,
            "$defs": .object(definitions),
        ]
    }

    /// The schema text as committed: sorted keys, two-space indents, a final newline.
    public static func text() throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(try document()), as: UTF8.self) + "\n"
    }

    /// Each request type's schema and its reply's, into `definitions`: the `$ref`s to the requests.
    static func add(
        _ kinds: [(type: String, reply: any BrowserProtocolObject.Type)],
        to definitions: inout [String: JSONValue],
        _ decode: (any Decoder) throws -> some Any
    ) throws -> JSONValue {
        var references: [JSONValue] = []
        for (type, reply) in kinds {
            definitions[type] = try object(type: type, decode)
            definitions["reply:" + type] = try reply.jsonSchema
            references.append(["$ref": .string("#/$defs/\(type)")])
        }
        return .array(references)
    }

    /// One request type's object schema: what `decode` reads when the message's `type` is `type`.
    static func object(type: String, _ decode: (any Decoder) throws -> some Any) throws -> JSONValue {
        try object(fixed: ["type": .string(type)], decode)
    }

    /// The object schema of what `decode` reads when the members in `fixed` have those values.
    static func object(fixed: [String: JSONValue], _ decode: (any Decoder) throws -> some Any) throws -> JSONValue {
        let recorder = Recorder(fixed: fixed)
        _ = try decode(Probe(recorder: recorder))
        return recorder.schema
    }

    /// The object schema of `type` (what its `init(from:)` reads) and the example the probe made.
    public static func describe<T: Decodable>(_ type: T.Type) throws -> (schema: JSONValue, value: T) {
        let recorder = Recorder(fixed: [:])
        let value = try T(from: Probe(recorder: recorder))
        return (recorder.schema, value)
    }

    /// A member's name in messages about it: `kinds[1]`, `options`.
    static func name(_ path: [any CodingKey]) -> String {
        path.enumerated().map { index, key in
            if let number = key.intValue { return "[\(number)]" }
            return index == 0 ? key.stringValue : "." + key.stringValue
        }
        .joined()
    }

    /// What the probe saw.
    final class Recorder {
        struct Member {
            var schema: JSONValue
            var required: Bool
        }
        /// Members the probe answers with a fixed value (the `type` being described).
        let fixed: [String: JSONValue]
        var members: [String: Member] = [:]
        /// Members just asked about with `contains` (the way `decodeIfPresent` begins): the next
        /// read of each is optional.
        var optional: Set<String> = []

        init(fixed: [String: JSONValue]) { self.fixed = fixed }

        /// An object with the members read, and no other.
        var schema: JSONValue {
            var properties: [String: JSONValue] = [:]
            for (name, member) in members { properties[name] = member.schema }
            return [
                "type": "object",
                "properties": .object(properties),
                "required": .array(members.filter(\.value.required).keys.sorted().map { .string($0) }),
                "additionalProperties": false,
            ]
        }

        /// A member read as `schema`; a member read twice keeps its required reading.
        func record(_ name: String, _ schema: JSONValue) {
            let required = optional.remove(name) == nil
            if let known = members[name], known.required || !required {
                members[name]?.required = known.required || required
                return
            }
            members[name] = Member(schema: schema, required: required)
        }
    }

    struct ProbeError: Error, CustomStringConvertible {
        var description: String
    }

    /// A decoder that answers each member with an example of the type asked for.
    struct Probe: Decoder {
        let recorder: Recorder
        var codingPath: [any CodingKey] = []
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
            KeyedDecodingContainer(Members<Key>(recorder: recorder, codingPath: codingPath))
        }

        func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
            throw ProbeError(description: "a message is an object: read a list as an array of BrowserProtocolValue")
        }

        func singleValueContainer() throws -> any SingleValueDecodingContainer {
            throw ProbeError(description: "a message is an object: read a single value as a BrowserProtocolValue")
        }
    }

    struct Members<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let recorder: Recorder
        var codingPath: [any CodingKey]
        var allKeys: [Key] { [] }

        func contains(_ key: Key) -> Bool {
            if recorder.fixed[key.stringValue] == nil { recorder.optional.insert(key.stringValue) }
            return true
        }

        func decodeNil(forKey key: Key) throws -> Bool { false }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try probe(type, key) }
        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try probe(type, key) }
        func decode(_ type: String.Type, forKey key: Key) throws -> String { try probe(type, key) }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try probe(type, key) }
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try probe(type, key) }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try probe(type, key) }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try probe(type, key) }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try probe(type, key) }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try probe(type, key) }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try probe(type, key) }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try probe(type, key) }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try probe(type, key) }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try probe(type, key) }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try probe(type, key) }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try probe(type, key) }

        /// Records the member and answers with an example of its type (the fixed value for `type`).
        private func probe<T: Decodable>(_ type: T.Type, _ key: Key) throws -> T {
            let name = key.stringValue
            if let fixed = recorder.fixed[name] {
                recorder.record(name, ["const": fixed])
                return try JSONDecoder().decode(T.self, from: fixed.encoded())
            }
            guard let value = T.self as? any BrowserProtocolValue.Type else {
                throw ProbeError(
                    description:
                        "\(name) is read as \(T.self), which has no JSON Schema: make it a BrowserProtocolValue"
                )
            }
            recorder.record(name, try value.jsonSchema)
            guard let example = try value.example as? T else {
                throw ProbeError(description: "\(T.self)'s example is not a \(T.self)")
            }
            return example
        }

        func nestedContainer<NestedKey: CodingKey>(
            keyedBy type: NestedKey.Type,
            forKey key: Key
        ) throws -> KeyedDecodingContainer<NestedKey> {
            throw ProbeError(description: "\(key.stringValue): nested objects are read as BrowserProtocolValue types")
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            throw ProbeError(description: "\(key.stringValue): lists are read as BrowserProtocolValue arrays")
        }

        func superDecoder() throws -> any Decoder { Probe(recorder: recorder, codingPath: codingPath) }

        func superDecoder(forKey key: Key) throws -> any Decoder {
            throw ProbeError(description: "\(key.stringValue): read members directly")
        }
    }
}
