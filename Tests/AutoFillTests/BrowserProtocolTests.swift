import Foundation
import KeyhavenTesting
import Testing
import _KeyhavenSupport

@testable import AutoFill

/// The browser protocol's typed messages: each request is decoded once into ``BrowserRequest``,
/// malformed ones get a `badRequest` naming the member, and `Extension/protocol.schema.json` is
/// what the Swift types generate (regenerate it with scripts/generate-protocol-schema.sh).
@Suite struct BrowserProtocolTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let schemaFile = root.appendingPathComponent("Extension/protocol.schema.json")

    func read(_ message: JSONValue) -> Result<BrowserRequest, AutoFillError> {
        BrowserSealedMessage.read(message.encoded()).request
    }

    func refusal(_ message: JSONValue) -> String? {
        guard case .failure(let error) = read(message) else { return nil }
        return "\(error.code.name): \(error.message)"
    }

    @Test func theCommittedSchemaIsTheOneTheSwiftTypesGenerate() throws {
        let generated = try BrowserProtocolSchema.text()
        if ProcessInfo.processInfo.environment["KEYHAVEN_WRITE_PROTOCOL_SCHEMA"] == "1" {
            try generated.write(to: Self.schemaFile, atomically: true, encoding: .utf8)
        }
        let committed = try String(contentsOf: Self.schemaFile, encoding: .utf8)
        #expect(
            committed == generated,
            "Extension/protocol.schema.json is stale: run scripts/generate-protocol-schema.sh and commit it"
        )
    }

    @Test func theSchemaDescribesWhatTheDecoderReads() throws {
        let schema = try BrowserProtocolSchema.document()
        let definitions = try #require(schema["$defs"]?.object)
        // Every request type, sealed and in the clear, and nothing else.
        let sealed = BrowserRequest.Kind.allCases.map(\.rawValue)
        let clear = BrowserClearRequest.Kind.allCases.map(\.rawValue)
        let types = sealed + clear
        let events = BrowserEvent.Shape.allCases.map { "event:" + $0.rawValue }
        #expect(
            Set(definitions.keys)
                == Set(
                    types + types.map { "reply:" + $0 } + events + ["sealedRequest", "clearRequest", "error", "event"]
                )
        )
        #expect(definitions["sealedRequest"]?["oneOf"]?.array?.count == 15)
        #expect(definitions["clearRequest"]?["oneOf"]?.array?.count == 4)

        let save = try #require(definitions["credential.save"])
        #expect(save["required"] == ["password", "type", "url"])
        #expect(save["additionalProperties"] == false)
        #expect(save["properties"]?["type"] == ["const": "credential.save"])
        #expect(save["properties"]?["url"] == ["type": "string", "minLength": 1])
        #expect(save["properties"]?["user"] == ["type": "string"])
        #expect(save["properties"]?["v"] == ["const": 1])
        #expect(save["properties"]?["id"] == ["type": "integer"])

        let query = try #require(definitions["identities.query"])
        #expect(
            query["properties"]?["kinds"] == [
                "type": "array", "items": ["type": "string", "enum": ["password", "oneTimeCode"]],
            ]
        )
        // The merged passkey members: the caller's and the call's own.
        let assert = try #require(definitions["passkey.assert"]?["properties"]?.object)
        #expect(
            Set(assert.keys) == [
                "type", "v", "id", "options", "origin", "crossOrigin", "topOrigin", "userPresent", "credentialId",
                "masterPassword",
            ]
        )
        #expect(assert["options"] == ["type": "object"])
        #expect(
            definitions["passkey.choices"]?["properties"]?["kind"] == ["type": "string", "enum": ["create", "get"]]
        )
        // Pairing is protocol 2: `v` is required and must be 2; hello's `v` is any integer.
        let begin = try #require(definitions["pair.begin"])
        #expect(begin["properties"]?["v"] == ["const": 2])
        #expect(begin["required"] == ["clientNonce", "type", "v"])
        #expect(definitions["hello"]?["properties"]?["v"] == ["type": "integer"])
        #expect(definitions["hello"]?["required"] == ["type"])
        #expect(definitions["state"]?["properties"]?.object?.keys.sorted() == ["id", "type", "v"])

        // Replies, nested objects and lists of them included.
        let state = try #require(definitions["reply:state"])
        #expect(state["required"] == ["state"])
        #expect(state["properties"]?["state"] == ["type": "string", "enum": ["locked", "unlocked"]])
        #expect(state["properties"]?["revision"] == ["type": "integer"])
        let identity = try #require(definitions["reply:identities.query"]?["properties"]?["identities"]?["items"])
        #expect(identity["required"] == ["kind", "rank", "recordIdentifier", "serviceIdentifier", "user"])
        #expect(identity["properties"]?["match"]?["enum"] == ["exact", "parent", "child", "sharedBackend"])
        #expect(
            definitions["reply:credential.provideWithoutUserInteraction"]?["properties"]?["credential"]?["required"]
                == ["password", "user"]
        )
        #expect(definitions["reply:passkey.assert"]?["properties"]?["responseJson"] == [:])
        #expect(definitions["reply:pair.begin"]?["properties"]?["agentShare"]?["pattern"] == "^[A-Za-z0-9_-]*$")
        #expect(definitions["error"]?["required"] == ["code", "localizedFailureReason"])
    }

    @Test func theSchemaDescribesEveryEventShape() throws {
        let definitions = try #require(try BrowserProtocolSchema.document()["$defs"]?.object)
        #expect(
            definitions["event"]?["oneOf"]
                == [
                    ["$ref": "#/$defs/event:state"], ["$ref": "#/$defs/event:identities.changed"],
                    ["$ref": "#/$defs/event:identities.changed+replaced"],
                ]
        )
        let state = try #require(definitions["event:state"])
        #expect(state["required"] == ["event", "state", "v"])
        #expect(state["additionalProperties"] == false)
        #expect(state["properties"]?["event"] == ["const": "state"])
        #expect(state["properties"]?["v"] == ["const": 1])
        #expect(state["properties"]?["state"] == ["type": "string", "enum": ["locked", "unlocked"]])
        let changed = try #require(definitions["event:identities.changed"])
        #expect(changed["required"] == ["event", "removed", "revision", "saved", "v"])
        #expect(changed["properties"]?["event"] == ["const": "identities.changed"])
        #expect(changed["properties"]?["removed"] == ["type": "array", "items": ["type": "string"]])
        #expect(changed["properties"]?["saved"]?["items"]?["required"]?.array?.contains("recordIdentifier") == true)
        let replaced = try #require(definitions["event:identities.changed+replaced"])
        #expect(replaced["required"] == ["event", "replaced", "revision", "v"])
        #expect(replaced["properties"]?["replaced"] == ["const": true])
        #expect(replaced["properties"]?["revision"] == ["type": "integer"])
    }

    /// Every event the agent sends, as it encodes it: its members are exactly its shape's in the
    /// schema (the required ones and no other), and it reads back as itself.
    @Test func everyEventIsEncodedAsItsSchemaShape() throws {
        let definitions = try #require(try BrowserProtocolSchema.document()["$defs"]?.object)
        let identity = CredentialIdentity(
            recordIdentifier: "r1",
            kind: .password,
            user: "ada",
            serviceIdentifier: "example.com",
            rank: 3,
            match: nil
        )
        let events: [BrowserEvent] = [
            .state(.init(state: .locked)), .state(.init(state: .unlocked)),
            .identitiesChanged(.init(revision: 4, saved: [identity], removed: ["r0"])),
            .identitiesChanged(.init(revision: 5, saved: [], removed: [])),
            .identitiesReplaced(.init(revision: 6)),
        ]
        #expect(Set(events.map(\.shape)) == Set(BrowserEvent.Shape.allCases))
        for event in events {
            let wire = try JSONValue.parse(event.encoded())
            let shape = try #require(definitions["event:" + event.shape.rawValue])
            let members = Set(try #require(wire.object).keys)
            let allowed = Set(try #require(shape["properties"]?.object).keys)
            let required = Set(try #require(shape["required"]?.array).compactMap(\.string))
            #expect(members == allowed && members == required, "\(wire)")
            #expect(wire["v"] == 1 && wire["event"]?.string == event.shape.event)
            #expect(try JSONDecoder().decode(BrowserEvent.self, from: event.encoded()) == event)
        }
        #expect(
            try JSONValue.parse(BrowserEvent.identitiesReplaced(.init(revision: 6)).encoded())
                == ["v": 1, "event": "identities.changed", "revision": 6, "replaced": true]
        )
        // What the extension must ignore is refused here too, by name.
        for (wire, reason): (JSONValue, String) in [
            (["v": 1, "event": "vault.exploded"], "Unknown event vault.exploded."),
            (["v": 1, "event": "identities.changed", "revision": 1, "replaced": false], "replaced must be true."),
        ] {
            let error = #expect(throws: AutoFillError.self) {
                try JSONDecoder().decode(BrowserEvent.self, from: wire.encoded())
            }
            #expect(error?.code == .badRequest && error?.message == reason)
        }
    }

    @Test func everyRequestRoundTripsThroughItsWireForm() throws {
        let call = BrowserRequest.PasskeyCall(
            options: ["challenge": "AAAA"],
            origin: "https://example.com",
            crossOrigin: true,
            topOrigin: "https://top.example",
            userPresent: true
        )
        let requests: [BrowserRequest] = [
            .state, .lock, .unlock(.init(masterPassword: "pw")),
            .identitiesQuery(.init(.init(url: "https://a.example/", topURL: nil), .init(kinds: [.password]))),
            .credentialList(.init(url: "https://a.example/", topURL: "https://a.example/")),
            .provideWithoutUserInteraction(
                .init(
                    .init(recordIdentifier: "r", url: "u", topURL: nil, confirmed: false),
                    .init(fromCredentialList: nil, deadlineMs: 2000)
                )
            ),
            .prepareInterface(
                .init(
                    .init(recordIdentifier: "r", url: "u", topURL: "t", confirmed: true),
                    .init(fromCredentialList: true, deadlineMs: nil)
                )
            ),
            .oneTimeCode(.init(recordIdentifier: "r", url: "u", topURL: nil, confirmed: true)),
            .save(.init(url: "u", user: "ada", password: "pw")),
            .generatePassword(.init(url: "u", passwordRules: "minlength: 20;")),
            .passkeyChoices(.init(call, .init(kind: .get))),
            .passkeyRegister(.init(call, .init(confirmed: true, masterPassword: nil))),
            .passkeyAssert(.init(call, .init(credentialId: "AQ", masterPassword: "pw"))),
            .verify(.init(masterPassword: "pw")),
            .passkeySignal(
                .init(
                    kind: .allAcceptedCredentials,
                    origin: "https://example.com",
                    rpId: "example.com",
                    credentialId: nil,
                    userId: "AQ",
                    allAcceptedCredentialIds: ["AQ", "Ag"],
                    name: nil,
                    displayName: nil
                )
            ),
        ]
        #expect(Set(requests.map(\.kind)) == Set(BrowserRequest.Kind.allCases))
        for request in requests {
            let wire = JSONValue(encoding: request)
            #expect(wire["type"]?.string == request.kind.rawValue)
            #expect(try read(wire).get() == request, "\(wire)")
        }
        // The members sit in one flat object, as the extension sends them.
        let assert = JSONValue(
            encoding: BrowserRequest.passkeyAssert(.init(call, .init(credentialId: "AQ", masterPassword: nil)))
        )
        #expect(
            assert["origin"] == "https://example.com" && assert["credentialId"] == "AQ" && assert["crossOrigin"] == true
        )
    }

    @Test func malformedRequestsAreRefusedNamingTheMember() {
        #expect(refusal(["id": 1]) == "badRequest: type is missing.")
        #expect(refusal(["id": 1, "type": "agent.run"]) == "badRequest: Unknown request type agent.run.")
        #expect(refusal(["id": 1, "type": 7]) == "badRequest: type must be a string.")
        #expect(
            refusal(["type": "credential.save", "url": "https://a.example/"]) == "badRequest: password is missing."
        )
        #expect(refusal(["type": "credential.save", "url": "", "password": "x"]) == "badRequest: url is missing.")
        #expect(
            refusal(["type": "credential.save", "url": "u", "password": 5]) == "badRequest: password must be a string."
        )
        #expect(refusal(["type": "credential.save", "url": .null, "password": "x"]) == "badRequest: url is missing.")
        #expect(
            refusal(["type": "identities.query", "url": "u", "kinds": ["password", "pin"]])
                == "badRequest: kinds[1] must be one of password, oneTimeCode."
        )
        #expect(
            refusal(["type": "passkey.choices", "kind": "delete", "options": [:], "origin": "o"])
                == "badRequest: kind must be one of create, get."
        )
        #expect(
            refusal(["type": "passkey.register", "options": "{}", "origin": "o"])
                == "badRequest: options must be an object."
        )
        #expect(refusal(["type": "state", "confirmed": "yes"]) == nil, "members of other requests are ignored")
        #expect(refusal(["type": "state", "v": 2])?.contains("protocol version 2") == true)
        // The id is read first and echoed even when the request is malformed.
        let message = BrowserSealedMessage.read((["id": 9, "type": "nope"] as JSONValue).encoded())
        #expect(message.id == 9)
        let notJSON = BrowserSealedMessage.read(Data("{not json".utf8))
        #expect(notJSON.id == nil && notJSON.request.failure?.message == "The message is not JSON.")
        #expect(
            BrowserSealedMessage.read(Data("[1]".utf8)).request.failure?.message.hasPrefix(
                "The message is not a JSON object"
            )
                == true
        )
    }

    @Test func clearMessagesRefuseProtocolOnePairingAndAnythingElse() throws {
        func clear(_ message: JSONValue) throws -> BrowserClearMessage {
            try #require(BrowserClearMessage.read(message.encoded()))
        }
        let old = try clear(["v": 1, "id": 4, "type": "pair.begin", "clientPublicKey": "AAAA"])
        #expect(old.request.failure?.message.contains("Update the extension") == true)
        #expect(old.id == 4 && old.version == 1)
        let begun = try clear(["v": 2, "id": 5, "type": "pair.begin", "clientNonce": "AAECAwQFBgcICQoLDA0ODw"])
        #expect(begun.version == 2)
        guard case .success(.pairBegin(let begin)) = begun.request else {
            Issue.record("pair.begin is read: \(begun.request)")
            return
        }
        #expect(begin.clientNonce == Data(0..<16) && begin.pairingRequest == nil)
        #expect(
            try clear(["v": 2, "type": "pair.begin", "clientNonce": "not base64!"]).request.failure?.message
                == "clientNonce is missing or not base64url."
        )
        for other: JSONValue in [["type": "state"], ["type": "agent.run"], ["v": 1]] {
            #expect(try clear(other).request.failure?.code == .notPaired, "\(other)")
        }
        #expect(BrowserClearMessage.read(Data("nope".utf8)) == nil)
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

/// The messages the extension really builds (its background run in node with a stand-in browser
/// and agent) against the schema the Swift types generate: `Tests/browser/protocol_schema_test.mjs`.
@Suite(.enabled(if: ExternalTools.node, ExternalTools.nodeReason))
struct ExtensionProtocolTests {
    @Test func theExtensionsMessagesMatchTheSchema() async throws {
        let script = BrowserProtocolTests.root.appendingPathComponent("Tests/browser/protocol_schema_test.mjs")
        let result = try await CommandRunner(executable: URL(fileURLWithPath: "/usr/bin/env"))
            .runDetached(["node", script.path])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        // It ran the flows and checked what they sent, and its validator refuses what it must.
        #expect(result.stdout.contains("ok the validator refuses an unknown request type"))
        #expect(result.stdout.contains("ok sealed passkey.signal sent and valid"))
        #expect(result.stdout.contains("ok clear pair.finish sent and valid"))
    }
}
