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
            let reply: JSONValue
            do {
                let (ok, opened) = try clear(message)
                reply = ["v": 1, "id": id, "ok": ok]
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
                reply = ["v": 1, "id": id, "error": error.json]
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
                    "protocol": 1, "agentVersion": .string(server.version),
                    "state": agent.isUnlocked ? "unlocked" : "locked",
                ],
                nil
            )
        case "pair.begin":
            let (request, publicKey) = try agent.beginPairing(
                clientPublicKey: try bytes("clientPublicKey"),
                clientName: message["clientName"]?.string ?? browser,
                caller: caller,
                browser: browser
            )
            return (["pairingRequest": .string(request), "agentPublicKey": .string(Base64URL.encode(publicKey))], nil)
        case "pair.finish":
            guard let request = message["pairingRequest"]?.string else {
                throw AutoFillError(.badRequest, "pairingRequest is missing.")
            }
            let id = try agent.finishPairing(request: request, proof: try bytes("proof"))
            return (["pairingId": .string(id)], nil)
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
