public import Foundation
public import Vault
public import _KeyhavenSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The person's unlocked Keyhaven: the one owner of the open vault, whoever asks — the CLI in
/// process, the agent for the CLI and the browser, the web app. It holds the vault, the idle lock,
/// the revision and its change events, the clock and the randomness; front ends call its methods
/// and never open the vault themselves.
///
/// **One rule for blocking work.** The session is an actor on a ``DedicatedThreadExecutor``: every
/// synchronous vault call (SQLite, scrypt) runs on that one thread of its own, never on Swift's
/// cooperative pool or an event loop. Callers only `await`. Work that is not the vault's (network
/// probes, CPU-heavy audits over copied data) does not belong on it.
///
/// ```swift
/// let session = KeyhavenSession(.init(vaultURL: url))
/// try await session.unlock(masterPassword: password)
/// let credentials = try await session.withVault { try $0.list().credentials }
/// ```
public actor KeyhavenSession {
    public struct Configuration: Sendable {
        public var vaultURL: URL
        /// Locks after this long without a request (15 minutes by default; `.infinity`: never).
        public var idleLock: TimeInterval
        public var allowInsecureKDF: Bool
        /// How long the unlock counts as user verification (passkeys' `userVerification:
        /// required`); after it the master password is asked again (5 minutes by default).
        public var verificationWindow: TimeInterval
        public var now: @Sendable () -> Date

        public init(
            vaultURL: URL,
            idleLock: TimeInterval = 15 * 60,
            allowInsecureKDF: Bool = false,
            verificationWindow: TimeInterval = 5 * 60,
            now: @escaping @Sendable () -> Date = { Date() }
        ) {
            self.vaultURL = vaultURL
            self.idleLock = idleLock
            self.allowInsecureKDF = allowInsecureKDF
            self.verificationWindow = verificationWindow
            self.now = now
        }
    }

    /// What happened to the session, for its subscribers (``events()``).
    public enum Event: Sendable, Hashable {
        case unlocked(revision: Int)
        case locked(revision: Int)
        /// The vault's content changed: through the session, or by another process (noticed at the
        /// next call, by the file's modification time and size).
        case changed(revision: Int)
    }

    /// `keyhaven agent status` and the web app's header.
    public struct Status: Sendable, Hashable {
        public var unlocked: Bool
        public var vaultPath: String
        public var revision: Int
        /// Seconds; infinity: never.
        public var idleLock: TimeInterval
        /// Seconds until the idle lock, when unlocked.
        public var lockIn: TimeInterval?
    }

    public nonisolated let configuration: Configuration
    nonisolated let executor: DedicatedThreadExecutor

    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    var vault: Vault?
    var unlockedAt: Date?
    var lastActivity: Date
    var revision = 0
    var idleLock: TimeInterval
    /// The vault files' modification times and sizes when the session last looked.
    var fileStamp: [Int64] = []
    var subscribers: [Int: AsyncStream<Event>.Continuation] = [:]
    var observers: [Int: @Sendable (Event) -> Void] = [:]
    var nextSubscriber = 0

    public init(_ configuration: Configuration) {
        self.configuration = configuration
        executor = DedicatedThreadExecutor(name: "keyhaven.session")
        lastActivity = configuration.now()
        idleLock = configuration.idleLock
    }

    deinit {
        vault.map { try? $0.close() }
        for subscriber in subscribers.values { subscriber.finish() }
        executor.finish()
    }

    var now: Date { configuration.now() }

    // MARK: Unlock and lock

    public var isUnlocked: Bool { vault != nil }

    /// Grows with every unlock, lock and change of the vault: caches of what was read from it are
    /// keyed by it.
    public var currentRevision: Int { revision }

    /// Opens the vault with `masterPassword` (scrypt: a second or so, on the session's thread).
    /// Already unlocked: counts as activity only.
    public func unlock(masterPassword: String) throws(SessionError) {
        do {
            try unlockVault(masterPassword: masterPassword)
        } catch {
            throw Self.sessionError(error)
        }
    }

    /// ``unlock(masterPassword:)`` failing with the vault's own error, for a front end that reports
    /// it as it is (the CLI: a missing file, a wrong password and tampering each have their message
    /// and exit code).
    public func unlockVault(masterPassword: String) throws(VaultError) {
        if vault != nil {
            lastActivity = now
            return
        }
        adopt(try openVault(masterPassword: masterPassword))
    }

    /// Creates the vault file (none may be there) and unlocks it: `keyhaven init`, the demo.
    public func create(masterPassword: String, kdf: KDFParameters = .calibrated()) throws(VaultError) {
        guard vault == nil else { throw VaultError(.invalidInput, "a vault is already unlocked in this session") }
        adopt(
            try Vault.create(
                at: configuration.vaultURL,
                masterPassword: masterPassword,
                kdf: kdf,
                allowInsecureKDF: configuration.allowInsecureKDF,
                now: configuration.now
            )
        )
    }

    func adopt(_ opened: Vault) {
        vault = opened
        unlockedAt = now
        lastActivity = now
        fileStamp = Self.fileStamp(configuration.vaultURL)
        if let saved = try? Self.savedIdleLock(opened) { idleLock = saved }
        revision += 1
        publish(.unlocked(revision: revision))
    }

    /// Forgets the vault. Nothing is answered until the next unlock.
    public func lock() {
        guard let open = vault else { return }
        vault = nil
        unlockedAt = nil
        try? open.close()
        revision += 1
        publish(.locked(revision: revision))
    }

    /// Locks when the idle time has passed; the agent calls it every second.
    public func tick() {
        if vault != nil, now.timeIntervalSince(lastActivity) >= idleLock { lock() }
    }

    /// Activity without a vault call (a browser's query answered from what was read before).
    public func touch() {
        lastActivity = now
    }

    public func status() -> Status {
        Status(
            unlocked: vault != nil,
            vaultPath: configuration.vaultURL.path,
            revision: revision,
            idleLock: idleLock,
            lockIn: vault == nil ? nil : max(0, idleLock - now.timeIntervalSince(lastActivity))
        )
    }

    /// Whether the unlock still vouches for the person, or `masterPassword` (typed again in
    /// Keyhaven's own page) does; a right one renews the window, a wrong one is `wrongPassword`.
    public func userVerified(masterPassword: String?) throws(SessionError) -> Bool {
        if let masterPassword, !masterPassword.isEmpty {
            let check = try open(masterPassword: masterPassword)
            try? check.close()
            unlockedAt = now
            return true
        }
        guard let unlockedAt else { return false }
        return now.timeIntervalSince(unlockedAt) <= configuration.verificationWindow
    }

    func open(masterPassword: String) throws(SessionError) -> Vault {
        do {
            return try openVault(masterPassword: masterPassword)
        } catch {
            throw Self.sessionError(error)
        }
    }

    /// The one place a front end's vault is opened (`scripts/architecture.py` holds every other
    /// target of Keyhaven's own to it).
    func openVault(masterPassword: String) throws(VaultError) -> Vault {
        try Vault.open(
            at: configuration.vaultURL,
            masterPassword: masterPassword,
            allowInsecureKDF: configuration.allowInsecureKDF,
            now: configuration.now
        )
    }

    static func sessionError(_ error: VaultError) -> SessionError {
        if error.code == .wrongPassword { return SessionError(.wrongPassword, "The master password is wrong.") }
        return SessionError(.failed, "The vault could not be opened: \(error.message)")
    }

    // MARK: The vault

    /// Whether the running task does work no front end asked for (the agent's background sync):
    /// its vault calls then do not count as the person's activity, so the idle lock still locks an
    /// agent nobody uses while its sync goes on.
    @TaskLocal public static var backgroundWork = false

    /// Runs `body` with the unlocked vault on the session's thread (the one place synchronous vault
    /// work runs) and counts as activity. A change of the vault's files — made by `body`, or found
    /// made by another process before it — raises the revision and is published.
    public func withVault<T: Sendable>(_ body: @Sendable (Vault) throws -> T) throws -> T {
        guard let vault else { throw SessionError(.locked, "Keyhaven is locked: run `keyhaven unlock`.") }
        if !Self.backgroundWork { lastActivity = now }
        noticeChanges()
        defer { noticeChanges() }
        return try body(vault)
    }

    /// Runs `write` with the unlocked vault: a change that leaves its credentials as they are (the
    /// web app's settings, what audits learned about sites). The files as they are after it count as
    /// seen — no new revision, no `.changed` (which would make every front end read every credential
    /// again) — unless another process changed them before (that is still noticed, first).
    public func writeWithoutCredentialChanges<T: Sendable>(_ write: @Sendable (Vault) throws -> T) throws -> T {
        try self.write(write, changedCredentials: { _ in false })
    }

    /// Runs `write` with the unlocked vault; whether it changed credentials is known only after it
    /// (sync's write-back: its state saved every time, credentials only when a merge brought
    /// something): `changedCredentials` says so from its result. When it did, the change is
    /// published as ``withVault(_:)`` does; when not, as ``writeWithoutCredentialChanges(_:)``.
    public func write<T: Sendable>(
        _ write: @Sendable (Vault) throws -> T,
        changedCredentials: (T) -> Bool
    ) throws -> T {
        guard let vault else { throw SessionError(.locked, "Keyhaven is locked: run `keyhaven unlock`.") }
        if !Self.backgroundWork { lastActivity = now }
        noticeChanges()
        let result = try write(vault)
        if changedCredentials(result) {
            noticeChanges()
        } else {
            fileStamp = Self.fileStamp(configuration.vaultURL)
        }
        return result
    }

    /// Runs synchronous work that is not a read of the unlocked vault (a file read, the vault of an
    /// import preview) on the session's thread; a change to the vault's files is noticed after it.
    public func perform<T: Sendable>(_ work: @Sendable () throws -> T) throws -> T {
        defer { if vault != nil { noticeChanges() } }
        return try work()
    }

    /// The executor blocking work of a task of the session's runs on (an upgrade's run: its vault
    /// calls then take the session's thread, like everything else).
    public nonisolated var taskExecutor: any TaskExecutor { executor }

    /// Whether the vault's files changed since the session last looked (another process wrote, or
    /// the session's own write): then the revision grows and subscribers hear it.
    func noticeChanges() {
        let stamp = Self.fileStamp(configuration.vaultURL)
        guard stamp != fileStamp else { return }
        fileStamp = stamp
        revision += 1
        publish(.changed(revision: revision))
    }

    /// Looks for changes another process made, without a vault call (two `stat` calls).
    public func refresh() {
        if vault != nil { noticeChanges() }
    }

    /// The vault file's and its write-ahead log's modification times (nanoseconds) and sizes: they
    /// change with every commit, whichever process made it.
    static func fileStamp(_ url: URL) -> [Int64] {
        [url.path, url.path + "-wal"].flatMap { file -> [Int64] in
            var info = stat()
            guard stat(file, &info) == 0 else { return [0, 0] }
            #if canImport(Darwin)
            let modified = info.st_mtimespec
            #else
            let modified = info.st_mtim
            #endif
            return [Int64(modified.tv_sec) * 1_000_000_000 + Int64(modified.tv_nsec), Int64(info.st_size)]
        }
    }

    // MARK: Idle lock (a setting kept in the vault)

    static let settingsKind = "agent-settings"

    /// The idle lock in force (seconds; infinity: never).
    public var idleLockSeconds: TimeInterval { idleLock }

    /// Changes the idle lock now and keeps it in the vault (sealed, read at every unlock), so it
    /// holds for the next agent too. `.infinity` never locks.
    public func setIdleLock(_ seconds: TimeInterval) throws(SessionError) {
        guard seconds > 0 else { throw SessionError(.badRequest, "The idle lock must be longer than 0 seconds.") }
        let content = Data(#"{"idleLockSeconds":\#(seconds.isFinite ? Int(seconds) : 0)}"#.utf8)
        let created = now
        do {
            // A setting, not a credential: no new revision (front ends' caches stay good).
            try writeWithoutCredentialChanges { vault in
                try vault.saveAgentRecord(
                    AgentRecord(id: Self.settingsKind, kind: Self.settingsKind, content: content, created: created)
                )
            }
        } catch let error as SessionError {
            throw error
        } catch {
            throw SessionError(.failed, "The setting could not be saved: \(error)")
        }
        idleLock = seconds
    }

    /// The idle lock saved in `vault`, if any (0 means never).
    static func savedIdleLock(_ vault: Vault) throws(VaultError) -> TimeInterval? {
        guard let record = try vault.agentRecords(kind: settingsKind).last,
            let seconds = (try? JSONValue.parse(record.content))?["idleLockSeconds"]?.number
        else { return nil }
        return seconds == 0 ? .infinity : seconds
    }

    // MARK: Events

    /// What happens from now on: unlocks, locks, changes (each with the revision it made).
    public func events() -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(64))
        nextSubscriber += 1
        let id = nextSubscriber
        subscribers[id] = continuation
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            Task { await self.unsubscribe(id) }
        }
        return stream
    }

    func unsubscribe(_ id: Int) {
        subscribers[id] = nil
        observers[id] = nil
    }

    /// Calls `observer` with every event, synchronously on the session's executor, before the call
    /// that caused it returns (an adapter on the same executor — the agent — tells its browsers in
    /// order). It must not block; ``stopObserving(_:)`` ends it.
    @discardableResult
    public func observe(_ observer: @escaping @Sendable (Event) -> Void) -> Int {
        nextSubscriber += 1
        observers[nextSubscriber] = observer
        return nextSubscriber
    }

    public func stopObserving(_ id: Int) {
        observers[id] = nil
    }

    func publish(_ event: Event) {
        for id in observers.keys.sorted() { observers[id]?(event) }
        for subscriber in subscribers.values { subscriber.yield(event) }
    }
}

/// Why the session refused (its codes are stable; messages are for people, never a secret). It
/// travels as `{"code", "message"}` in a ``SessionResponse``; a vault error keeps its own code
/// (`notFound`, `ambiguous`, …).
public typealias SessionError = KeyhavenError<SessionErrorDomain>

/// The domain of ``SessionError``.
public enum SessionErrorDomain: KeyhavenErrorDomain {}

extension SessionError.Code {
    /// Nothing is unlocked: unlock first. Also `wrongPassword`, `badRequest`, `failed`, and
    /// `unsupportedVersion` (a message of another ``SessionProtocol`` version). A code's name is
    /// its property's (`#function`), as it travels.
    public static var locked: Self { Self(#function) }
    public static var wrongPassword: Self { Self(#function) }
    public static var badRequest: Self { Self(#function) }
    public static var failed: Self { Self(#function) }
    public static var unsupportedVersion: Self { Self(#function) }
}

/// A session error as it travels: `{"code", "message"}` (where it was made stays behind).
extension KeyhavenError: Codable where Domain == SessionErrorDomain {
    public init(from decoder: any Decoder) throws {
        let wire = try SessionErrorWire(from: decoder)
        self.init(Code(wire.code), wire.message)
    }

    public func encode(to encoder: any Encoder) throws {
        try SessionErrorWire(code: code.name, message: message).encode(to: encoder)
    }
}

private struct SessionErrorWire: Codable {
    var code: String
    var message: String
}
