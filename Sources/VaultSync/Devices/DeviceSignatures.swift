internal import Crypto
public import _KeyhavenSupport

/// What a device signs with its own Ed25519 key, and how the server checks it. Every message starts
/// with its own label, so a signature made for one purpose is never valid for another, and names
/// the server it is meant for (`server`, the origin of the URL the device talks to): a server that
/// relays another server's challenge to a device (or an approval, or an enrolment) gets a signature
/// for itself, which the other server refuses (threat S4 in docs/threat-model.md). All four
/// messages carry it: the token answer (the relay S4 is about); the enrolment and the approval
/// (account ids are chosen by servers, so a hostile server could give its account the id of the
/// person's account elsewhere and have a device approve a key "for it"); and the account creation
/// (relayed, it would enrol the device's key on the other server, where it could then never be
/// enrolled again).
///
/// A device's key pair is made on the device and never leaves it; the server stores the public key
/// only. Nothing here is the master password or derived from it: a server (or a thief of its
/// database) learns nothing that allows guessing the master password offline.
public enum DeviceSignatures {
    /// The length of an Ed25519 public key (raw).
    public static let publicKeyLength = 32

    /// Proof that whoever creates an account holds the first device's private key.
    public static func accountCreation(server: ServiceOrigin, publicKey: [UInt8]) -> [UInt8] {
        message("create-account", server, [publicKey])
    }

    /// A device's answer to a server challenge (the sync server's `SyncService.token`).
    public static func tokenRequest(server: ServiceOrigin, device: String, challenge: [UInt8]) -> [UInt8] {
        message("token", server, [Array(device.utf8), challenge])
    }

    /// An enrolled device's approval of a new device's key for `account` (`keyhaven device approve`).
    public static func approval(server: ServiceOrigin, account: String, newPublicKey: [UInt8]) -> [UInt8] {
        message("approve", server, [Array(account.utf8), newPublicKey])
    }

    /// The new device's proof that it holds the key being enrolled.
    public static func enrolment(server: ServiceOrigin, account: String, newPublicKey: [UInt8]) -> [UInt8] {
        message("enroll", server, [Array(account.utf8), newPublicKey])
    }

    /// A device's id: the first 16 bytes of SHA-256 over its public key, in hex. The same key is
    /// the same device everywhere, so a key cannot be enrolled twice.
    public static func deviceID(publicKey: [UInt8]) -> String {
        Hex.encode(SHA256.hash(data: publicKey).prefix(16))
    }

    /// True when `signature` is `publicKey`'s Ed25519 signature of `message`.
    public static func verify(_ signature: [UInt8], of message: [UInt8], by publicKey: [UInt8]) -> Bool {
        guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: publicKey) else { return false }
        return key.isValidSignature(signature, for: message)
    }

    /// `keyhaven-sync/v2/<label>`, then the server's origin (``_KeyhavenSupport/ServiceOrigin/serialized``,
    /// `scheme://host[:port]`, the port only when not the scheme's default) and each part, each
    /// preceded by its length (4 bytes, big-endian). Version 1 named no server.
    private static func message(_ label: String, _ server: ServiceOrigin, _ parts: [[UInt8]]) -> [UInt8] {
        var bytes = Array("keyhaven-sync/v2/\(label)".utf8)
        for part in [Array(server.serialized.utf8)] + parts {
            let count = UInt32(part.count)
            bytes += [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: count >> $0) }
            bytes += part
        }
        return bytes
    }
}
