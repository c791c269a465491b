import Foundation

/// WebAuthn's authenticator data (§6.1): the RP ID's SHA-256, flags, the signature counter, and at
/// registration the attested credential (AAGUID, credential id, public key).
public struct AuthenticatorData: Sendable, Hashable {
    public struct Flags: OptionSet, Sendable, Hashable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// User present.
        public static let userPresent = Flags(rawValue: 0x01)
        /// User verified.
        public static let userVerified = Flags(rawValue: 0x04)
        /// Backup eligible: the credential may be synced.
        public static let backupEligible = Flags(rawValue: 0x08)
        /// Backed up.
        public static let backedUp = Flags(rawValue: 0x10)
        /// Attested credential data follows.
        public static let attestedCredentialData = Flags(rawValue: 0x40)
        /// Extensions follow.
        public static let extensionData = Flags(rawValue: 0x80)
    }

    public struct AttestedCredential: Sendable, Hashable {
        public var aaguid: [UInt8]
        public var credentialID: [UInt8]
        public var publicKey: COSEKey

        public init(aaguid: [UInt8], credentialID: [UInt8], publicKey: COSEKey) {
            self.aaguid = aaguid
            self.credentialID = credentialID
            self.publicKey = publicKey
        }
    }

    public var rpIDHash: [UInt8]
    public var flags: Flags
    public var signCount: UInt32
    public var attestedCredential: AttestedCredential?
    public var extensions: CBOR?

    public init(
        rpIDHash: [UInt8],
        flags: Flags,
        signCount: UInt32,
        attestedCredential: AttestedCredential? = nil,
        extensions: CBOR? = nil
    ) {
        self.rpIDHash = rpIDHash
        self.flags = flags
        self.signCount = signCount
        self.attestedCredential = attestedCredential
        self.extensions = extensions
    }

    /// The bytes, with the AT and ED flags set from what is present.
    public func encoded() -> [UInt8] {
        var flags = self.flags.subtracting([.attestedCredentialData, .extensionData])
        if attestedCredential != nil { flags.insert(.attestedCredentialData) }
        if extensions != nil { flags.insert(.extensionData) }
        var out = rpIDHash + [flags.rawValue]
        withUnsafeBytes(of: signCount.bigEndian) { out += $0 }
        if let credential = attestedCredential {
            out += credential.aaguid
            out += [UInt8(credential.credentialID.count >> 8), UInt8(credential.credentialID.count & 0xFF)]
            out += credential.credentialID
            out += credential.publicKey.cbor.encoded()
        }
        if let extensions { out += extensions.encoded() }
        return out
    }

    /// Reads authenticator data; refuses a wrong length, a credential id over 1023 bytes (§6.1),
    /// a key that is not ES256 or Ed25519, and trailing bytes.
    public init(_ bytes: [UInt8]) throws(PasskeyError) {
        func bad(_ message: String, line: UInt = #line) -> PasskeyError {
            PasskeyError(.invalidAuthenticatorData, message, line: line)
        }
        guard bytes.count >= 37 else { throw bad("shorter than 37 bytes") }
        rpIDHash = Array(bytes[0..<32])
        flags = Flags(rawValue: bytes[32])
        signCount = bytes[33..<37].reduce(0) { $0 << 8 | UInt32($1) }
        var position = 37
        if flags.contains(.attestedCredentialData) {
            guard bytes.count >= position + 18 else { throw bad("the attested credential data is cut short") }
            let aaguid = Array(bytes[position..<(position + 16)])
            let length = Int(bytes[position + 16]) << 8 | Int(bytes[position + 17])
            position += 18
            guard length <= 1023, bytes.count >= position + length else { throw bad("the credential id is too long") }
            let credentialID = Array(bytes[position..<(position + length)])
            position += length
            let key: CBOR
            let consumed: Int
            do {
                (key, consumed) = try CBOR.decodePrefix(bytes[position...], maximumDepth: 4)
            } catch {
                throw bad("the credential public key is not CBOR (\(error.code))")
            }
            position += consumed
            attestedCredential = AttestedCredential(
                aaguid: aaguid,
                credentialID: credentialID,
                publicKey: try COSEKey(cbor: key)
            )
        } else {
            attestedCredential = nil
        }
        if flags.contains(.extensionData) {
            do {
                let (item, consumed) = try CBOR.decodePrefix(bytes[position...], maximumDepth: 8)
                guard item.pairs != nil else { throw bad("the extensions are not a map") }
                extensions = item
                position += consumed
            } catch let error as PasskeyError {
                throw error
            } catch {
                throw bad("the extensions are not CBOR")
            }
        } else {
            extensions = nil
        }
        guard position == bytes.count else { throw bad("bytes follow the authenticator data") }
    }
}
