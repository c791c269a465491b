public import Crypto
import Foundation
public import _KeyhavenSupport

/// What a new device posts to the server to ask to join (`POST /v1/join-requests`): the server it
/// uses, the ``JoinCode/lookup``, its Ed25519 device key, the X25519 key the grant is sealed to and
/// its name. ``DeviceJoin/tag(_:code:)`` binds all of them to the join code.
public struct JoinRequestFields: Hashable, Sendable {
    public var origin: ServiceOrigin
    public var lookup: String
    /// The new device's Ed25519 public key (raw, 32 bytes): the key to enrol.
    public var publicKey: [UInt8]
    /// The new device's ephemeral X25519 public key (raw, 32 bytes): the grant is sealed to it.
    public var agreementKey: [UInt8]
    public var name: String

    public init(origin: ServiceOrigin, lookup: String, publicKey: [UInt8], agreementKey: [UInt8], name: String) {
        (self.origin, self.lookup, self.publicKey, self.agreementKey, self.name) = (
            origin, lookup, publicKey, agreementKey, name
        )
    }
}

/// What the approving device hands the new one, sealed (``DeviceJoin/seal(_:for:code:ephemeral:)``):
/// the account, the approving device's id and its approval signature of the new key
/// (``DeviceSignatures/approval(server:account:newPublicKey:)``), and the sync vault key and vault
/// id every item is sealed with.
public struct JoinGrant: Sendable {
    public var account: String
    public var approver: String
    public var approval: [UInt8]
    public var vaultKey: SymmetricKey
    public var vaultID: VaultID

    public init(account: String, approver: String, approval: [UInt8], vaultKey: SymmetricKey, vaultID: VaultID) {
        (self.account, self.approver, self.approval, self.vaultKey, self.vaultID) = (
            account, approver, approval, vaultKey, vaultID
        )
    }
}

/// A second device joining an account (docs/sync.md "A device joins"): the sync vault key travels
/// from a device already in to the new one, relayed by the server, which can neither open it nor
/// substitute keys of its own.
///
/// 1. The new device makes its keys and a ``JoinCode`` S, and posts ``JoinRequestFields`` with a
///    **tag**: HMAC-SHA256 under S's MAC key over every field. The person carries S to a device
///    already in; the server never sees it.
/// 2. That device fetches the request by S's lookup and checks the tag (``verifyTag(_:of:code:)``,
///    constant time): a server that swapped the new device's keys cannot make a valid tag without
///    S. It then seals a **grant** to the request's X25519 key: an ephemeral X25519 key of its
///    own, the shared secret through HKDF-SHA256 (salt and info binding both X25519 keys, the
///    origin and the lookup) into a ChaCha20-Poly1305 key; the associated data names the origin and
///    the lookup; and a MAC under S's key over the whole grant and the request's keys, so the new
///    device knows it came from someone who knew S, not from the server.
/// 3. The new device checks that MAC, opens the grant with its X25519 private key, and enrols with
///    the approval inside.
///
/// Every message is labelled (`keyhaven-join/v1/…`) and its parts length-prefixed, so no message
/// of one kind is ever another's.
public enum DeviceJoin {
    /// The first byte of a grant's bytes: its layout.
    static let grantVersion: UInt8 = 1

    /// The new device's tag over its request.
    public static func tag(_ fields: JoinRequestFields, code: JoinCode) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: requestMessage(fields), using: code.macKey))
    }

    /// True when `tag` is the tag of `fields` under `code` (compared in constant time).
    public static func verifyTag(_ tag: [UInt8], of fields: JoinRequestFields, code: JoinCode) -> Bool {
        HMAC<SHA256>.isValidAuthenticationCode(tag, authenticating: requestMessage(fields), using: code.macKey)
    }

    /// The grant for the device that posted `fields` (whose tag the caller verified): the grant's
    /// bytes as the server relays them — a version byte, the ephemeral X25519 public key (32), the
    /// MAC (32) and the sealed box (ChaCha20-Poly1305: nonce, ciphertext, tag).
    ///
    /// - Throws: ``VaultSyncError/Code/cannotSeal`` when the request's X25519 key is not one.
    public static func seal(
        _ grant: JoinGrant,
        for fields: JoinRequestFields,
        code: JoinCode
    ) throws(VaultSyncError) -> [UInt8] {
        try seal(grant, for: fields, code: code, ephemeral: Curve25519.KeyAgreement.PrivateKey())
    }

    /// ``seal(_:for:code:)`` with a given ephemeral key (internal: a fresh one for every grant is
    /// what keeps two grants apart).
    static func seal(
        _ grant: JoinGrant,
        for fields: JoinRequestFields,
        code: JoinCode,
        ephemeral: Curve25519.KeyAgreement.PrivateKey
    ) throws(VaultSyncError) -> [UInt8] {
        let ephemeralPublic = Array(ephemeral.publicKey.rawRepresentation)
        let sealed: [UInt8]
        do {
            let recipient = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: fields.agreementKey)
            let key = try boxKey(ephemeral.sharedSecretFromKeyAgreement(with: recipient), fields, ephemeralPublic)
            var plaintext = frame(
                "grant",
                [
                    Array(grant.account.utf8), Array(grant.approver.utf8), grant.approval,
                    grant.vaultKey.withUnsafeBytes { Array($0) }, grant.vaultID.bytes,
                ]
            )
            defer { plaintext.withUnsafeMutableBufferPointer { $0.update(repeating: 0) } }
            sealed = Array(try ChaChaPoly.seal(plaintext, using: key, authenticating: associatedData(fields)).combined)
        } catch {
            throw VaultSyncError(.cannotSeal, "the grant could not be sealed to the new device's key")
        }
        let mac = grantMAC(fields, code: code, ephemeral: ephemeralPublic, sealed: sealed)
        return [grantVersion] + ephemeralPublic + mac + sealed
    }

    /// Opens a grant sealed for `fields` with the X25519 private key that `fields.agreementKey` is
    /// the public half of.
    ///
    /// - Throws: ``VaultSyncError/Code/joinMismatch`` when its MAC does not verify under `code` (it
    ///   was altered, or made by someone without the code: nothing of it is used), or
    ///   ``VaultSyncError/Code/cannotOpen`` when it does not open or is not a grant's layout.
    public static func open(
        _ bytes: [UInt8],
        for fields: JoinRequestFields,
        agreementKey: Curve25519.KeyAgreement.PrivateKey,
        code: JoinCode
    ) throws(VaultSyncError) -> JoinGrant {
        guard bytes.count > 1 + 32 + 32, bytes[0] == grantVersion else {
            throw VaultSyncError(.cannotOpen, "the grant is not in a layout this Keyhaven reads")
        }
        let ephemeralPublic = Array(bytes[1..<33])
        let mac = Array(bytes[33..<65])
        let sealed = Array(bytes[65...])
        guard
            HMAC<SHA256>.isValidAuthenticationCode(
                mac,
                authenticating: grantMessage(fields, ephemeral: ephemeralPublic, sealed: sealed),
                using: code.macKey
            )
        else {
            throw VaultSyncError(
                .joinMismatch,
                "the approval does not match this device's join code: someone may have altered it on the way; "
                    + "nothing of it was used"
            )
        }
        var plaintext: [UInt8]
        do {
            let sender = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: ephemeralPublic)
            let key = try boxKey(agreementKey.sharedSecretFromKeyAgreement(with: sender), fields, ephemeralPublic)
            plaintext = Array(
                try ChaChaPoly.open(
                    ChaChaPoly.SealedBox(combined: sealed),
                    using: key,
                    authenticating: associatedData(fields)
                )
            )
        } catch {
            throw VaultSyncError(.cannotOpen, "the grant does not open with this device's key")
        }
        defer { plaintext.withUnsafeMutableBufferPointer { $0.update(repeating: 0) } }
        guard let parts = unframe("grant", plaintext), parts.count == 5, parts[3].count == 32,
            let vaultID = VaultID(bytes: parts[4]),
            let account = String(validating: parts[0], as: UTF8.self),
            let approver = String(validating: parts[1], as: UTF8.self)
        else { throw VaultSyncError(.cannotOpen, "the grant opened but is not in a grant's layout") }
        return JoinGrant(
            account: account,
            approver: approver,
            approval: parts[2],
            vaultKey: SymmetricKey(data: parts[3]),
            vaultID: vaultID
        )
    }

    // MARK: Messages

    private static func requestMessage(_ fields: JoinRequestFields) -> [UInt8] {
        frame(
            "request",
            [
                Array(fields.origin.serialized.utf8), Array(fields.lookup.utf8), fields.publicKey,
                fields.agreementKey, Array(fields.name.utf8),
            ]
        )
    }

    private static func grantMessage(_ fields: JoinRequestFields, ephemeral: [UInt8], sealed: [UInt8]) -> [UInt8] {
        frame(
            "grant-mac",
            [
                Array(fields.origin.serialized.utf8), Array(fields.lookup.utf8), fields.publicKey,
                fields.agreementKey, ephemeral, sealed,
            ]
        )
    }

    private static func grantMAC(
        _ fields: JoinRequestFields,
        code: JoinCode,
        ephemeral: [UInt8],
        sealed: [UInt8]
    )
        -> [UInt8]
    {
        Array(
            HMAC<SHA256>.authenticationCode(
                for: grantMessage(fields, ephemeral: ephemeral, sealed: sealed),
                using: code.macKey
            )
        )
    }

    private static func associatedData(_ fields: JoinRequestFields) -> [UInt8] {
        frame("grant-box", [Array(fields.origin.serialized.utf8), Array(fields.lookup.utf8)])
    }

    private static func boxKey(
        _ secret: SharedSecret,
        _ fields: JoinRequestFields,
        _ ephemeral: [UInt8]
    )
        -> SymmetricKey
    {
        secret.hkdfDerivedSymmetricKey(
            using: SHA256.self,
            salt: frame("grant-salt", [ephemeral, fields.agreementKey]),
            sharedInfo: frame(
                "grant-key",
                [Array(fields.origin.serialized.utf8), Array(fields.lookup.utf8), ephemeral, fields.agreementKey]
            ),
            outputByteCount: 32
        )
    }

    /// `keyhaven-join/v1/<label>`, then each part preceded by its length (4 bytes, big-endian).
    static func frame(_ label: String, _ parts: [[UInt8]]) -> [UInt8] {
        var bytes = Array("keyhaven-join/v1/\(label)".utf8)
        for part in parts {
            let count = UInt32(part.count)
            bytes += [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: count >> $0) }
            bytes += part
        }
        return bytes
    }

    /// The parts of a ``frame(_:_:)`` with `label`, nil unless the bytes are exactly one.
    static func unframe(_ label: String, _ bytes: [UInt8]) -> [[UInt8]]? {
        let prefix = Array("keyhaven-join/v1/\(label)".utf8)
        guard bytes.starts(with: prefix) else { return nil }
        var index = prefix.count
        var parts: [[UInt8]] = []
        while index < bytes.count {
            guard bytes.count - index >= 4 else { return nil }
            let count = bytes[index..<index + 4].reduce(0) { $0 << 8 | Int($1) }
            index += 4
            guard bytes.count - index >= count else { return nil }
            parts.append(Array(bytes[index..<index + count]))
            index += count
        }
        return parts
    }
}
