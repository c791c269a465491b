import AutoFill
import Foundation
import Synchronization
import _KeyhavenSupport

/// One browser's connection through `keyhaven browser-host`: hello, pairing and `session.open` in
/// the clear, then sealed requests and replies, with events pushed as they happen.
final class BrowserConnection: Sendable {
    let server: AgentServer
    let connection: FrameConnection
    let caller: String
    let browser: String
    /// The session (nil before `session.open`), its pairing, and the event listener; writes of
    /// replies and events go through this lock so the counters stay in order.
    let session = Mutex<(channel: SessionChannel, pairingId: String)?>(nil)

    init(server: AgentServer, connection: FrameConnection, hello: JSONValue) {
        self.server = server
        self.connection = connection
        caller = hello["caller"]?.string ?? ""
        browser = hello["browser"]?.string ?? ""
    }

    var agent: AutoFillAgent { server.agent }

    func run() {
        var listener: Int?
        defer { if let listener { agent.removeListener(listener) } }
        while let frame = try? connection.receive(), let message = try? JSONValue.parse(frame) {
            if session.withLock({ $0 != nil }) {
                guard openAndAnswer(message) else { return connection.shutdownBoth() }
                continue
            }
            let id = message["id"] ?? .null
            // The pairing messages are protocol 2's (CPace); the rest of the protocol is unchanged.
            let version: JSONValue = message["v"]?.integer == 2 ? 2 : 1
            let reply: JSONValue
            do {
                let (ok, opened) = try clear(message)
                reply = ["v": version, "id": id, "ok": ok]
                if let opened {
                    // The reply to session.open goes out in the clear, before anything sealed.
                    guard (try? connection.send(reply)) != nil else { return }
                    session.withLock { $0 = opened }
                    listener = agent.addListener(pairingId: opened.1) { [weak self] event in
                        self?.push(event)
                    }
                    continue
                }
            } catch {
                reply = ["v": version, "id": id, "error": error.json]
            }
            guard (try? connection.send(reply)) != nil else { return }
        }
    }

    /// A message in the clear: `hello`, `pair.begin`, `pair.finish`, `session.open`.
    func clear(_ message: JSONValue) throws(AutoFillError) -> (JSONValue, (SessionChannel, String)?) {
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
                    "state": agent.isUnlocked ? "unlocked" : "locked",
                ],
                nil
            )
        case "pair.begin":
            try Self.requireProtocol2(message)
            let offer = try agent.beginPairing(
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
            let (id, agentConfirm) = try agent.finishPairing(
                request: request,
                clientShare: try bytes("clientShare"),
                clientConfirm: try bytes("clientConfirm")
            )
            return (["pairingId": .string(id), "agentConfirm": .string(Base64URL.encode(agentConfirm))], nil)
        case "session.open":
            guard let pairingId = message["pairingId"]?.string else {
                throw AutoFillError(.badRequest, "pairingId is missing.")
            }
            let (agentNonce, channel) = try agent.openSession(
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

    /// A sealed request: opened, answered, the reply sealed. False ends the connection (a frame
    /// that does not open or is out of order).
    func openAndAnswer(_ message: JSONValue) -> Bool {
        guard let counter = message["n"]?.integer, counter > 0, let text = message["sealed"]?.string,
            let sealed = Base64URL.decode(text)
        else { return false }
        let opened = session.withLock { state -> (Data, String)? in
            guard var current = state,
                let plaintext = try? current.channel.open(counter: UInt64(counter), sealed: Data(sealed))
            else { return nil }
            state = current
            return (plaintext, current.pairingId)
        }
        guard let (plaintext, pairingId) = opened else { return false }
        let reply: JSONValue
        if let request = try? JSONValue.parse(plaintext) {
            reply = agent.handle(request, pairingId: pairingId)
        } else {
            reply = ["v": 1, "id": .null, "error": AutoFillError(.badRequest, "The message is not JSON.").json]
        }
        return send(reply)
    }

    func push(_ event: JSONValue) {
        guard case .object(var members) = event else { return }
        members["v"] = 1
        _ = send(.object(members))
    }

    /// Seals and writes one message (reply or event) under the session lock.
    func send(_ message: JSONValue) -> Bool {
        session.withLock { state -> Bool in
            guard var current = state, let (counter, sealed) = try? current.channel.seal(message.encoded()) else {
                return false
            }
            state = current
            let frame: JSONValue = ["v": 1, "n": .number(Double(counter)), "sealed": .string(Base64URL.encode(sealed))]
            return (try? connection.send(frame)) != nil
        }
    }
}
