public import Foundation
public import _KeyhavenSupport

/// A request of an open session (docs/autofill-protocol.md §2.4): the plaintext of a sealed frame,
/// `{"v": 1, "id": N, "type": "…", …members}`, decoded once by ``BrowserSealedMessage`` and
/// answered by `AutoFillAgent.handle` with a `switch` over these cases. `Extension/protocol.schema.json`
/// is generated from these types (``BrowserProtocolSchema``).
public enum BrowserRequest: Sendable, Hashable, Codable {
    case state
    case unlock(Unlock)
    case lock
    case identitiesQuery(IdentitiesQuery)
    case credentialList(CredentialList)
    /// `credential.provideWithoutUserInteraction`: a credential the policy lets the agent give without asking.
    case provideWithoutUserInteraction(Provide)
    /// `credential.prepareInterface`: a credential the person confirmed (`confirmed` must be true).
    case prepareInterface(Provide)
    case oneTimeCode(OneTimeCode)
    case save(Save)
    case generatePassword(GeneratePassword)
    case passkeyChoices(PasskeyChoices)
    case passkeyRegister(PasskeyRegister)
    case passkeyAssert(PasskeyAssert)
    case verify(Verify)
    case passkeySignal(PasskeySignal)

    /// The request types: each one's `type` on the wire.
    public enum Kind: String, CaseIterable, Sendable {
        case state
        case unlock
        case lock
        case identitiesQuery = "identities.query"
        case credentialList
        case provideWithoutUserInteraction = "credential.provideWithoutUserInteraction"
        case prepareInterface = "credential.prepareInterface"
        case oneTimeCode = "oneTimeCode.provide"
        case save = "credential.save"
        case generatePassword = "password.generate"
        case passkeyChoices = "passkey.choices"
        case passkeyRegister = "passkey.register"
        case passkeyAssert = "passkey.assert"
        case verify
        case passkeySignal = "passkey.signal"

        /// What a reply's `ok` is for this request (the agent checks its answers against it in
        /// debug builds; the schema describes it as `reply:TYPE`).
        public var replyType: any BrowserProtocolObject.Type {
            switch self {
            case .state, .unlock, .lock: BrowserReply.State.self
            case .identitiesQuery, .credentialList: BrowserReply.Identities.self
            case .provideWithoutUserInteraction, .prepareInterface: BrowserReply.ProvidedCredential.self
            case .oneTimeCode: BrowserReply.OneTimeCode.self
            case .save: BrowserReply.Saved.self
            case .generatePassword: BrowserReply.GeneratedPassword.self
            case .passkeyChoices: BrowserReply.PasskeyChoices.self
            case .passkeyRegister, .passkeyAssert: BrowserReply.PasskeyResponse.self
            case .verify: BrowserReply.Verified.self
            case .passkeySignal: BrowserReply.SignalApplied.self
            }
        }
    }

    /// `unlock`: the master password typed in Keyhaven's unlock page.
    public struct Unlock: Codable, Sendable, Hashable {
        @NonEmpty public var masterPassword: String
    }

    /// The frame a request is about, as the browser reported it: its URL and its tab's top page.
    /// Alone, `credentialList`: every account name, for "Other passwords…" on a page the person
    /// could fill silently (§2.4).
    public struct Frame: Codable, Sendable, Hashable {
        @NonEmpty public var url: String
        public var topURL: String?
    }

    /// Which identities `identities.query` asks for.
    public struct KindsField: Codable, Sendable, Hashable {
        /// Passwords and one-time codes when absent.
        public var kinds: [CredentialIdentity.Kind]?
    }

    /// `identities.query`: who can sign in to the frame (no secret). The identities depend on the
    /// frame's URL only; `topURL` is what the extension sends along.
    public typealias IdentitiesQuery = Merged<Frame, KindsField>
    /// `credentialList`.
    public typealias CredentialList = Frame

    /// A credential for the frame at `url`, under the fill policy (§3); alone, `oneTimeCode.provide`
    /// (the current code of the credential's TOTP secret).
    public struct CredentialFor: Codable, Sendable, Hashable {
        @NonEmpty public var recordIdentifier: String
        @NonEmpty public var url: String
        public var topURL: String?
        public var confirmed: Bool?
    }

    /// What a password fill adds.
    public struct FillFields: Codable, Sendable, Hashable {
        /// The person picked it from the whole list (a credential of another site, confirmed).
        public var fromCredentialList: Bool?
        /// How long the extension waits for a silent fill (2000 when absent).
        public var deadlineMs: Double?
    }

    /// `credential.provideWithoutUserInteraction` and `credential.prepareInterface`.
    public typealias Provide = Merged<CredentialFor, FillFields>
    /// `oneTimeCode.provide`.
    public typealias OneTimeCode = CredentialFor

    /// `credential.save`: what the person submitted in the frame at `url`.
    public struct Save: Codable, Sendable, Hashable {
        @NonEmpty public var url: String
        public var user: String?
        @NonEmpty public var password: String
    }

    /// `password.generate`: a password for the frame at `url` and its field's `passwordrules`.
    public struct GeneratePassword: Codable, Sendable, Hashable {
        @NonEmpty public var url: String
        public var passwordRules: String?
    }

    /// Who makes a passkey call and with what (§2.5): the page's options and the browser-given
    /// origin (`crossOrigin` with `topOrigin` for a frame cross-origin with an ancestor).
    public struct PasskeyCall: Codable, Sendable, Hashable {
        @JSONObject public var options: JSONValue
        @NonEmpty public var origin: String
        public var crossOrigin: Bool?
        public var topOrigin: String?
        /// A gesture in Keyhaven's own UI for this call (user presence).
        public var userPresent: Bool?
    }

    /// A WebAuthn call's kind: `create()` or `get()`.
    public enum CallKind: String, BrowserProtocolEnum {
        case create, get
        public init(from decoder: any Decoder) throws { self = try Self.decodeCase(from: decoder) }
    }

    public struct ChoicesFields: Codable, Sendable, Hashable {
        public var kind: CallKind
    }

    public struct RegisterFields: Codable, Sendable, Hashable {
        public var confirmed: Bool?
        public var masterPassword: String?
    }

    public struct AssertFields: Codable, Sendable, Hashable {
        @NonEmpty public var credentialId: String
        public var masterPassword: String?
    }

    /// `passkey.choices`: what the chooser shows before anything is signed.
    public typealias PasskeyChoices = Merged<PasskeyCall, ChoicesFields>
    /// `passkey.register`: a new passkey, stored, then answered.
    public typealias PasskeyRegister = Merged<PasskeyCall, RegisterFields>
    /// `passkey.assert`: the chosen passkey signs the page's challenge.
    public typealias PasskeyAssert = Merged<PasskeyCall, AssertFields>

    /// `verify`: the master password typed again in Keyhaven's own page.
    public struct Verify: Codable, Sendable, Hashable {
        @NonEmpty public var masterPassword: String
    }

    /// `passkey.signal`: one of the site's WebAuthn signals (Level 3 §5.1.10). Which members a
    /// signal needs depends on its kind; the agent checks them (they are base64url).
    public struct PasskeySignal: Codable, Sendable, Hashable {
        public enum Kind: String, BrowserProtocolEnum {
            case unknownCredential, allAcceptedCredentials, currentUserDetails
            public init(from decoder: any Decoder) throws { self = try Self.decodeCase(from: decoder) }
        }
        public var kind: Kind
        @NonEmpty public var origin: String
        public var rpId: String?
        public var credentialId: String?
        public var userId: String?
        public var allAcceptedCredentialIds: [String]?
        public var name: String?
        public var displayName: String?
    }

    public var kind: Kind {
        switch self {
        case .state: .state
        case .unlock: .unlock
        case .lock: .lock
        case .identitiesQuery: .identitiesQuery
        case .credentialList: .credentialList
        case .provideWithoutUserInteraction: .provideWithoutUserInteraction
        case .prepareInterface: .prepareInterface
        case .oneTimeCode: .oneTimeCode
        case .save: .save
        case .generatePassword: .generatePassword
        case .passkeyChoices: .passkeyChoices
        case .passkeyRegister: .passkeyRegister
        case .passkeyAssert: .passkeyAssert
        case .verify: .verify
        case .passkeySignal: .passkeySignal
        }
    }

    enum TypeKey: String, CodingKey { case type }

    /// Reads `type`, then the members of that request type (members of other types are ignored).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: TypeKey.self)
        guard let type = try container.decodeIfPresent(String.self, forKey: .type) else {
            throw AutoFillError(.badRequest, "type is missing.")
        }
        guard let kind = Kind(rawValue: type) else { throw AutoFillError(.badRequest, "Unknown request type \(type).") }
        switch kind {
        case .state: self = .state
        case .unlock: self = .unlock(try Unlock(from: decoder))
        case .lock: self = .lock
        case .identitiesQuery: self = .identitiesQuery(try IdentitiesQuery(from: decoder))
        case .credentialList: self = .credentialList(try CredentialList(from: decoder))
        case .provideWithoutUserInteraction: self = .provideWithoutUserInteraction(try Provide(from: decoder))
        case .prepareInterface: self = .prepareInterface(try Provide(from: decoder))
        case .oneTimeCode: self = .oneTimeCode(try OneTimeCode(from: decoder))
        case .save: self = .save(try Save(from: decoder))
        case .generatePassword: self = .generatePassword(try GeneratePassword(from: decoder))
        case .passkeyChoices: self = .passkeyChoices(try PasskeyChoices(from: decoder))
        case .passkeyRegister: self = .passkeyRegister(try PasskeyRegister(from: decoder))
        case .passkeyAssert: self = .passkeyAssert(try PasskeyAssert(from: decoder))
        case .verify: self = .verify(try Verify(from: decoder))
        case .passkeySignal: self = .passkeySignal(try PasskeySignal(from: decoder))
        }
    }

    /// `type` and the request's members, in one object.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: TypeKey.self)
        try container.encode(kind.rawValue, forKey: .type)
        let members: (any Encodable)? =
            switch self {
            case .state, .lock: nil
            case .unlock(let request): request
            case .identitiesQuery(let request): request
            case .credentialList(let request): request
            case .provideWithoutUserInteraction(let request), .prepareInterface(let request): request
            case .oneTimeCode(let request): request
            case .save(let request): request
            case .generatePassword(let request): request
            case .passkeyChoices(let request): request
            case .passkeyRegister(let request): request
            case .passkeyAssert(let request): request
            case .verify(let request): request
            case .passkeySignal(let request): request
            }
        try members?.encode(to: encoder)
    }
}

/// A sealed frame's plaintext, read once: its `id` (echoed in the reply) and its request, or why
/// the request could not be read (answered with that error and the same `id`).
public struct BrowserSealedMessage: Sendable, Decodable {
    public var id: Int?
    public var request: Result<BrowserRequest, AutoFillError>

    public init(id: Int?, request: Result<BrowserRequest, AutoFillError>) {
        (self.id, self.request) = (id, request)
    }

    enum Keys: String, CodingKey { case id, v }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        do {
            id = try container.decodeIfPresent(Int.self, forKey: .id)
        } catch {
            (id, request) = (nil, .failure(AutoFillError(decoding: error)))
            return
        }
        do {
            _ = try container.decodeIfPresent(ProtocolVersion<SealedVersionRule>.self, forKey: .v)
            request = .success(try BrowserRequest(from: decoder))
        } catch {
            request = .failure(AutoFillError(decoding: error))
        }
    }

    /// The message in `plaintext`; one that is not a JSON object is a request that failed.
    public static func read(_ plaintext: Data) -> BrowserSealedMessage {
        do {
            return try JSONDecoder().decode(Self.self, from: plaintext)
        } catch {
            return BrowserSealedMessage(id: nil, request: .failure(AutoFillError(decoding: error)))
        }
    }
}
