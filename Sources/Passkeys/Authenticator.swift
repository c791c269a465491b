import Crypto
public import Foundation
public import _KeyhavenSupport

/// A passkey as Keyhaven keeps it (sealed in the vault like a password): the relying party, the
/// credential and user handles, the private key, the counter, the backup flags and dates.
public struct PasskeyCredential: Sendable, Hashable, Codable {
    public var rpID: String
    public var credentialID: [UInt8]
    public var userHandle: [UInt8]
    public var userName: String
    public var userDisplayName: String
    public var algorithm: Int
    /// ES256: the P-256 scalar (32 bytes); EdDSA: the Ed25519 seed (32 bytes).
    public var privateKey: [UInt8]
    public var signCount: UInt32
    public var backupEligible: Bool
    public var backedUp: Bool
    public var created: Date
    public var lastUsed: Date?
    /// Hidden by the site's WebAuthn signals (`signalUnknownCredential`, or missing from
    /// `signalAllAcceptedCredentials`): kept, never offered, restored when the site lists it again.
    public var hidden: Bool

    public init(
        rpID: String,
        credentialID: [UInt8],
        userHandle: [UInt8],
        userName: String,
        userDisplayName: String,
        algorithm: Int,
        privateKey: [UInt8],
        signCount: UInt32 = 0,
        backupEligible: Bool = true,
        backedUp: Bool = true,
        created: Date,
        lastUsed: Date? = nil,
        hidden: Bool = false
    ) {
        self.rpID = rpID
        self.credentialID = credentialID
        self.userHandle = userHandle
        self.userName = userName
        self.userDisplayName = userDisplayName
        self.algorithm = algorithm
        self.privateKey = privateKey
        self.signCount = signCount
        self.backupEligible = backupEligible
        self.backedUp = backedUp
        self.created = created
        self.lastUsed = lastUsed
        self.hidden = hidden
    }

    enum CodingKeys: String, CodingKey {
        case rpID, credentialID, userHandle, userName, userDisplayName, algorithm, privateKey, signCount
        case backupEligible, backedUp, created, lastUsed, hidden
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        rpID = try container.decode(String.self, forKey: .rpID)
        credentialID = try container.decode([UInt8].self, forKey: .credentialID)
        userHandle = try container.decode([UInt8].self, forKey: .userHandle)
        userName = try container.decode(String.self, forKey: .userName)
        userDisplayName = try container.decode(String.self, forKey: .userDisplayName)
        algorithm = try container.decode(Int.self, forKey: .algorithm)
        privateKey = try container.decode([UInt8].self, forKey: .privateKey)
        signCount = try container.decode(UInt32.self, forKey: .signCount)
        backupEligible = try container.decode(Bool.self, forKey: .backupEligible)
        backedUp = try container.decode(Bool.self, forKey: .backedUp)
        created = try container.decode(Date.self, forKey: .created)
        lastUsed = try container.decodeIfPresent(Date.self, forKey: .lastUsed)
        // Passkeys stored before signals existed have no flag.
        hidden = try container.decodeIfPresent(Bool.self, forKey: .hidden) ?? false
    }

    /// The public key, as COSE.
    public func publicKey() throws(PasskeyError) -> COSEKey {
        switch COSEKey.Algorithm(rawValue: algorithm) {
        case .es256:
            guard let key = try? P256.Signing.PrivateKey(rawRepresentation: privateKey) else {
                throw PasskeyError(.invalidKey, "the stored P-256 key is damaged")
            }
            return .es256(key.publicKey)
        case .eddsa:
            guard let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: privateKey) else {
                throw PasskeyError(.invalidKey, "the stored Ed25519 key is damaged")
            }
            return .ed25519(key.publicKey)
        case nil:
            throw PasskeyError(.unsupportedAlgorithm, "algorithm \(algorithm) is not supported")
        }
    }

    func sign(_ data: [UInt8]) throws(PasskeyError) -> [UInt8] {
        do {
            switch COSEKey.Algorithm(rawValue: algorithm) {
            case .es256:
                return Array(
                    try P256.Signing.PrivateKey(rawRepresentation: privateKey).signature(for: data).derRepresentation
                )
            case .eddsa:
                return Array(try Curve25519.Signing.PrivateKey(rawRepresentation: privateKey).signature(for: data))
            case nil:
                throw PasskeyError(.unsupportedAlgorithm, "algorithm \(algorithm) is not supported")
            }
        } catch let error as PasskeyError {
            throw error
        } catch {
            throw PasskeyError(.invalidKey, "the stored key cannot sign")
        }
    }
}

/// `navigator.credentials.create()`'s options, as WebAuthn's JSON form carries them
/// (`PublicKeyCredentialCreationOptionsJSON`: binary fields in base64url).
public struct CreationRequest: Sendable, Hashable {
    public var rpID: String?
    public var rpName: String
    public var userID: [UInt8]
    public var userName: String
    public var userDisplayName: String
    public var challenge: [UInt8]
    /// `pubKeyCredParams`' algorithms, in the relying party's order of preference.
    public var algorithms: [Int]
    public var excludeCredentials: [[UInt8]]
    /// `required`, `preferred` or `discouraged`.
    public var userVerification: String

    public init(
        rpID: String?,
        rpName: String,
        userID: [UInt8],
        userName: String,
        userDisplayName: String,
        challenge: [UInt8],
        algorithms: [Int] = [-7],
        excludeCredentials: [[UInt8]] = [],
        userVerification: String = "preferred"
    ) {
        self.rpID = rpID
        self.rpName = rpName
        self.userID = userID
        self.userName = userName
        self.userDisplayName = userDisplayName
        self.challenge = challenge
        self.algorithms = algorithms
        self.excludeCredentials = excludeCredentials
        self.userVerification = userVerification
    }

    public init(json: JSONValue) throws(PasskeyError) {
        func bad(_ what: String) -> PasskeyError { PasskeyError(.invalidRequest, "the creation options lack \(what)") }
        guard let challenge = json["challenge"]?.string.flatMap({ Base64URL.decode($0) }) else {
            throw bad("a challenge")
        }
        guard let user = json["user"], let userID = user["id"]?.string.flatMap({ Base64URL.decode($0) }),
            (1...64).contains(userID.count)
        else { throw bad("a user id of 1 to 64 bytes") }
        self.init(
            rpID: json["rp"]?["id"]?.string,
            rpName: json["rp"]?["name"]?.string ?? "",
            userID: userID,
            userName: user["name"]?.string ?? "",
            userDisplayName: user["displayName"]?.string ?? "",
            challenge: challenge,
            algorithms: (json["pubKeyCredParams"]?.array ?? []).filter { $0["type"]?.string == "public-key" }
                .compactMap { $0["alg"]?.integer },
            excludeCredentials: (json["excludeCredentials"]?.array ?? []).compactMap {
                $0["id"]?.string.flatMap { Base64URL.decode($0) }
            },
            userVerification: json["authenticatorSelection"]?["userVerification"]?.string ?? "preferred"
        )
    }
}

/// `navigator.credentials.get()`'s options in WebAuthn's JSON form.
public struct AssertionRequest: Sendable, Hashable {
    public var rpID: String?
    public var challenge: [UInt8]
    /// Empty: any discoverable credential of the relying party.
    public var allowCredentials: [[UInt8]]
    public var userVerification: String

    public init(
        rpID: String?,
        challenge: [UInt8],
        allowCredentials: [[UInt8]] = [],
        userVerification: String = "preferred"
    ) {
        self.rpID = rpID
        self.challenge = challenge
        self.allowCredentials = allowCredentials
        self.userVerification = userVerification
    }

    public init(json: JSONValue) throws(PasskeyError) {
        guard let challenge = json["challenge"]?.string.flatMap({ Base64URL.decode($0) }) else {
            throw PasskeyError(.invalidRequest, "the request options lack a challenge")
        }
        self.init(
            rpID: json["rpId"]?.string,
            challenge: challenge,
            allowCredentials: (json["allowCredentials"]?.array ?? []).compactMap {
                $0["id"]?.string.flatMap { Base64URL.decode($0) }
            },
            userVerification: json["userVerification"]?.string ?? "preferred"
        )
    }
}

/// Keyhaven's WebAuthn authenticator (Level 3): ES256 (and EdDSA when the relying party asks for it
/// first), attestation `none`, discoverable credentials, backup-eligible and backed-up flags (the
/// vault is a synced, exportable store). User presence is the person choosing in Keyhaven's menu;
/// user verification is the agent's unlock, which the caller vouches for. Free of I/O: the agent
/// stores what ``register(_:origin:existing:userVerified:)`` returns.
public struct Authenticator: Sendable {
    /// Attestation `none`: an all-zero AAGUID says nothing about the authenticator's make.
    public static let aaguid = [UInt8](repeating: 0, count: 16)

    public var now: @Sendable () -> Date
    public var randomBytes: @Sendable (Int) -> [UInt8]

    public init(
        now: @escaping @Sendable () -> Date = { Date() },
        randomBytes: @escaping @Sendable (Int) -> [UInt8] = { count in
            var generator = SystemRandomNumberGenerator()
            return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        }
    ) {
        self.now = now
        self.randomBytes = randomBytes
    }

    /// The RP ID a request may use from `origin`: the one asked for (or the origin's host), when the
    /// origin is https (or `http://localhost`) and the RP ID is its host or a parent domain that is
    /// not a public suffix.
    public static func rpID(_ requested: String?, origin: String) throws(PasskeyError) -> String {
        guard let parsed = ServiceOrigin.of(url: origin) else {
            throw PasskeyError(.originNotAllowed, "the origin is not a URL")
        }
        let host = parsed.host
        guard parsed.scheme == .https || host == "localhost" else {
            throw PasskeyError(.originNotAllowed, "passkeys need an https page")
        }
        let rpID = (requested ?? host).lowercased()
        guard host == rpID || host.hasSuffix("." + rpID) else {
            throw PasskeyError(.originNotAllowed, "\(rpID) is not \(host) or a parent of it")
        }
        guard rpID == "localhost" || PublicSuffixList.shipped.registrableDomain(of: rpID) != nil else {
            throw PasskeyError(.originNotAllowed, "\(rpID) is a public suffix")
        }
        return rpID
    }

    /// `{"type", "challenge", "origin", "crossOrigin"[, "topOrigin"]}` in the order WebAuthn Level 3
    /// (§5.8.1.1) serializes them: `topOrigin` only for a caller that is cross-origin with one of its
    /// ancestors.
    public static func clientDataJSON(
        type: String,
        challenge: [UInt8],
        origin: String,
        crossOrigin: Bool = false,
        topOrigin: String? = nil
    ) -> [UInt8] {
        func quoted(_ text: String) -> String { String(decoding: JSONValue.string(text).encoded(), as: UTF8.self) }
        var text =
            "{\"type\":\(quoted(type)),\"challenge\":\(quoted(Base64URL.encode(challenge))),\"origin\":\(quoted(origin)),\"crossOrigin\":\(crossOrigin)"
        if crossOrigin, let topOrigin { text += ",\"topOrigin\":\(quoted(topOrigin))" }
        return Array((text + "}").utf8)
    }

    /// A new passkey for `request` made from `origin`; `existing` are the vault's passkeys for the
    /// same RP ID (an excluded one makes this fail with `excluded`, the page's InvalidStateError).
    /// Returns what to store and the `PublicKeyCredential` JSON (`RegistrationResponseJSON`).
    ///
    /// `userPresent` is true only when the person made a gesture in Keyhaven's own UI; the silent
    /// conditional create (WebAuthn L3 §5.1.3, `mediation: "conditional"`) passes false and the
    /// credential carries UP=0, as Chromium's own authenticator does. `topOrigin` names the top-level
    /// origin of a caller that is cross-origin with an ancestor frame (clientData's `crossOrigin`).
    public func register(
        _ request: CreationRequest,
        origin: String,
        topOrigin: String? = nil,
        existing: [PasskeyCredential],
        userVerified: Bool,
        userPresent: Bool = true
    ) throws(PasskeyError) -> (credential: PasskeyCredential, response: JSONValue) {
        let rpID = try Self.rpID(request.rpID, origin: origin)
        if existing.contains(where: { $0.rpID == rpID && request.excludeCredentials.contains($0.credentialID) }) {
            throw PasskeyError(.excluded, "this account already has a passkey in Keyhaven")
        }
        let offered = request.algorithms.isEmpty ? [-7, -257] : request.algorithms
        guard let algorithm = offered.first(where: { COSEKey.Algorithm(rawValue: $0) != nil }) else {
            throw PasskeyError(.unsupportedAlgorithm, "the site accepts none of ES256 and EdDSA")
        }
        if request.userVerification == "required" && !userVerified {
            throw PasskeyError(.userVerificationRequired, "the site asks to verify you: unlock Keyhaven again")
        }
        let privateKey: [UInt8] =
            algorithm == COSEKey.Algorithm.es256.rawValue
            ? Array(P256.Signing.PrivateKey().rawRepresentation)
            : Array(Curve25519.Signing.PrivateKey().rawRepresentation)
        let credential = PasskeyCredential(
            rpID: rpID,
            credentialID: randomBytes(16),
            userHandle: request.userID,
            userName: request.userName,
            userDisplayName: request.userDisplayName,
            algorithm: algorithm,
            privateKey: privateKey,
            signCount: 0,
            backupEligible: true,
            backedUp: true,
            created: now(),
            lastUsed: nil
        )
        let publicKey = try credential.publicKey()
        var flags: AuthenticatorData.Flags = [.backupEligible, .backedUp]
        if userPresent { flags.insert(.userPresent) }
        if userVerified { flags.insert(.userVerified) }
        let authenticatorData = AuthenticatorData(
            rpIDHash: Array(SHA256.hash(data: Data(rpID.utf8))),
            flags: flags,
            signCount: 0,
            attestedCredential: .init(aaguid: Self.aaguid, credentialID: credential.credentialID, publicKey: publicKey)
        ).encoded()
        let attestationObject = CBOR.map([
            .init(.text("fmt"), .text("none")), .init(.text("attStmt"), .map([])),
            .init(.text("authData"), .bytes(authenticatorData)),
        ]).encoded()
        let clientData = Self.clientDataJSON(
            type: "webauthn.create",
            challenge: request.challenge,
            origin: origin,
            crossOrigin: topOrigin != nil,
            topOrigin: topOrigin
        )
        let id = JSONValue.string(Base64URL.encode(credential.credentialID))
        let response: JSONValue = [
            "id": id, "rawId": id, "type": "public-key", "authenticatorAttachment": "platform",
            "clientExtensionResults": ["credProps": ["rk": true]],
            "response": [
                "clientDataJSON": .string(Base64URL.encode(clientData)),
                "attestationObject": .string(Base64URL.encode(attestationObject)),
                "authenticatorData": .string(Base64URL.encode(authenticatorData)),
                "publicKeyAlgorithm": .number(Double(algorithm)),
                "publicKey": .string(Base64URL.encode(publicKey.subjectPublicKeyInfo)),
                "transports": ["hybrid", "internal"],
            ],
        ]
        return (credential, response)
    }

    /// Signs in with `credential` (the person chose it): the assertion JSON
    /// (`AuthenticationResponseJSON`) and the credential with its counter and last use updated.
    /// `userPresent` and `topOrigin` as for ``register(_:origin:topOrigin:existing:userVerified:userPresent:)``.
    public func authenticate(
        _ request: AssertionRequest,
        origin: String,
        topOrigin: String? = nil,
        credential: PasskeyCredential,
        userVerified: Bool,
        userPresent: Bool = true
    ) throws(PasskeyError) -> (credential: PasskeyCredential, response: JSONValue) {
        let rpID = try Self.rpID(request.rpID, origin: origin)
        guard credential.rpID == rpID else {
            throw PasskeyError(.originNotAllowed, "this passkey is for \(credential.rpID)")
        }
        if !request.allowCredentials.isEmpty && !request.allowCredentials.contains(credential.credentialID) {
            throw PasskeyError(.notAllowed, "the site did not ask for this passkey")
        }
        if request.userVerification == "required" && !userVerified {
            throw PasskeyError(.userVerificationRequired, "the site asks to verify you: unlock Keyhaven again")
        }
        var updated = credential
        updated.signCount &+= 1
        updated.lastUsed = now()
        var flags: AuthenticatorData.Flags = []
        if userPresent { flags.insert(.userPresent) }
        if userVerified { flags.insert(.userVerified) }
        if credential.backupEligible { flags.insert(.backupEligible) }
        if credential.backedUp { flags.insert(.backedUp) }
        let authenticatorData = AuthenticatorData(
            rpIDHash: Array(SHA256.hash(data: Data(rpID.utf8))),
            flags: flags,
            signCount: updated.signCount
        ).encoded()
        let clientData = Self.clientDataJSON(
            type: "webauthn.get",
            challenge: request.challenge,
            origin: origin,
            crossOrigin: topOrigin != nil,
            topOrigin: topOrigin
        )
        let signature = try credential.sign(authenticatorData + Array(SHA256.hash(data: clientData)))
        let id = JSONValue.string(Base64URL.encode(credential.credentialID))
        let response: JSONValue = [
            "id": id, "rawId": id, "type": "public-key", "authenticatorAttachment": "platform",
            "clientExtensionResults": [:],
            "response": [
                "clientDataJSON": .string(Base64URL.encode(clientData)),
                "authenticatorData": .string(Base64URL.encode(authenticatorData)),
                "signature": .string(Base64URL.encode(signature)),
                "userHandle": .string(Base64URL.encode(credential.userHandle)),
            ],
        ]
        return (updated, response)
    }
}

extension PasskeyCredential {
    /// Ed25519's PKCS#8 prefix (RFC 8410): the 32-byte seed follows.
    static let ed25519PKCS8Prefix: [UInt8] = [
        0x30, 0x2E, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
    ]

    /// The private key as PKCS#8 DER, as FIDO's CXF and Bitwarden carry passkeys.
    public func pkcs8() throws(PasskeyError) -> [UInt8] {
        switch COSEKey.Algorithm(rawValue: algorithm) {
        case .es256:
            guard let key = try? P256.Signing.PrivateKey(rawRepresentation: privateKey) else {
                throw PasskeyError(.invalidKey, "the stored P-256 key is damaged")
            }
            return Array(key.derRepresentation)
        case .eddsa:
            guard privateKey.count == 32 else { throw PasskeyError(.invalidKey, "the stored Ed25519 key is damaged") }
            return Self.ed25519PKCS8Prefix + privateKey
        case nil:
            throw PasskeyError(.unsupportedAlgorithm, "algorithm \(algorithm) is not supported")
        }
    }

    /// A private key from PKCS#8 DER: its algorithm and the raw key Keyhaven stores; nil for any
    /// other key (RSA, another curve) or damaged bytes.
    public static func privateKey(pkcs8: [UInt8]) -> (algorithm: Int, raw: [UInt8])? {
        if pkcs8.count == 48, Array(pkcs8.prefix(16)) == ed25519PKCS8Prefix {
            return (COSEKey.Algorithm.eddsa.rawValue, Array(pkcs8.suffix(32)))
        }
        if let key = try? P256.Signing.PrivateKey(derRepresentation: pkcs8) {
            return (COSEKey.Algorithm.es256.rawValue, Array(key.rawRepresentation))
        }
        return nil
    }
}
