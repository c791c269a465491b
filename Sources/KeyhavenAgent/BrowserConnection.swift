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

    init(server: AgentServer, hello: JSONValue) {
        self.server = server
        caller = hello["caller"]?.string ?? ""
        browser = hello["browser"]?.string ?? ""
    }

    var agent: AutoFillAgent { server.agent }

    func run(
        _ frames: inout NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator,
        _ outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
    ) async throws {
        // In the clear until `session.open`.
        var pairingId: String?
        while pairingId == nil {
            guard let frame = try await frames.next(), let message = try? JSONValue.parse(Data(buffer: frame)) else {
                return
            }
            let id = message["id"] ?? .null
            // The pairing messages are protocol 2's (CPace); the rest of the protocol is unchanged.
            let version: JSONValue = message["v"]?.integer == 2 ? 2 : 1
            let reply: JSONValue
            do {
                let (ok, opened) = try await clear(message)
                reply = ["v": version, "id": id, "ok": ok]
                if let opened {
                    session.withLock { $0 = opened }
                    pairingId = opened.1
                }
            } catch {
                reply = ["v": version, "id": id, "error": error.json]
            }
            // The reply to session.open goes out in the clear, before anything sealed.
            try await outbound.write(ByteBuffer(bytes: reply.encoded()))
        }
        guard let pairingId else { return }
        // Sealed: replies and the agent's events through one writer.
        let (outgoing, sink) = AsyncStream.makeStream(of: JSONValue.self)
        let listener = await agent.addListener(pairingId: pairingId) { event in
            guard case .object(var members) = event else { return }
            members["v"] = 1
            sink.yield(.object(members))
        }
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
                sink.yield(reply)
            }
            sink.finish()
            try await group.next()
            group.cancelAll()
        }
        await agent.removeListener(listener)
    }

    /// A message in the clear: `hello`, `pair.begin`, `pair.finish`, `session.open`.
    func clear(_ message: JSONValue) async throws(AutoFillError) -> (JSONValue, (SessionChannel, String)?) {
        func bytes(_ name: String) throws(AutoFillError) -> Data {
            guard let text = message[name]?.string, let bytes = Base64URL.decode(text) else {
                throw AutoFillError(.badRequest, "\(name) is missing or not base64url.")
            }
            return Data(bytes)
        }
        switch message["type"]?.string ?? "" {
        case "hello":
            return (
                [
                    "protocol": .number(Double(Self.protocolVersion)), "agentVersion": .string(server.version),
                    "state": await agent.isUnlocked ? "unlocked" : "locked",
                ],
                nil
            )
        case "pair.begin":
            try Self.requireProtocol2(message)
            let offer = try await agent.beginPairing(
                clientNonce: try bytes("clientNonce"),
                request: message["pairingRequest"]?.string,
                caller: caller,
                browser: browser
            )
            return (
                [
                    "pairingRequest": .string(offer.request),
                    "agentNonce": .string(Base64URL.encode(offer.agentNonce)),
                    "agentShare": .string(Base64URL.encode(offer.agentShare)),
                    "suite": "CPACE-X25519-SHA512",
                ],
                nil
            )
        case "pair.finish":
            try Self.requireProtocol2(message)
            guard let request = message["pairingRequest"]?.string else {
                throw AutoFillError(.badRequest, "pairingRequest is missing.")
            }
            let (id, agentConfirm) = try await agent.finishPairing(
                request: request,
                clientShare: try bytes("clientShare"),
                clientConfirm: try bytes("clientConfirm")
            )
            return (["pairingId": .string(id), "agentConfirm": .string(Base64URL.encode(agentConfirm))], nil)
        case "session.open":
            guard let pairingId = message["pairingId"]?.string else {
                throw AutoFillError(.badRequest, "pairingId is missing.")
            }
            let (agentNonce, channel) = try await agent.openSession(
                pairingId: pairingId,
                clientNonce: try bytes("clientNonce")
            )
            return (["agentNonce": .string(Base64URL.encode(agentNonce))], (channel, pairingId))
        default:
            throw AutoFillError(.notPaired, "Open a session first (pair this browser with Keyhaven).")
        }
    }

    /// The protocol `hello` announces: 2 since pairing is CPace (docs/autofill-protocol.md §2.2).
    static let protocolVersion = 2

    /// An extension from before protocol 2 pairs with an X25519 key and an HMAC of the code, which a
    /// relay could test offline: it is told to update rather than answered.
    static func requireProtocol2(_ message: JSONValue) throws(AutoFillError) {
        guard message["v"]?.integer == 2, message["clientPublicKey"] == nil else {
            throw AutoFillError(
                .badRequest,
                "This Keyhaven extension is older than Keyhaven's agent: it pairs with protocol 1, and the agent "
                    + "pairs with protocol 2 only. Update the extension (`keyhaven browser extension --output DIR`, "
                    + "then reload it in the browser) and pair again."
            )
        }
    }

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
        guard let request = try? JSONValue.parse(plaintext) else {
            return ["v": 1, "id": .null, "error": AutoFillError(.badRequest, "The message is not JSON.").json]
        }
        return await agent.handle(request, pairingId: pairingId)
    }

    /// Seals one message (reply or event) under the session lock: the frame to write.
    func seal(_ message: JSONValue) -> JSONValue? {
        session.withLock { state -> JSONValue? in
            guard var current = state, let (counter, sealed) = try? current.channel.seal(message.encoded()) else {
                return nil
            }
            state = current
            return ["v": 1, "n": .number(Double(counter)), "sealed": .string(Base64URL.encode(sealed))]
        }
    }
}
