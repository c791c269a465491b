public import Foundation
public import KeyhavenApp
import OneTimeCodes
import PasswordRules
import Synchronization
import Vault
public import _KeyhavenSupport

#if canImport(Glibc)
import Glibc
#endif

/// The browser's side of Keyhaven (docs/autofill-protocol.md): answers the AutoFill protocol's
/// requests under its matching and fill policy, keeps browser pairings, and pushes events to paired
/// browsers. The unlocked vault is the ``KeyhavenSession``'s: this actor runs on the session's own
/// executor (so its synchronous vault calls stay off the cooperative pool, and it reaches the
/// session's state without a hop), reads the vault only through it, and follows its events (unlock,
/// lock, changes made by any front end or another process) to keep its identities current. Free of
/// sockets and threads: ``KeyhavenAgent`` serves it; tests call it directly with an injected clock
/// and randomness.
public actor AutoFillAgent {
    public struct Configuration: Sendable {
        public var now: @Sendable () -> Date
        public var randomness: AutoFillRandomness

        public init(now: @escaping @Sendable () -> Date = { Date() }, randomness: AutoFillRandomness = .system) {
            self.now = now
            self.randomness = randomness
        }
    }

    /// A browser paired with the agent (stored sealed in the vault).
    public struct Pairing: Sendable, Hashable, Codable {
        public var id: String
        public var name: String
        /// Who asked: the extension origin or id the browser host reported.
        public var caller: String
        public var browser: String
        public var key: Data
        public var created: Date
        public var lastUsed: Date?
    }

    struct PairingRequest {
        var id: String
        var code: String
        var name: String
        var caller: String
        var browser: String
        var expires: Date
        var wrongCodes = 0
        var shown = false
        /// The try under way: the agent's side of one CPace run, used for one confirmation.
        var attempt: PairingExchange?
    }

    struct State {
        var index = IdentityIndex([Credential]())
        /// The session's revision the index was read at (-1: not read).
        var indexRevision = -1
        var pairings: [String: Pairing] = [:]
        var pairingsRead = false
        var requests: [String: PairingRequest] = [:]
        var listeners: [Int: Listener] = [:]
        var nextListener = 0
        /// Whether the session's events reach ``sessionEvent(_:)``.
        var following = false
        /// A write of the agent's own is being noticed: its `.changed` is not broadcast (the write
        /// tells browsers itself, incrementally).
        var absorbingOwnWrite = false
    }

    struct Listener {
        var pairingId: String
        var send: @Sendable (BrowserEvent) -> Void
    }

    static let pairingKind = "browser-pairing"
    static let pairingLifetime: TimeInterval = 5 * 60
    static let wrongCodesAllowed = 3
    static let openRequestsAllowed = 8

    /// The unlocked Keyhaven this adapter serves.
    public nonisolated let session: KeyhavenSession
    public nonisolated let configuration: Configuration
    nonisolated let state: Mutex<State>

    public nonisolated var unownedExecutor: UnownedSerialExecutor { session.unownedExecutor }

    public init(session: KeyhavenSession, configuration: Configuration = .init()) {
        self.session = session
        self.configuration = configuration
        state = Mutex(State())
        // Follow the session from the start (an unlock in the web app reaches browsers too); any
        // call of the agent's makes sure of it as well (`onSession`).
        Task { [weak self] in await self?.followSession() }
    }

    /// A session of its own for `vaultURL` (tests, and callers that need nothing else).
    public init(
        vaultURL: URL,
        idleLock: TimeInterval = 15 * 60,
        allowInsecureKDF: Bool = false,
        verificationWindow: TimeInterval = 5 * 60,
        now: @escaping @Sendable () -> Date = { Date() },
        randomness: AutoFillRandomness = .system
    ) {
        self.init(
            session: KeyhavenSession(
                .init(
                    vaultURL: vaultURL,
                    idleLock: idleLock,
                    allowInsecureKDF: allowInsecureKDF,
                    verificationWindow: verificationWindow,
                    now: now
                )
            ),
            configuration: .init(now: now, randomness: randomness)
        )
    }

    var now: Date { configuration.now() }

    /// The session, reached synchronously: this actor runs on the session's executor.
    func onSession<T: Sendable>(_ body: (isolated KeyhavenSession) throws -> T) rethrows -> T {
        followSession()
        return try session.assumeIsolated(body)
    }

    // MARK: Locking

    public var isUnlocked: Bool { onSession { $0.isUnlocked } }

    /// The unlocked vault (counts as activity), the session's; the identities are read again when
    /// the vault changed since they were read.
    func vault() throws(AutoFillError) -> Vault {
        let vault: Vault
        do {
            vault = try onSession { session in try session.withVault { $0 } }
        } catch {
            throw AutoFillError(.locked, "Keyhaven is locked: run `keyhaven unlock`.")
        }
        refreshIndex()
        return vault
    }

    /// Unlocks the session with `masterPassword` (scrypt: seconds) and reads its identities and pairings.
    public func unlock(masterPassword: String) throws(AutoFillError) {
        do {
            try onSession { try $0.unlock(masterPassword: masterPassword) }
        } catch let error as SessionError {
            throw AutoFillError(error)
        } catch {
            throw AutoFillError(.failed, "\(error)")
        }
        refreshIndex()
    }

    /// Locks the session. The pairings read at unlock stay known (a paired browser may still open a
    /// session, to ask for the unlock), but nothing else is answered until the next unlock.
    public func lock() {
        onSession { $0.lock() }
        forgetUnlockedState()
    }

    func forgetUnlockedState() {
        state.withLock { state in
            state.index = IdentityIndex([Credential]())
            state.indexRevision = -1
            state.requests = [:]
        }
    }

    func touch() {
        onSession { $0.touch() }
    }

    /// After a write of the agent's own: the session notices it (revision, events), and the
    /// identities are read again.
    func noteOwnWrite() {
        state.withLock { $0.absorbingOwnWrite = true }
        onSession { $0.refresh() }
        state.withLock { $0.absorbingOwnWrite = false }
        refreshIndex()
    }

    /// Reads the identities (and, the first time, the pairings) again when the session's revision
    /// moved since they were read; looks for other processes' changes first (two `stat` calls).
    func refreshIndex() {
        let (revision, vault) = onSession { session -> (Int, Vault?) in
            session.refresh()
            return (session.currentRevision, session.isUnlocked ? try? session.withVault { $0 } : nil)
        }
        guard let vault, state.withLock({ $0.indexRevision }) != revision else { return }
        guard let credentials = try? vault.list().credentials else { return }
        var pairings: [String: Pairing]?
        if !state.withLock({ $0.pairingsRead }) {
            // Pairings come from the vault: one revoked by another process while locked is gone.
            var found: [String: Pairing] = [:]
            for record in (try? vault.agentRecords(kind: Self.pairingKind)) ?? [] {
                if let pairing = try? JSONDecoder().decode(Pairing.self, from: record.content) {
                    found[pairing.id] = pairing
                }
            }
            pairings = found
        }
        state.withLock { state in
            let used = state.index.lastUsed
            state.index = IdentityIndex(credentials)
            state.index.lastUsed = used
            state.indexRevision = revision
            if let pairings {
                state.pairings = pairings
                state.pairingsRead = true
            }
        }
    }

    /// Follows the session's events (once): identities read again, browsers told — synchronously,
    /// on the executor both share, so a browser hears of a lock before `lock()` returns.
    func followSession() {
        let already = state.withLock { state in
            defer { state.following = true }
            return state.following
        }
        if already { return }
        _ = session.assumeIsolated { session in
            session.observe { [weak self] event in
                self?.assumeIsolated { $0.sessionEvent(event) }
            }
        }
    }

    func sessionEvent(_ event: KeyhavenSession.Event) {
        switch event {
        case .unlocked(let revision):
            // A new unlock reads the pairings again (another process may have revoked one).
            state.withLock { $0.pairingsRead = false }
            refreshIndex()
            broadcast(.state(.init(state: .unlocked)))
            broadcast(.identitiesReplaced(.init(revision: revision)))
        case .locked(let revision):
            forgetUnlockedState()
            broadcast(.state(.init(state: .locked)))
            broadcast(.identitiesReplaced(.init(revision: revision)))
        case .changed(let revision):
            if state.withLock({ $0.absorbingOwnWrite }) { return }
            refreshIndex()
            broadcast(.identitiesReplaced(.init(revision: revision)))
        }
    }

    /// What ``status()`` says: `{state, vault, revision, idleLockSeconds}`, and while unlocked
    /// `{identities, pairings, lockInSeconds}` too (`keyhaven agent status --json`, the web app's
    /// `/api/status`).
    public struct Status: Codable, Sendable, Hashable {
        public var state: BrowserReply.LockState
        /// The vault's path.
        public var vault: String
        /// The session's revision (``revision``).
        public var revision: Int
        /// The idle lock, in seconds (0: never).
        public var idleLockSeconds: Double
        /// The credentials the browser can be offered (unlocked only).
        public var identities: Int?
        /// The paired browsers (unlocked only).
        public var pairings: Int?
        /// Seconds until the idle lock unless the vault is used (unlocked, with an idle lock).
        public var lockInSeconds: Double?

        /// A status without the members of an unlocked vault (set them after).
        public init(state: BrowserReply.LockState, vault: String, revision: Int, idleLockSeconds: Double) {
            (self.state, self.vault, self.revision, self.idleLockSeconds) = (state, vault, revision, idleLockSeconds)
        }
    }

    /// The session's state, for `keyhaven agent status` and the web app.
    public func status() -> Status {
        let session = onSession { $0.status() }
        var status = Status(
            state: session.unlocked ? .unlocked : .locked,
            vault: session.vaultPath,
            revision: session.revision,
            idleLockSeconds: session.idleLock.isFinite ? session.idleLock.rounded() : 0
        )
        if session.unlocked {
            refreshIndex()
            state.withLock { state in
                status.identities = state.index.count
                status.pairings = state.pairings.count
            }
            let lockIn = session.lockIn ?? 0
            status.lockInSeconds = lockIn.isFinite ? lockIn.rounded() : nil
        }
        return status
    }

    /// The session's revision (grows with every unlock, lock and change of the vault).
    public var revision: Int { onSession { $0.currentRevision } }

    // MARK: Listeners (events pushed on browser connections)

    /// Registers a session's event sink; returns its handle for ``removeListener(_:)``.
    public func addListener(pairingId: String, send: @escaping @Sendable (BrowserEvent) -> Void) -> Int {
        state.withLock { state in
            state.nextListener += 1
            state.listeners[state.nextListener] = Listener(pairingId: pairingId, send: send)
            return state.nextListener
        }
    }

    public func removeListener(_ handle: Int) {
        _ = state.withLock { $0.listeners.removeValue(forKey: handle) }
    }

    func broadcast(_ event: BrowserEvent) {
        for listener in state.withLock({ Array($0.listeners.values) }) { listener.send(event) }
    }
}

extension AutoFillError {
    /// The session's refusal in the protocol's words.
    init(_ error: SessionError) {
        switch error.code {
        case .wrongPassword: self.init(.wrongPassword, "The master password is wrong.")
        case .locked: self.init(.locked, error.message)
        case .badRequest: self.init(.badRequest, error.message)
        default: self.init(.failed, error.message)
        }
    }
}

/// Where the agent's randomness comes from (tests fix it).
public struct AutoFillRandomness: Sendable {
    /// Random bytes: ids, nonces, and the agent's CPace scalars.
    public var bytes: @Sendable (Int) -> Data
    /// A uniform 6-digit code.
    public var code: @Sendable () -> String

    public init(
        bytes: @escaping @Sendable (Int) -> Data,
        code: @escaping @Sendable () -> String
    ) {
        self.bytes = bytes
        self.code = code
    }

    public static let system = AutoFillRandomness(
        bytes: { count in
            var generator = SystemRandomNumberGenerator()
            return Data((0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
        },
        code: {
            var generator = SystemRandomNumberGenerator()
            return String(format: "%06d", Int.random(in: 0..<1_000_000, using: &generator))
        }
    )
}

extension AutoFillAgent {
    /// The hosts of the unlocked vault's credentials, sorted (shell completion of site names).
    public func sites() -> [String] {
        guard isUnlocked else { return [] }
        refreshIndex()
        return state.withLock { state in
            Set(state.index.entries.values.flatMap { $0.services.compactMap(\.host) }).sorted()
        }
    }
}
