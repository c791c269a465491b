import Crypto
import Foundation
import KeyhavenTesting
import Testing
import _KeyhavenSupport

@testable import AutoFill

/// The pairing (CPace), the session key and sealed frames against fixed vectors that PyPI
/// `cryptography` and Python's integers computed (scripts/gen-autofill-vectors.py, which first checks
/// itself against the draft's vectors); the extension's crypto.js is checked against the same file.
@Suite struct AutoFillVectorTests {
    struct Vectors: Decodable {
        struct Pairing: Decodable {
            var code, pairingRequest, browser, caller, clientNonce, agentNonce, agentScalar, clientScalar: String
            var prs, ci, sid, generator, agentShare, clientShare, isk, agentConfirm, clientConfirm, pairingKey: String
        }
        struct Session: Decodable {
            struct Frame: Decodable {
                var direction: Int
                var counter: UInt64
                var plaintext: String
                var sealed: String
            }
            var pairingKey, clientNonce, agentNonce, sessionKey: String
            var frames: [Frame]
        }
        var pairing: Pairing
        var session: Session
    }

    static func bytes(_ hex: String) -> Data { Data(Hex.decode(hex)!) }

    static func hex(_ data: some Sequence<UInt8>) -> String { Hex.encode(data) }

    let vectors: Vectors

    init() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/autofill-vectors.json")
        vectors = try JSONDecoder().decode(Vectors.self, from: Data(contentsOf: url))
    }

    var context: PairingContext {
        let pairing = vectors.pairing
        return PairingContext(
            code: pairing.code,
            request: pairing.pairingRequest,
            browser: pairing.browser,
            caller: pairing.caller,
            clientNonce: Self.bytes(pairing.clientNonce),
            agentNonce: Self.bytes(pairing.agentNonce)
        )
    }

    @Test func bothSidesOfThePairingDeriveTheVectorsKeysAndTags() throws {
        let pairing = vectors.pairing
        #expect(Self.hex(context.prs) == pairing.prs)
        #expect(Self.hex(context.ci) == pairing.ci)
        #expect(Self.hex(context.sid) == pairing.sid)
        #expect(Self.hex(CPace.generator(prs: context.prs, ci: context.ci, sid: context.sid)) == pairing.generator)
        let agent = try PairingExchange(role: .agent, context: context, scalar: Self.bytes(pairing.agentScalar))
        let client = try PairingExchange(
            role: .extensionSide,
            context: context,
            scalar: Self.bytes(pairing.clientScalar)
        )
        #expect(Self.hex(agent.share) == pairing.agentShare)
        #expect(Self.hex(client.share) == pairing.clientShare)
        for keys in [try agent.keys(otherShare: client.share), try client.keys(otherShare: agent.share)] {
            #expect(Self.hex(keys.agentConfirm) == pairing.agentConfirm)
            #expect(Self.hex(keys.clientConfirm) == pairing.clientConfirm)
            #expect(keys.pairingKey.withUnsafeBytes { Self.hex($0) } == pairing.pairingKey)
        }
        #expect(pairing.pairingKey == vectors.session.pairingKey)
    }

    @Test func anyOtherCodeOrPartyGivesOtherTags() throws {
        let pairing = vectors.pairing
        let agent = try PairingExchange(role: .agent, context: context, scalar: Self.bytes(pairing.agentScalar))
        var variants: [PairingContext] = []
        for change in 0..<4 {
            var other = context
            switch change {
            case 0: other.code = "492818"
            case 1: other.browser = "firefox"
            case 2: other.caller = "chrome-extension://aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/"
            default: other.request = "another-request"
            }
            variants.append(other)
        }
        for other in variants {
            let client = try PairingExchange(
                role: .extensionSide,
                context: other,
                scalar: Self.bytes(pairing.clientScalar)
            )
            let keys = try client.keys(otherShare: agent.share)
            #expect(try agent.keys(otherShare: client.share).clientConfirm != keys.clientConfirm)
            #expect(Self.hex(keys.agentConfirm) != pairing.agentConfirm)
        }
    }

    @Test func sessionsSealAndOpenTheVectorsFrames() throws {
        let vectors = self.vectors.session
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
