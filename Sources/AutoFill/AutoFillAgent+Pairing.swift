import Crypto
public import Foundation
import Synchronization
import Vault
import _KeyhavenSupport

extension AutoFillAgent {
    /// `pair.begin`: a fresh agent key and a 6-digit code shown only to the person.
    public func beginPairing(
        clientPublicKey: Data,
        clientName: String,
        caller: String,
        browser: String
    ) throws(AutoFillError) -> (request: String, agentPublicKey: Data) {
        guard isUnlocked else { throw AutoFillError(.locked, "Unlock Keyhaven to pair a browser.") }
        guard clientPublicKey.count == 32 else { throw AutoFillError(.badRequest, "clientPublicKey must be 32 bytes.") }
        let agentKey = configuration.randomness.agentKey()
        let pairingKey: SymmetricKey
        do {
            pairingKey = try AutoFillCrypto.pairingKey(agentPrivateKey: agentKey, clientPublicKey: clientPublicKey)
        } catch {
            throw AutoFillError(.badRequest, "clientPublicKey is not an X25519 key.")
        }
        let request = PairingRequest(
            id: Base64URL.encode(configuration.randomness.bytes(12)),
            agentKey: agentKey,
            pairingKey: pairingKey,
            code: configuration.randomness.code(),
            name: String(clientName.prefix(100)),
            caller: caller,
            browser: browser,
            expires: now.addingTimeInterval(Self.pairingLifetime)
        )
        state.withLock { state in
            let now = self.now
            state.requests = state.requests.filter { $0.value.expires > now }
            state.requests[request.id] = request
            state.lastActivity = now
        }
        requestSignal.lock()
        requestSignal.broadcast()
        requestSignal.unlock()
        return (request.id, agentKey.publicKey.rawRepresentation)
    }

    /// The code of the newest pairing request not shown yet, waiting up to `timeout` for one
    /// (`keyhaven browser pair`). Nil when none came.
    public func waitForPairingCode(timeout: TimeInterval) -> (code: String, name: String)? {
        let deadline = Date().addingTimeInterval(timeout)
        requestSignal.lock()
        defer { requestSignal.unlock() }
        while true {
            let found = state.withLock { state -> (String, String)? in
                let now = self.now
                guard
                    let newest = state.requests.values.filter({ !$0.shown && $0.expires > now })
                        .max(by: { $0.expires < $1.expires })
                else { return nil }
                state.requests[newest.id]?.shown = true
                return (newest.code, newest.name)
            }
            if let found { return found }
            if !requestSignal.wait(until: deadline) { return nil }
        }
    }

    /// `pair.finish`: checks the proof of the code and stores the pairing sealed in the vault.
    public func finishPairing(request id: String, proof: Data) throws(AutoFillError) -> String {
        enum Outcome {
            case missing
            case wrong(left: Int)
            case right(PairingRequest)
        }
        let outcome = state.withLock { state -> Outcome in
            guard var request = state.requests[id], request.expires > now else {
                state.requests[id] = nil
                return .missing
            }
            guard AutoFillCrypto.verify(proof: proof, code: request.code, pairingKey: request.pairingKey) else {
                request.wrongCodes += 1
                state.requests[id] = request.wrongCodes >= Self.wrongCodesAllowed ? nil : request
                return .wrong(left: Self.wrongCodesAllowed - request.wrongCodes)
            }
            state.requests[id] = nil
            return .right(request)
        }
        switch outcome {
        case .missing:
            throw AutoFillError(.notPaired, "The pairing request expired or was refused: start pairing again.")
        case .wrong(let left):
            throw AutoFillError(
                .userCanceled,
                left > 0
                    ? "The pairing code is wrong (\(left) more tries)."
                    : "The pairing code was wrong 3 times: start pairing again."
            )
        case .right(let request):
            let pairing = Pairing(
                id: "p-" + Base64URL.encode(configuration.randomness.bytes(9)),
                name: request.name,
                caller: request.caller,
                browser: request.browser,
                key: request.pairingKey.withUnsafeBytes { Data($0) },
                created: now
            )
            let vault = try self.vault()
            do {
                try vault.saveAgentRecord(
                    AgentRecord(
                        id: pairing.id,
                        kind: Self.pairingKind,
                        content: try JSONEncoder().encode(pairing),
                        created: pairing.created
                    )
                )
            } catch {
                throw AutoFillError(.failed, "The pairing could not be saved in the vault.")
            }
            noteOwnWrite()
            state.withLock { $0.pairings[pairing.id] = pairing }
            return pairing.id
        }
    }

    /// `session.open`: a session key for this connection from the pairing's key and both nonces.
    public func openSession(
        pairingId: String,
        clientNonce: Data
    ) throws(AutoFillError)
        -> (agentNonce: Data, channel: SessionChannel)
    {
        guard clientNonce.count == 16 else { throw AutoFillError(.badRequest, "clientNonce must be 16 bytes.") }
        let pairing = state.withLock { state -> Pairing? in
            state.lastActivity = now
            return state.pairings[pairingId]
        }
        guard let pairing else {
            throw AutoFillError(
                isUnlocked || hasBeenUnlocked ? .notPaired : .locked,
                isUnlocked
                    ? "This browser is not paired (or its pairing was revoked)."
                    : "Keyhaven is locked and has not been unlocked since it started: run `keyhaven unlock`."
            )
        }
        let agentNonce = configuration.randomness.bytes(16)
        let key = AutoFillCrypto.sessionKey(
            pairingKey: SymmetricKey(data: pairing.key),
            clientNonce: clientNonce,
            agentNonce: agentNonce
        )
        return (agentNonce, SessionChannel(key: key, side: .agent))
    }

    /// Whether the vault was unlocked since the agent started (pairings are known only then).
    var hasBeenUnlocked: Bool { state.withLock { $0.revision > 0 } }

    /// Whether the pairing is known (false when revoked, or while locked).
    public func isPaired(_ pairingId: String) -> Bool {
        state.withLock { $0.pairings[pairingId] != nil }
    }

    /// The paired browsers, oldest first (the vault must be unlocked).
    public func pairings() throws(AutoFillError) -> [Pairing] {
        _ = try vault()
        return state.withLock { $0.pairings.values.sorted { ($0.created, $0.id) < ($1.created, $1.id) } }
    }

    /// Revokes a pairing: its sessions get `notPaired` from their next request on.
    public func revokePairing(_ id: String) throws(AutoFillError) {
        let vault = try self.vault()
        let removed: Bool
        do {
            removed = try vault.removeAgentRecord(id: id)
        } catch {
            throw AutoFillError(.failed, "The pairing could not be removed from the vault.")
        }
        noteOwnWrite()
        let known = state.withLock { $0.pairings.removeValue(forKey: id) != nil }
        guard removed || known else { throw AutoFillError(.credentialIdentityNotFound, "No pairing \(id).") }
    }
}
