public import Foundation
import OneTimeCodes
import PasswordRules
import Synchronization
public import Vault
public import _KeyhavenSupport

#if canImport(Glibc)
import Glibc
#endif

/// The agent's heart: holds the unlocked vault (the only process that does), locks after an idle
/// time, keeps browser pairings, and answers the AutoFill protocol's requests
/// (docs/autofill-protocol.md) under its matching and fill policy. Free of sockets and threads:
/// ``KeyhavenAgent`` serves it; tests call it directly with an injected clock and randomness.
///
/// Every method is synchronous and may run scrypt or SQLite: call it from a thread of its own
/// (the agent's connection threads), never from Swift's cooperative pool or an event loop.
public final class AutoFillAgent: Sendable {
    public struct Configuration: Sendable {
        public var vaultURL: URL
        /// Locks after this long without a request (15 minutes by default).
        public var idleLock: TimeInterval
        public var allowInsecureKDF: Bool
        /// How long the unlock counts as user verification for passkeys (`userVerification:
        /// required`); after it the chooser asks for the master password (5 minutes by default).
        public var verificationWindow: TimeInterval
        public var now: @Sendable () -> Date
        public var randomness: AutoFillRandomness

        public init(
            vaultURL: URL,
            idleLock: TimeInterval = 15 * 60,
            allowInsecureKDF: Bool = false,
            verificationWindow: TimeInterval = 5 * 60,
            now: @escaping @Sendable () -> Date = { Date() },
            randomness: AutoFillRandomness = .system
        ) {
            self.vaultURL = vaultURL
            self.idleLock = idleLock
            self.allowInsecureKDF = allowInsecureKDF
            self.verificationWindow = verificationWindow
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
        var vault: Vault?
        var index = IdentityIndex([Credential]())
        var pairings: [String: Pairing] = [:]
        var requests: [String: PairingRequest] = [:]
        var lastActivity: Date
        var unlockedAt: Date?
        var revision = 0
        var listeners: [Int: Listener] = [:]
        var nextListener = 0
        /// The vault files' modification times and sizes when the identities were last read.
        var fileStamp: [Int64] = []
        /// The idle lock in force: the configuration's, or the one saved in the vault
        /// (``setIdleLock(_:)``), read at unlock.
        var idleLock: TimeInterval
    }

    struct Listener {
        var pairingId: String
        var send: @Sendable (JSONValue) -> Void
    }

    static let pairingKind = "browser-pairing"
    static let pairingLifetime: TimeInterval = 5 * 60
    static let wrongCodesAllowed = 3
    static let openRequestsAllowed = 8

    public let configuration: Configuration
    let state: Mutex<State>
    /// Signalled when a pairing request appears (``waitForPairingCode(timeout:)``).
    let requestSignal = NSCondition()

    public init(_ configuration: Configuration) {
        self.configuration = configuration
        state = Mutex(State(lastActivity: configuration.now(), idleLock: configuration.idleLock))
    }

    var now: Date { configuration.now() }

    // MARK: Locking

    public var isUnlocked: Bool { state.withLock { $0.vault != nil } }

    /// The unlocked vault, for the agent's own commands (``KeyhavenAgent`` runs vault commands with
    /// it); counts as activity.
    public func vault() throws(AutoFillError) -> Vault {
        let vault = state.withLock { state -> Vault? in
            state.lastActivity = now
            return state.vault
        }
        guard let vault else { throw AutoFillError(.locked, "Keyhaven is locked: run `keyhaven unlock`.") }
        return vault
    }

    /// Opens the vault with `masterPassword` (scrypt: seconds) and reads its identities.
    public func unlock(masterPassword: String) throws(AutoFillError) {
        if isUnlocked { return touch() }
        let vault = try openVault(masterPassword: masterPassword)
        let index: IdentityIndex
        let stamp = fileStamp()
        var pairings: [String: Pairing] = [:]
        var savedIdleLock: TimeInterval?
        do {
            // Pairings come from the vault: one revoked by another process while locked is gone.
            index = IdentityIndex(try vault.list().credentials)
            for record in try vault.agentRecords(kind: Self.pairingKind) {
                if let pairing = try? JSONDecoder().decode(Pairing.self, from: record.content) {
                    pairings[pairing.id] = pairing
                }
            }
            savedIdleLock = try Self.savedIdleLock(vault)
        } catch {
            throw AutoFillError(.failed, "The vault could not be read: \(error.message)")
        }
        let listeners = state.withLock { state in
            state.vault = vault
            state.index = index
            state.pairings = pairings
            state.unlockedAt = now
            state.lastActivity = now
            state.revision += 1
            state.fileStamp = stamp
            if let savedIdleLock { state.idleLock = savedIdleLock }
            return (state.listeners, state.revision)
        }
        broadcast(listeners.0, ["event": "state", "state": "unlocked"])
        broadcast(
            listeners.0,
            ["event": "identities.changed", "revision": .number(Double(listeners.1)), "replaced": true]
        )
    }

    /// Opens the vault file with `masterPassword` (scrypt: seconds): the unlock, and the passkeys'
    /// user verification.
    func openVault(masterPassword: String) throws(AutoFillError) -> Vault {
        do {
            return try Vault.open(
                at: configuration.vaultURL,
                masterPassword: masterPassword,
                allowInsecureKDF: configuration.allowInsecureKDF,
                now: configuration.now
            )
        } catch {
            if error.code == .wrongPassword { throw AutoFillError(.wrongPassword, "The master password is wrong.") }
            throw AutoFillError(.failed, "The vault could not be opened: \(error.message)")
        }
    }

    /// Forgets the vault and everything read from it. The pairings read at unlock stay known (a
    /// paired browser may still open a session, to ask for the unlock), but nothing else is
    /// answered until the next unlock.
    public func lock() {
        let (vault, listeners, revision) = state.withLock { state in
            let vault = state.vault
            state.vault = nil
            state.index = IdentityIndex([Credential]())
            state.requests = [:]
            state.unlockedAt = nil
            if vault != nil { state.revision += 1 }
            return (vault, state.listeners, state.revision)
        }
        guard let vault else { return }
        try? vault.close()
        broadcast(listeners, ["event": "state", "state": "locked"])
        broadcast(listeners, ["event": "identities.changed", "revision": .number(Double(revision)), "replaced": true])
    }

    /// Locks when the idle time has passed; the agent calls it every second.
    public func tick() {
        let idle = state.withLock { state in
            state.vault != nil && now.timeIntervalSince(state.lastActivity) >= state.idleLock
        }
        if idle { lock() }
    }

    func touch() {
        state.withLock { $0.lastActivity = now }
    }

    /// `{state, revision, identities, pairings, idleLockSeconds, lockInSeconds}` for `keyhaven agent status`.
    public func status() -> JSONValue {
        state.withLock { state in
            var object: [String: JSONValue] = [
                "state": .string(state.vault == nil ? "locked" : "unlocked"),
                "vault": .string(configuration.vaultURL.path),
                "revision": .number(Double(state.revision)),
                "idleLockSeconds": .number(state.idleLock.isFinite ? state.idleLock.rounded() : 0),
            ]
            if state.vault != nil {
                object["identities"] = .number(Double(state.index.count))
                object["pairings"] = .number(Double(state.pairings.count))
                let left = state.idleLock - now.timeIntervalSince(state.lastActivity)
                object["lockInSeconds"] = .number(max(0, left).rounded())
            }
            return .object(object)
        }
    }

    /// Tells the agent that the vault changed under it (a command it ran, or another process —
    /// ``refreshIfChangedOnDisk()``): identities are re-read and browsers told.
    public func vaultChanged() {
        let stamp = fileStamp()
        guard let vault = state.withLock({ $0.vault }), let credentials = try? vault.list().credentials else { return }
        let (listeners, revision) = state.withLock { state in
            let used = state.index.lastUsed
            state.index = IdentityIndex(credentials)
            state.index.lastUsed = used
            state.revision += 1
            state.fileStamp = stamp
            return (state.listeners, state.revision)
        }
        broadcast(listeners, ["event": "identities.changed", "revision": .number(Double(revision)), "replaced": true])
    }

    /// The vault file's and its write-ahead log's modification times (nanoseconds) and sizes: they
    /// change with every commit, whichever process made it.
    func fileStamp() -> [Int64] {
        let path = configuration.vaultURL.path
        return [path, path + "-wal"].flatMap { file -> [Int64] in
            var info = stat()
            guard stat(file, &info) == 0 else { return [0, 0] }
            return [Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec), Int64(info.st_size)]
        }
    }

    /// Runs `write`, a change to the vault that leaves its credentials as they are (the web app's
    /// settings, what audits learned about sites), and takes the vault files as they are after it
    /// as read: the change is not taken for another process's edit, which would re-read every
    /// credential and start a new revision. An edit another process made before it is still
    /// noticed (the files then no longer match what was read before the write).
    public func writingWithoutCredentialChanges<T>(_ write: () throws -> T) rethrows -> T {
        let before = fileStamp()
        let result = try write()
        let after = fileStamp()
        state.withLock { state in
            if state.vault != nil && state.fileStamp == before { state.fileStamp = after }
        }
        return result
    }

    /// Re-reads the identities when another process (`keyhaven add`, `edit`, `import`) changed the
    /// vault since they were read; cheap when nothing did (two `stat` calls).
    public func refreshIfChangedOnDisk() {
        let changed = state.withLock { state in state.vault != nil && state.fileStamp != fileStamp() }
        if changed { vaultChanged() }
    }

    /// Records the files as they are after the agent's own write (its index is already up to date).
    func noteOwnWrite() {
        let stamp = fileStamp()
        state.withLock { $0.fileStamp = stamp }
    }

    /// Grows with every unlock, lock and change of the vault's credentials: caches of what was read
    /// from the vault (the web app's audit) are keyed by it.
    public var revision: Int { state.withLock { $0.revision } }

    // MARK: Idle lock

    static let settingsKind = "agent-settings"

    /// The idle lock in force (seconds; infinity: never).
    public var idleLock: TimeInterval { state.withLock { $0.idleLock } }

    /// Changes the idle lock now and keeps it in the vault (sealed, read at every unlock), so it
    /// holds for the next agent too. `.infinity` never locks.
    public func setIdleLock(_ seconds: TimeInterval) throws(AutoFillError) {
        guard seconds > 0 else { throw AutoFillError(.badRequest, "The idle lock must be longer than 0 seconds.") }
        let vault = try vault()
        let content = Data(#"{"idleLockSeconds":\#(seconds.isFinite ? Int(seconds) : 0)}"#.utf8)
        do {
            try vault.saveAgentRecord(
                AgentRecord(id: Self.settingsKind, kind: Self.settingsKind, content: content, created: now)
            )
        } catch {
            throw AutoFillError(.failed, "The setting could not be saved: \(error.message)")
        }
        noteOwnWrite()
        state.withLock { $0.idleLock = seconds }
    }

    /// The idle lock saved in `vault`, if any (0 means never).
    static func savedIdleLock(_ vault: Vault) throws(VaultError) -> TimeInterval? {
        guard let record = try vault.agentRecords(kind: settingsKind).last,
            let seconds = (try? JSONValue.parse(record.content))?["idleLockSeconds"]?.number
        else { return nil }
        return seconds == 0 ? .infinity : seconds
    }

    // MARK: Listeners (events pushed on browser connections)

    /// Registers a session's event sink; returns its handle for ``removeListener(_:)``.
    public func addListener(pairingId: String, send: @escaping @Sendable (JSONValue) -> Void) -> Int {
        state.withLock { state in
            state.nextListener += 1
            state.listeners[state.nextListener] = Listener(pairingId: pairingId, send: send)
            return state.nextListener
        }
    }

    public func removeListener(_ handle: Int) {
        _ = state.withLock { $0.listeners.removeValue(forKey: handle) }
    }

    func broadcast(_ listeners: [Int: Listener], _ event: JSONValue) {
        for listener in listeners.values { listener.send(event) }
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
        state.withLock { state in
            Set(state.index.entries.values.flatMap { $0.services.compactMap(\.host) }).sorted()
        }
    }
}
