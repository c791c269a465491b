import AutoFill
import Foundation
import NIOCore
import NIOFoundationCompat
import Synchronization
import _KeyhavenSupport

/// One browser's connection through `keyhaven browser-host`: hello, pairing and `session.open` in
/// the clear, then sealed requests and replies, with events pushed as they happen. Replies and events
/// go out through one writer, in the order their counters were sealed in.
final class BrowserConnection: Sendable {
    let server: AgentServer
    let caller: String
    let browser: String
    /// The session (nil before `session.open`) and its pairing; sealing and opening go through
    /// this lock so the counters stay in order.
    let session = Mutex<(channel: SessionChannel, pairingId: String)?>(nil)

    init(server: AgentServer, hello: BrowserHostHello) {
        self.server = server
        caller = hello.caller
        browser = hello.browser
    }

    var agent: AutoFillAgent { server.agent }

    func run(
        _ frames: inout NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator,
        _ outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
    ) async throws {
        // In the clear until `session.open`.
        var pairingId: String?
        while pairingId == nil {
            guard let frame = try await frames.next(), let message = BrowserClearMessage.read(Data(buffer: frame))
            else {
                return
            }
            // The pairing messages are protocol 2's (CPace); the rest of the protocol is unchanged.
            let reply: JSONValue
            do throws(AutoFillError) {
                let (ok, opened) = try await clear(try message.request.get())
                reply = BrowserReply.json(id: message.id, version: message.version, .success(ok))
                if let opened {
                    session.withLock { $0 = opened }
                    pairingId = opened.1
                }
            } catch {
                reply = BrowserReply.json(id: message.id, version: message.version, .failure(error))
            }
            // The reply to session.open goes out in the clear, before anything sealed.
            try await outbound.write(ByteBuffer(bytes: reply.encoded()))
        }
        guard let pairingId else { return }
        // Sealed: replies and the agent's events through one writer.
        // Each is a plaintext to seal: a reply, or an event (``BrowserEvent``, which writes its own `v`).
        let (outgoing, sink) = AsyncStream.makeStream(of: Data.self)
        let listener = await agent.addListener(pairingId: pairingId) { event in sink.yield(event.encoded()) }
        defer { sink.finish() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for await message in outgoing {
                    guard let frame = self.seal(message) else { throw FrameError(code: .truncated) }
                    try await outbound.write(ByteBuffer(bytes: frame.encoded()))
                }
            }
            while let frame = try await frames.next() {
                guard let reply = await openAndAnswer(Data(buffer: frame)) else { break }
                sink.yield(reply.encoded())
            }
            sink.finish()
            try await group.next()
            group.cancelAll()
        }
        await agent.removeListener(listener)
    }

    /// A message in the clear: `hello`, `pair.begin`, `pair.finish`, `session.open`.
    func clear(
        _ request: BrowserClearRequest
    ) async throws(AutoFillError) -> (any BrowserProtocolObject, (SessionChannel, String)?) {
        switch request {
        case .hello:
            let state: BrowserReply.LockState = await agent.isUnlocked ? .unlocked : .locked
            return (BrowserReply.Hello(protocol: Self.protocolVersion, agentVersion: server.version, state: state), nil)
        case .pairBegin(let begin):
            let offer = try await agent.beginPairing(
                clientNonce: begin.clientNonce,
                request: begin.pairingRequest,
                caller: caller,
                browser: browser
            )
            return (BrowserReply.PairingOffer(offer), nil)
        case .pairFinish(let finish):
            let (id, agentConfirm) = try await agent.finishPairing(
                request: finish.pairingRequest,
                clientShare: finish.clientShare,
                clientConfirm: finish.clientConfirm
            )
            return (BrowserReply.Paired(pairingId: id, agentConfirm: agentConfirm), nil)
        case .sessionOpen(let open):
            let (agentNonce, channel) = try await agent.openSession(
                pairingId: open.pairingId,
                clientNonce: open.clientNonce
            )
            return (BrowserReply.SessionOpened(agentNonce: agentNonce), (channel, open.pairingId))
        }
    }

    /// The protocol `hello` announces: 2 since pairing is CPace (docs/autofill-protocol.md §2.2;
    /// an extension of protocol 1 is told to update: ``PairingVersionRule``).
    static let protocolVersion = 2

    /// A sealed request, opened and answered: the reply (to seal), nil to end the connection (a
    /// frame that does not open or is out of order).
    func openAndAnswer(_ frame: Data) async -> JSONValue? {
        guard let message = try? JSONValue.parse(frame), let counter = message["n"]?.integer, counter > 0,
            let text = message["sealed"]?.string, let sealed = Base64URL.decode(text)
        else { return nil }
        let opened = session.withLock { state -> (Data, String)? in
            guard var current = state,
                let plaintext = try? current.channel.open(counter: UInt64(counter), sealed: Data(sealed))
            else { return nil }
            state = current
            return (plaintext, current.pairingId)
        }
        guard let (plaintext, pairingId) = opened else { return nil }
        return await agent.handle(plaintext, pairingId: pairingId)
    }

    /// Seals one message (a reply's or an event's plaintext) under the session lock: the frame to write.
    func seal(_ plaintext: Data) -> JSONValue? {
        session.withLock { state -> JSONValue? in
            guard var current = state, let (counter, sealed) = try? current.channel.seal(plaintext) else {
                return nil
            }
            state = current
            return ["v": 1, "n": .number(Double(counter)), "sealed": .string(Base64URL.encode(sealed))]
        }
    }
}
