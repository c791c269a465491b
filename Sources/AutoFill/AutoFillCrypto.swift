public import Crypto
public import Foundation
import _KeyhavenSupport

/// The protocol's keys (docs/autofill-protocol.md §2.2–2.3): X25519 between the extension and the
/// agent, HKDF-SHA256 to a pairing key, a 6-digit code proven with HMAC-SHA256, and per connection
/// a session key for AES-256-GCM.
public enum AutoFillCrypto {
    static let pairingInfo = Data("keyhaven-autofill-pairing-v1".utf8)
    static let sessionInfo = Data("keyhaven-autofill-session-v1".utf8)

    /// `HKDF-SHA256(shared, salt: clientPublicKey ‖ agentPublicKey, info: pairing, 32 bytes)`.
    public static func pairingKey(
        agentPrivateKey: Curve25519.KeyAgreement.PrivateKey,
        clientPublicKey: Data
    ) throws -> SymmetricKey {
        let client = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: clientPublicKey)
        let shared = try agentPrivateKey.sharedSecretFromKeyAgreement(with: client)
        let salt = clientPublicKey + agentPrivateKey.publicKey.rawRepresentation
        return shared.hkdfDerivedSymmetricKey(
            using: SHA256.self,
            salt: salt,
            sharedInfo: pairingInfo,
            outputByteCount: 32
        )
    }

    /// The same key on the extension's side (what `crypto.js` computes; in-process clients — tests,
    /// benchmarks — pair with it).
    public static func pairingKey(
        clientPrivateKey: Curve25519.KeyAgreement.PrivateKey,
        agentPublicKey: Data
    ) throws -> SymmetricKey {
        let agent = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: agentPublicKey)
        let shared = try clientPrivateKey.sharedSecretFromKeyAgreement(with: agent)
        return shared.hkdfDerivedSymmetricKey(
            using: SHA256.self,
            salt: clientPrivateKey.publicKey.rawRepresentation + agentPublicKey,
            sharedInfo: pairingInfo,
            outputByteCount: 32
        )
    }

    /// The extension's proof that the person typed `code`: `HMAC-SHA256(pairingKey, "keyhaven-pair|" + code)`.
    public static func proof(code: String, pairingKey: SymmetricKey) -> Data {
        Data(HMAC<SHA256>.authenticationCode(for: Data("keyhaven-pair|\(code)".utf8), using: pairingKey))
    }

    /// Whether `proof` proves `code` (constant time).
    public static func verify(proof: Data, code: String, pairingKey: SymmetricKey) -> Bool {
        constantTimeEqual(proof, self.proof(code: code, pairingKey: pairingKey))
    }

    /// `HKDF-SHA256(pairingKey, salt: clientNonce ‖ agentNonce, info: session, 32 bytes)`.
    public static func sessionKey(pairingKey: SymmetricKey, clientNonce: Data, agentNonce: Data) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: pairingKey,
            salt: clientNonce + agentNonce,
            info: sessionInfo,
            outputByteCount: 32
        )
    }
}

/// One session's sealing state, for one side: AES-256-GCM with a counter nonce per direction.
/// A plain struct: the connection that owns it serialises its use.
public struct SessionChannel: Sendable {
    public enum Side: Sendable { case agent, extensionSide }

    let key: SymmetricKey
    let side: Side
    /// The counter of the last frame sent / received.
    private(set) var sent: UInt64 = 0
    private(set) var received: UInt64 = 0

    public init(key: SymmetricKey, side: Side) {
        self.key = key
        self.side = side
    }

    static func nonce(direction: UInt32, counter: UInt64) -> Data {
        var bytes = Data()
        withUnsafeBytes(of: direction.bigEndian) { bytes.append(contentsOf: $0) }
        withUnsafeBytes(of: counter.bigEndian) { bytes.append(contentsOf: $0) }
        return bytes
    }

    private var sendDirection: UInt32 { side == .extensionSide ? 1 : 2 }
    private var receiveDirection: UInt32 { side == .extensionSide ? 2 : 1 }

    /// Seals `plaintext` as the next frame: `(counter, ciphertext ‖ tag)`.
    public mutating func seal(_ plaintext: Data) throws -> (counter: UInt64, sealed: Data) {
        sent += 1
        let nonce = try AES.GCM.Nonce(data: Self.nonce(direction: sendDirection, counter: sent))
        let box = try AES.GCM.seal(plaintext, using: key, nonce: nonce)
        var sealed = Data(capacity: box.ciphertext.count + 16)  // indices from 0, whatever the box's are
        sealed.append(contentsOf: box.ciphertext)
        sealed.append(contentsOf: box.tag)
        return (sent, sealed)
    }

    /// Opens the next frame from the other side; it must carry the next counter.
    public mutating func open(counter: UInt64, sealed: Data) throws(AutoFillError) -> Data {
        guard counter == received + 1 else {
            throw AutoFillError(.badRequest, "A sealed message arrived out of order.")
        }
        guard sealed.count >= 16,
            let nonce = try? AES.GCM.Nonce(data: Self.nonce(direction: receiveDirection, counter: counter)),
            let box = try? AES.GCM.SealedBox(nonce: nonce, ciphertext: sealed.dropLast(16), tag: sealed.suffix(16)),
            let plaintext = try? AES.GCM.open(box, using: key)
        else {
            throw AutoFillError(.notPaired, "A sealed message did not open: the pairing key does not match.")
        }
        received = counter
        return plaintext
    }
}
