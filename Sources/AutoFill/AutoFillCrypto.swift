public import Crypto
public import Foundation
import _KeyhavenSupport

/// The protocol's keys (docs/autofill-protocol.md §2.2–2.3): a pairing key agreed with CPace from
/// the 6-digit code (``PairingExchange``), and per connection a session key for AES-256-GCM.
public enum AutoFillCrypto {
    static let pairingInfo = Data("keyhaven-autofill-pairing-v2".utf8)
    static let sessionInfo = Data("keyhaven-autofill-session-v1".utf8)

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

/// What both sides of one pairing try put into CPace (docs/autofill-protocol.md §2.2). They agree
/// on a key only when every field is the same on both sides: the code, and who pairs with whom.
public struct PairingContext: Sendable, Hashable {
    /// The 6 digits the agent showed and the person typed.
    public var code: String
    /// The agent's `pairingRequest` id.
    public var request: String
    /// `chromium` or `firefox`, and the caller (Chromium: `chrome-extension://ID/`, Firefox: the
    /// extension id): what the native host took from its command line, which the browser wrote.
    public var browser: String
    public var caller: String
    /// Fresh for each try: the extension's (in `pair.begin`) and the agent's (in its reply).
    public var clientNonce: Data
    public var agentNonce: Data

    public init(code: String, request: String, browser: String, caller: String, clientNonce: Data, agentNonce: Data) {
        (self.code, self.request, self.browser, self.caller) = (code, request, browser, caller)
        (self.clientNonce, self.agentNonce) = (clientNonce, agentNonce)
    }

    /// PRS = "keyhaven-pairing-code:" ‖ the code.
    var prs: Data { Data("keyhaven-pairing-code:\(code)".utf8) }

    /// CI = lv_cat("keyhaven-autofill-pairing-v2", "agent", "extension", browser, caller, request):
    /// the initiator's role first, then the responder's with its identity.
    var ci: Data {
        CPace.lvCat(
            AutoFillCrypto.pairingInfo,
            Data("agent".utf8),
            Data("extension".utf8),
            Data(browser.utf8),
            Data(caller.utf8),
            Data(request.utf8)
        )
    }

    /// sid = clientNonce ‖ agentNonce.
    var sid: Data { clientNonce + agentNonce }
}

/// One side's part of one pairing try: CPace with the agent as initiator (its share goes out
/// first, in `pair.begin`'s reply) and the extension as responder, both associated data empty.
public struct PairingExchange: Sendable {
    public enum Role: Sendable { case agent, extensionSide }

    public let role: Role
    let context: PairingContext
    let scalar: Data
    /// Y = X25519(scalar, g): what this side sends.
    public let share: Data

    /// A side with a fresh 32-byte `scalar` (never reused).
    public init(role: Role, context: PairingContext, scalar: Data) throws(AutoFillError) {
        let generator = CPace.generator(prs: context.prs, ci: context.ci, sid: context.sid)
        guard let share = CPace.scalarMultiply(scalar, generator) else {
            throw AutoFillError(.failed, "The pairing could not start (a scalar of 32 random bytes is needed).")
        }
        self.role = role
        self.context = context
        self.scalar = scalar
        self.share = share
    }

    /// What both sides derive once they have the other's share: both confirmation tags and the
    /// pairing key. Throws `badRequest` when the other share is a low-order point (CPace aborts).
    public func keys(otherShare: Data) throws(AutoFillError) -> PairingKeys {
        guard let k = CPace.scalarMultiply(scalar, otherShare) else {
            throw AutoFillError(.badRequest, "The other side's pairing share is not a valid X25519 point.")
        }
        let (agentShare, clientShare) = role == .agent ? (share, otherShare) : (otherShare, share)
        let sid = context.sid
        let isk = CPace.intermediateSessionKey(sid: sid, k: k, ya: agentShare, yb: clientShare)
        let macKey = CPace.macKey(sid: sid, isk: isk)
        return PairingKeys(
            agentConfirm: CPace.confirmation(macKey: macKey, share: agentShare),
            clientConfirm: CPace.confirmation(macKey: macKey, share: clientShare),
            pairingKey: HKDF<SHA256>.deriveKey(
                inputKeyMaterial: SymmetricKey(data: isk),
                salt: sid,
                info: AutoFillCrypto.pairingInfo,
                outputByteCount: 32
            )
        )
    }
}

/// The outcome of a pairing try on one side: the tags each side sends to show it holds the same
/// ISK (so the same code), and the pairing key `HKDF-SHA256(ISK, salt: sid, info: pairing-v2)`.
public struct PairingKeys: Sendable {
    public let agentConfirm: Data
    public let clientConfirm: Data
    public let pairingKey: SymmetricKey
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
