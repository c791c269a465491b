import Crypto
public import Foundation
import KeyhavenApp
import Synchronization
import Vault
import _KeyhavenSupport

extension AutoFillAgent {
    /// The agent's side of a pairing try: which request, and the agent's nonce and CPace share.
    public struct PairingOffer: Sendable, Equatable {
        public var request: String
        public var agentNonce: Data
        public var agentShare: Data
    }

    /// `pair.begin`: one pairing try. Without `request`, a new request and its 6-digit code, shown only
    /// to the person; with it, another try of that request (same code) after a wrong one. Each try
    /// has a fresh agent scalar and nonce.
    public func beginPairing(
        clientNonce: Data,
        request continued: String? = nil,
        caller: String,
        browser: String
    ) throws(AutoFillError) -> PairingOffer {
        guard isUnlocked else { throw AutoFillError(.locked, "Unlock Keyhaven to pair a browser.") }
        guard clientNonce.count == 16 else { throw AutoFillError(.badRequest, "clientNonce must be 16 bytes.") }
        let request: PairingRequest
        if let continued {
            let found = state.withLock { state -> PairingRequest? in
                guard let request = state.requests[continued], request.expires > now else { return nil }
                return request
            }
            guard let found else {
                throw AutoFillError(.notPaired, "The pairing request expired or was refused: start pairing again.")
            }
            guard found.caller == caller, found.browser == browser else {
                throw AutoFillError(.notPaired, "That pairing request belongs to another browser: start pairing again.")
            }
            request = found
        } else {
            request = PairingRequest(
                id: Base64URL.encode(configuration.randomness.bytes(12)),
                code: configuration.randomness.code(),
                name: Self.displayName(browser: browser),
                caller: caller,
                browser: browser,
                expires: now.addingTimeInterval(Self.pairingLifetime)
            )
        }
        let agentNonce = configuration.randomness.bytes(16)
        let attempt = try PairingExchange(
            role: .agent,
            context: PairingContext(
                code: request.code,
                request: request.id,
                browser: request.browser,
                caller: request.caller,
                clientNonce: clientNonce,
                agentNonce: agentNonce
            ),
            scalar: configuration.randomness.bytes(32)
        )
        touch()
        let stored = state.withLock { state -> Bool in
            let now = self.now
            state.requests = state.requests.filter { $0.value.expires > now }
            if continued == nil {
                // A bounded number of open requests: the oldest goes first.
                while state.requests.count >= Self.openRequestsAllowed,
                    let oldest = state.requests.values.min(by: { $0.expires < $1.expires })
                {
                    state.requests[oldest.id] = nil
                }
                state.requests[request.id] = request
            } else if state.requests[request.id] == nil {
                return false  // refused or expired meanwhile
            }
            // One try at a time: a new one replaces the one under way (which then counts for nothing).
            state.requests[request.id]?.attempt = attempt
            return true
        }
        guard stored else {
            throw AutoFillError(.notPaired, "The pairing request expired or was refused: start pairing again.")
        }
        return PairingOffer(request: request.id, agentNonce: agentNonce, agentShare: attempt.share)
    }

    /// How a pairing is named in `keyhaven browser pairings`: from the browser the native host
    /// reported (its command line, written by the browser), not from what the extension says.
    static func displayName(browser: String) -> String {
        switch browser {
        case "chromium": "Chromium"
        case "firefox": "Firefox"
        default: String(browser.prefix(100))
        }
    }

    /// The code of the newest pairing request not shown yet, waiting up to `timeout` for one
    /// (`keyhaven browser pair`). Nil when none came. Waits without holding the session's thread.
    public func waitForPairingCode(timeout: TimeInterval) async -> (code: String, name: String)? {
        let deadline = Date().addingTimeInterval(timeout)
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
            if Date() >= deadline { return nil }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    /// `pair.finish`: the extension's share and its confirmation of the try under way. A wrong
    /// confirmation (a wrong code, or anything that is not the extension that saw this request)
    /// ends the try and counts against the request's 3; the right one stores the pairing sealed in
    /// the vault and gives the agent's own confirmation, so the extension knows it reached the agent
    /// that showed the code.
    public func finishPairing(
        request id: String,
        clientShare: Data,
        clientConfirm: Data
    ) throws(AutoFillError) -> (pairingId: String, agentConfirm: Data) {
        enum Outcome {
            case missing
            case notShown
            case noTry
            case wrong(left: Int)
            case right(PairingRequest, PairingKeys)
        }
        let outcome = state.withLock { state -> Outcome in
            guard var request = state.requests[id], request.expires > now else {
                state.requests[id] = nil
                return .missing
            }
            // Only a code the person was shown can be typed: a process that makes requests in a
            // loop gets no guess at all (this is checked before anything about the code).
            guard request.shown else { return .notShown }
            // One confirmation per try: the agent's scalar is used once, whatever the outcome.
            guard let attempt = request.attempt else { return .noTry }
            request.attempt = nil
            let keys = try? attempt.keys(otherShare: clientShare)
            guard let keys, constantTimeEqual(clientConfirm, keys.clientConfirm) else {
                request.wrongCodes += 1
                state.requests[id] = request.wrongCodes >= Self.wrongCodesAllowed ? nil : request
                return .wrong(left: Self.wrongCodesAllowed - request.wrongCodes)
            }
            state.requests[id] = nil
            return .right(request, keys)
        }
        switch outcome {
        case .missing:
            throw AutoFillError(.notPaired, "The pairing request expired or was refused: start pairing again.")
        case .notShown:
            throw AutoFillError(
                .failed,
                "Nobody was shown this pairing code yet: run `keyhaven browser pair` to see it, then type it."
            )
        case .noTry:
            throw AutoFillError(
                .badRequest,
                "No pairing try is under way: send pair.begin with this pairingRequest first."
            )
        case .wrong(let left):
            throw AutoFillError(
                .userCanceled,
                left > 0
                    ? "The pairing code is wrong (\(left) more \(left == 1 ? "try" : "tries"))."
                    : "The pairing code was wrong 3 times: start pairing again."
            )
        case .right(let request, let keys):
            let pairing = Pairing(
                id: "p-" + Base64URL.encode(configuration.randomness.bytes(9)),
                name: request.name,
                caller: request.caller,
                browser: request.browser,
                key: keys.pairingKey.withUnsafeBytes { Data($0) },
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
            return (pairing.id, keys.agentConfirm)
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
        touch()
        let pairing = state.withLock { $0.pairings[pairingId] }
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
    var hasBeenUnlocked: Bool { state.withLock { $0.pairingsRead } }

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
