public import Foundation
public import _KeyhavenSupport

/// What the agent answers in a reply's `ok` (docs/autofill-protocol.md §2.1–2.5), one type per
/// answer. A reply is `{"v": 1, "id": N, "ok": …}` or `{"v": 1, "id": N, "error": {"code", "localizedFailureReason"}}`.
public enum BrowserReply {
    public enum LockState: String, BrowserProtocolEnum {
        case locked, unlocked
        public init(from decoder: any Decoder) throws { self = try Self.decodeCase(from: decoder) }
    }

    /// A passkey `passkey.choices` offers for a `get` (never its key).
    public struct PasskeyChoice: BrowserProtocolObject, Hashable {
        public var credentialId: String
        public var user: String
        public var displayName: String
    }

    /// `state`, `unlock`, `lock`.
    public struct State: BrowserProtocolObject, Hashable {
        public var state: LockState
        /// `state` only: the session's revision, and that `identities.changed` events come.
        public var revision: Int?
        public var supportsIncrementalUpdates: Bool?
    }

    /// `identities.query` (with the revision the identities are of) and `credentialList`.
    public struct Identities: BrowserProtocolObject {
        public var revision: Int?
        public var identities: [CredentialIdentity]
    }

    /// `credential.provideWithoutUserInteraction` and `credential.prepareInterface`.
    public struct ProvidedCredential: BrowserProtocolObject, Hashable {
        public struct Secret: BrowserProtocolObject, Hashable {
            public var user: String
            public var password: String
        }
        public var credential: Secret
    }

    /// `oneTimeCode.provide`: the code and until when it is valid (ISO 8601).
    public struct OneTimeCode: BrowserProtocolObject, Hashable {
        public var code: String
        public var validUntil: String
    }

    /// `credential.save`.
    public struct Saved: BrowserProtocolObject, Hashable {
        public enum Action: String, BrowserProtocolEnum {
            case saved, updated, unchanged
            public init(from decoder: any Decoder) throws { self = try Self.decodeCase(from: decoder) }
        }
        public var recordIdentifier: String
        public var action: Action
    }

    /// `password.generate`: the password, the rules it satisfies, and where they came from: the
    /// field's `passwordrules`, the site's quirk (Apple's password-manager-resources) or Apple's format.
    public struct GeneratedPassword: BrowserProtocolObject, Hashable {
        public enum Source: String, BrowserProtocolEnum {
            case field, quirk, `default`
            public init(from decoder: any Decoder) throws { self = try Self.decodeCase(from: decoder) }
        }
        public var password: String
        public var rules: String
        public var source: Source
    }

    /// `passkey.choices`: for `create`, the account and whether it already has an excluded passkey
    /// here; for `get`, the passkeys that may answer. Never a key.
    public struct PasskeyChoices: BrowserProtocolObject, Hashable {
        public var rpId: String
        public var user: String?
        public var displayName: String?
        public var excluded: Bool?
        public var passkeys: [PasskeyChoice]?
        /// The page requires verification and the unlock is too old: the chooser asks for the
        /// master password.
        public var verificationRequired: Bool
    }

    /// `passkey.register` and `passkey.assert`: the WebAuthn response JSON for the page.
    public struct PasskeyResponse: BrowserProtocolObject, Hashable {
        public var responseJson: JSONValue
    }

    /// `verify`.
    public struct Verified: BrowserProtocolObject, Hashable {
        public var verified: Bool
    }

    /// `passkey.signal`: how many passkeys changed.
    public struct SignalApplied: BrowserProtocolObject, Hashable {
        public var changed: Int
    }

    /// `hello`: the protocol the agent speaks, its version and whether it is unlocked.
    public struct Hello: BrowserProtocolObject, Hashable {
        public var `protocol`: Int
        public var agentVersion: String
        public var state: LockState

        public init(protocol: Int, agentVersion: String, state: LockState) {
            (self.protocol, self.agentVersion, self.state) = (`protocol`, agentVersion, state)
        }
    }

    /// `pair.begin`: the request and the agent's nonce and CPace share for this try.
    public struct PairingOffer: BrowserProtocolObject, Hashable {
        public var pairingRequest: String
        @Base64URLBytes public var agentNonce: Data
        @Base64URLBytes public var agentShare: Data
        public var suite = "CPACE-X25519-SHA512"

        public init(_ offer: AutoFillAgent.PairingOffer) {
            pairingRequest = offer.request
            agentNonce = offer.agentNonce
            agentShare = offer.agentShare
        }
    }

    /// `pair.finish`: the new pairing and the agent's confirmation tag.
    public struct Paired: BrowserProtocolObject, Hashable {
        public var pairingId: String
        @Base64URLBytes public var agentConfirm: Data

        public init(pairingId: String, agentConfirm: Data) {
            self.pairingId = pairingId
            self.agentConfirm = agentConfirm
        }
    }

    /// `session.open`: the agent's nonce for the session key.
    public struct SessionOpened: BrowserProtocolObject, Hashable {
        @Base64URLBytes public var agentNonce: Data

        public init(agentNonce: Data) { self.agentNonce = agentNonce }
    }

    /// A reply's `error`: a code to match on and a reason for the person (never a secret).
    public struct Failure: BrowserProtocolObject, Hashable {
        public var code: String
        public var localizedFailureReason: String

        public init(code: String, localizedFailureReason: String) {
            self.code = code
            self.localizedFailureReason = localizedFailureReason
        }

        /// `error` as it travels: its code's name and its message.
        public init(_ error: AutoFillError) {
            self.init(code: error.code.name, localizedFailureReason: error.message)
        }
    }

    /// A reply to request `id`: its answer, or the error.
    public static func json(
        id: Int?,
        version: Int = 1,
        _ answer: Result<any BrowserProtocolObject, AutoFillError>
    ) -> JSONValue {
        var reply: [String: JSONValue] = ["v": .number(Double(version)), "id": id.map { .number(Double($0)) } ?? .null]
        switch answer {
        case .success(let ok): reply["ok"] = JSONValue(encoding: ok)
        case .failure(let error): reply["error"] = error.json
        }
        return .object(reply)
    }
}

extension JSONValue {
    /// `value` as JSON (a value the protocol's types encode: it cannot fail; `null` if it did).
    public init(encoding value: some Encodable) {
        let data = (try? JSONEncoder().encode(value)) ?? Data("null".utf8)
        self = (try? JSONValue.parse(data)) ?? .null
    }
}
