import Crypto
import Foundation
import Testing

@testable import AutoFill

@Suite struct AutoFillCryptoTests {
    func pair() throws -> (SessionChannel, SessionChannel) {
        let key = SymmetricKey(size: .bits256)
        let session = AutoFillCrypto.sessionKey(
            pairingKey: key,
            clientNonce: Data(count: 16),
            agentNonce: Data(repeating: 1, count: 16)
        )
        return (SessionChannel(key: session, side: .extensionSide), SessionChannel(key: session, side: .agent))
    }

    @Test func sealedMessagesOpenOnTheOtherSideInOrderOnly() throws {
        var (browser, agent) = try pair()
        let first = try browser.seal(Data("one".utf8))
        let second = try browser.seal(Data("two".utf8))
        #expect(first.counter == 1 && second.counter == 2)
        // One skipped:
        #expect(throws: AutoFillError.self) { try agent.open(counter: second.counter, sealed: second.sealed) }
        #expect(try agent.open(counter: first.counter, sealed: first.sealed) == Data("one".utf8))
        // A replay:
        #expect(throws: AutoFillError.self) { try agent.open(counter: first.counter, sealed: first.sealed) }
        #expect(try agent.open(counter: second.counter, sealed: second.sealed) == Data("two".utf8))
    }

    @Test func aFrameSealedByOneSideCannotBeReflectedBackToIt() throws {
        var (browser, agent) = try pair()
        let fromAgent = try agent.seal(Data("reply".utf8))
        // The same key, but the direction is part of the nonce: the agent's own frame does not open as the browser's.
        #expect(throws: AutoFillError.self) { try agent.open(counter: fromAgent.counter, sealed: fromAgent.sealed) }
        #expect(try browser.open(counter: fromAgent.counter, sealed: fromAgent.sealed) == Data("reply".utf8))
    }

    @Test func aFlippedBitOrAnotherKeyDoesNotOpen() throws {
        var (browser, agent) = try pair()
        var sealed = try browser.seal(Data("secret".utf8))
        sealed.sealed[0] ^= 1
        #expect(throws: AutoFillError.self) { try agent.open(counter: 1, sealed: sealed.sealed) }
        var stranger = SessionChannel(key: SymmetricKey(size: .bits256), side: .agent)
        let other = try browser.seal(Data("secret".utf8))
        #expect(throws: AutoFillError.self) { try stranger.open(counter: 1, sealed: other.sealed) }
    }
}
