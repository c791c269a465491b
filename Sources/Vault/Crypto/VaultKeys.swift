import Crypto
import Foundation

/// The keys of an unlocked vault, all derived from one random 256-bit vault key:
///
/// - the vault key itself is stored only wrapped (AES-256-GCM) by a key derived from the master
///   password with scrypt, with the KDF parameters as associated data so they cannot be swapped;
/// - `records` (HKDF-SHA256, info `keyhaven/records/v1`) seals every secret field with AES-256-GCM,
///   the record's identity as associated data;
/// - `lookup` (HKDF-SHA256, info `keyhaven/lookup/v1`) computes the HMAC-SHA256 tags used to find
///   credentials by service and to spot exact duplicates without decrypting;
/// - `integrity` (HKDF-SHA256, info `keyhaven/integrity/v1`) computes the HMAC-SHA256 over the
///   vault's clear state (``VaultIntegrity``), and ``keyCheck`` names the key without revealing it.
///
/// Changing the master password re-keys: a new vault key, every sealed row re-sealed
/// (``Vault/changeMasterPassword(to:kdf:allowInsecureKDF:)``). Keys live in `SymmetricKey`, whose
/// storage swift-crypto zeroes when released.
struct VaultKeys: Sendable {
    let vaultKey: SymmetricKey
    let records: SymmetricKey
    let lookup: SymmetricKey
    let integrity: SymmetricKey

    init(vaultKey: SymmetricKey) {
        self.vaultKey = vaultKey
        records = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: vaultKey,
            info: Data("keyhaven/records/v1".utf8),
            outputByteCount: 32
        )
        lookup = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: vaultKey,
            info: Data("keyhaven/lookup/v1".utf8),
            outputByteCount: 32
        )
        integrity = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: vaultKey,
            info: Data("keyhaven/integrity/v1".utf8),
            outputByteCount: 32
        )
    }

    /// A public name of the vault key (HMAC under the integrity key of a fixed label), stored in
    /// the header: a wrapped key that unwraps but names another key is an old header, or a vault
    /// re-keyed by another process (``VaultError/Code/keyChanged``), not tampering.
    var keyCheck: Data {
        Data(HMAC<SHA256>.authenticationCode(for: Data("keyhaven/key-check/v1".utf8), using: integrity))
    }

    static func generate() -> VaultKeys {
        VaultKeys(vaultKey: SymmetricKey(size: .bits256))
    }

    // MARK: Wrapping

    static func wrappingAD(_ kdf: KDFParameters) -> Data {
        Data("keyhaven/vault-key/v1|scrypt|\(kdf.logN)|\(kdf.r)|\(kdf.p)|".utf8) + kdf.salt
    }

    func wrap(password: String, kdf: KDFParameters) throws -> Data {
        let kek = try kdf.deriveKey(password: password)
        let raw = vaultKey.withUnsafeBytes { Data($0) }
        return try AES.GCM.seal(raw, using: kek, authenticating: Self.wrappingAD(kdf)).combined!
    }

    static func unwrap(_ wrapped: Data, password: String, kdf: KDFParameters) throws -> VaultKeys {
        let kek = try kdf.deriveKey(password: password)
        do {
            let box = try AES.GCM.SealedBox(combined: wrapped)
            let raw = try AES.GCM.open(box, using: kek, authenticating: wrappingAD(kdf))
            return VaultKeys(vaultKey: SymmetricKey(data: raw))
        } catch {
            throw VaultError(.wrongPassword, "wrong master password")
        }
    }

    // MARK: Records

    func seal(_ plaintext: Data, associatedData: String) throws -> Data {
        try AES.GCM.seal(plaintext, using: records, authenticating: Data(associatedData.utf8)).combined!
    }

    func open(_ sealed: Data, associatedData: String) throws -> Data {
        let box = try AES.GCM.SealedBox(combined: sealed)
        return try AES.GCM.open(box, using: records, authenticating: Data(associatedData.utf8))
    }

    /// HMAC-SHA256 of a purpose-labelled value, for lookups.
    func tag(_ purpose: String, _ value: String) -> Data {
        var mac = HMAC<SHA256>(key: lookup)
        mac.update(data: Data(purpose.utf8))
        mac.update(data: [0])
        mac.update(data: Data(value.utf8))
        return Data(mac.finalize())
    }

    /// The duplicate-detection tag of a credential's content: title, services, user, password,
    /// notes, TOTP and folder, length-prefixed so no two contents share an encoding.
    func contentTag(_ content: CredentialContent) -> Data {
        var mac = HMAC<SHA256>(key: lookup)
        mac.update(data: Data("content/v1".utf8))
        func field(_ value: String?) {
            guard let value else {
                mac.update(data: [0])
                return
            }
            let bytes = Data(value.utf8)
            mac.update(data: [1])
            withUnsafeBytes(of: UInt64(bytes.count).bigEndian) { mac.update(data: Data($0)) }
            mac.update(data: bytes)
        }
        field(content.title)
        field(String(content.services.count))
        for service in content.services { field(service.identifier) }
        field(content.user)
        field(content.password)
        field(content.notes)
        field(content.totp)
        field(content.folder)
        return Data(mac.finalize())
    }
}
