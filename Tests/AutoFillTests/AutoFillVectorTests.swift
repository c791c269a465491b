import Crypto
import Foundation
import KeyhavenTesting
import Testing
import _KeyhavenSupport

@testable import AutoFill

/// The handshake and sealed frames against fixed vectors that PyPI `cryptography` computed
/// (scripts/gen-autofill-vectors.py); the extension's crypto.js is checked against the same file.
@Suite struct AutoFillVectorTests {
    struct Vectors: Decodable {
        struct Frame: Decodable {
            var direction: Int
            var counter: UInt64
            var plaintext: String
            var sealed: String
        }
        var clientPrivateKey, agentPrivateKey, clientPublicKey, agentPublicKey, pairingKey: String
        var code, proof, clientNonce, agentNonce, sessionKey: String
        var frames: [Frame]
    }

    static func bytes(_ hex: String) -> Data { Data(Hex.decode(hex)!) }

    static func hex(_ data: some Sequence<UInt8>) -> String { Hex.encode(data) }

    let vectors: Vectors

    init() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/autofill-vectors.json")
        vectors = try JSONDecoder().decode(Vectors.self, from: Data(contentsOf: url))
    }

    @Test func theAgentDerivesThePairingKeyAndChecksTheProof() throws {
        let agent = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: Self.bytes(vectors.agentPrivateKey))
        #expect(Self.hex(agent.publicKey.rawRepresentation) == vectors.agentPublicKey)
        let key = try AutoFillCrypto.pairingKey(
            agentPrivateKey: agent,
            clientPublicKey: Self.bytes(vectors.clientPublicKey)
        )
        #expect(key.withUnsafeBytes { Self.hex($0) } == vectors.pairingKey)
        #expect(Self.hex(AutoFillCrypto.proof(code: vectors.code, pairingKey: key)) == vectors.proof)
        #expect(AutoFillCrypto.verify(proof: Self.bytes(vectors.proof), code: vectors.code, pairingKey: key))
        #expect(!AutoFillCrypto.verify(proof: Self.bytes(vectors.proof), code: "492818", pairingKey: key))
    }

    @Test func sessionsSealAndOpenTheVectorsFrames() throws {
        let session = AutoFillCrypto.sessionKey(
            pairingKey: SymmetricKey(data: Self.bytes(vectors.pairingKey)),
            clientNonce: Self.bytes(vectors.clientNonce),
            agentNonce: Self.bytes(vectors.agentNonce)
        )
        #expect(session.withUnsafeBytes { Self.hex($0) } == vectors.sessionKey)
        var extensionSide = SessionChannel(key: session, side: .extensionSide)
        var agentSide = SessionChannel(key: session, side: .agent)
        for frame in vectors.frames {
            let plaintext = Data(frame.plaintext.utf8)
            if frame.direction == 1 {
                let (counter, sealed) = try extensionSide.seal(plaintext)
                #expect(counter == frame.counter && Self.hex(sealed) == frame.sealed)
                #expect(try agentSide.open(counter: frame.counter, sealed: Self.bytes(frame.sealed)) == plaintext)
            } else {
                let (counter, sealed) = try agentSide.seal(plaintext)
                #expect(counter == frame.counter && Self.hex(sealed) == frame.sealed)
                #expect(try extensionSide.open(counter: frame.counter, sealed: Self.bytes(frame.sealed)) == plaintext)
            }
        }
    }
}
