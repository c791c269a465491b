public import Foundation
public import KeyhavenApp
import SyncClient
import Synchronization
import VaultSync
import VaultSyncBridge
import _KeyhavenSupport

/// The agent's background sync (docs/sync.md "Background sync"): while the session is unlocked and
/// sync is on, it long-polls the server (``SyncClient/SyncSession/waitForChanges(wait:)``) and runs
/// ``KeyhavenSession/syncNow()`` when another device wrote, and soon after a change of this vault
/// (its change events, after a short pause so that a burst of edits is one sync), so an edit made
/// here goes out without `keyhaven sync now`. A failed sync (the server out of reach) is tried again
/// after 1 s, 2 s, 4 s … up to 5 minutes. It stops at lock and when ``run()``'s task is cancelled
/// (the agent stopping); every task it starts is a child of that one.
///
/// Nothing here holds the session while the network runs (``KeyhavenSession/syncNow()`` does not
/// either), so AutoFill and the CLI are answered meanwhile; its vault calls are not the person's
/// activity (``KeyhavenApp/KeyhavenSession/backgroundWork``): the idle lock still locks.
public final class BackgroundSync: Sendable {
    /// What `keyhaven agent status --json` shows of it (`sync`).
    public struct State: Hashable, Sendable, Codable {
        /// `locked` (nothing runs), `off` (unlocked, sync not on), `waiting` (long-polling the server
        /// and watching for edits), `syncing`, `backingOff` (after a failure, until
        /// ``nextAttempt``), `stopped` (the agent stops).
        public var phase: String
        /// When the last sync (background or not) reached the server, as the vault records it.
        public var lastSync: Date?
        /// The code of the last failure (`unreachable`, `refused`, …), nil after a sync that worked.
        public var lastError: String?
        /// Its message (never a secret).
        public var lastErrorMessage: String?
        /// Failures in a row.
        public var failures: Int
        /// When the next attempt is due, while backing off.
        public var nextAttempt: Date?
        /// Syncs the loop ran since the agent started.
        public var syncs: Int

        public init() {
            (phase, failures, syncs) = ("locked", 0, 0)
        }
    }

    /// How long it waits, and how: injected so tests drive the schedule without waiting.
    public struct Timing: Sendable {
        /// One long poll (1 to 60 s).
        public var longPoll: Duration = .seconds(25)
        /// The pause after a change of the vault before its sync.
        public var debounce: Duration = .seconds(1)
        /// How often it looks for changes that sent no event (a resolution keeping the current
        /// value, a change another process made), and whether sync was turned on.
        public var recheck: Duration = .seconds(30)
        /// The first wait after a failure; it doubles with each further one, up to ``maximumBackoff``.
        public var firstBackoff: Duration = .seconds(1)
        public var maximumBackoff: Duration = .seconds(300)
        public var sleep: @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }

        public init() {}

        /// The wait after `failures` failures in a row (1: the first).
        public func backoff(after failures: Int) -> Duration {
            var delay = firstBackoff
            for _ in 1..<max(failures, 1) {
                delay = delay * 2
                if delay >= maximumBackoff { return maximumBackoff }
            }
            return min(delay, maximumBackoff)
        }
    }

    public let session: KeyhavenSession
    let timing: Timing
    private let current = Mutex(State())

    public init(session: KeyhavenSession, timing: Timing = Timing()) {
        self.session = session
        self.timing = timing
    }

    /// Where the loop is, what it last did, when it tries again.
    public var state: State { current.withLock { $0 } }

    private func update(_ change: (inout State) -> Void) {
        current.withLock { change(&$0) }
    }

    /// Runs until its task is cancelled: the loop while the session is unlocked, nothing while it
    /// is locked.
    public func run() async {
        let (events, continuation) = AsyncStream.makeStream(
            of: KeyhavenSession.Event.self,
            bufferingPolicy: .unbounded
        )
        let observer = await session.observe { event in
            if case .changed = event { return }
            continuation.yield(event)
        }
        var iterator = events.makeAsyncIterator()
        while !Task.isCancelled {
            if await session.isUnlocked {
                await withTaskGroup(of: Void.self) { group in
                    group.addTask { await self.whileUnlocked() }
                    while let event = await iterator.next() {
                        if case .locked = event { break }
                    }
                    group.cancelAll()
                }
            } else {
                update { ($0.phase, $0.nextAttempt) = ("locked", nil) }
                while let event = await iterator.next() {
                    if case .unlocked = event { break }
                }
            }
        }
        continuation.finish()
        await session.stopObserving(observer)
        update { ($0.phase, $0.nextAttempt) = ("stopped", nil) }
    }

    /// What wakes the loop while it waits.
    enum Signal: Sendable {
        /// The vault changed (an edit here, or a sync's own write-back).
        case changed
        /// Time to look for pending changes that sent no event.
        case recheck
        /// Another device wrote (the long poll answered).
        case remote
        /// The long poll failed.
        case failed(SyncError)
        /// Asked to sync soon (sync turned on, a conflict resolved).
        case nudged
    }

    /// Syncs at unlock, then waits for work and syncs, until cancelled (at lock).
    func whileUnlocked() async {
        let (signals, signal) = AsyncStream.makeStream(of: Signal.self, bufferingPolicy: .unbounded)
        // At most one `.changed` waits in the queue: a burst of edits made while a sync runs is
        // one pause and one look, not one each.
        let queued = ChangeQueued()
        let observer = await session.observe { event in
            if case .changed = event, !queued.flag.exchange(true, ordering: .acquiringAndReleasing) {
                signal.yield(.changed)
            }
        }
        let nudge = SyncNudges.register(session) { signal.yield(.nudged) }
        var iterator = signals.makeAsyncIterator()
        var failures = 0
        // The long poll's failures in a row, apart: a sync that works does not reset them (a
        // proxy that cuts long requests must not cost a sync and a poll every second).
        var pollFailures = 0
        var repeats = 0
        // Items the server refused in the last sync: they stay pending, but only an edit here sends
        // them again, not every look (they would go out every 30 s forever).
        var refused = 0
        var client: (key: String, client: SyncHTTPClient)?
        loop: while !Task.isCancelled {
            // Off: nothing to do until sync is turned on (a nudge, a change, or the next look).
            let on: Bool
            do {
                on =
                    try await KeyhavenSession.$backgroundWork.withValue(true) {
                        try await session.savedSyncStateInBackground()
                    } != nil
            } catch {
                on = true  // the sync below says what is wrong
            }
            if !on {
                (failures, pollFailures, client) = (0, 0, nil)
                update { ($0.phase, $0.failures, $0.nextAttempt) = ("off", 0, nil) }
                guard await waitWhileOff(signal: signal, &iterator) else { break loop }
                queued.flag.store(false, ordering: .releasing)
                continue loop
            }
            // Sync.
            update { $0.phase = "syncing" }
            do {
                let report = try await KeyhavenSession.$backgroundWork.withValue(true) {
                    try await session.syncNowWhenFree()
                }
                failures = 0
                update {
                    ($0.phase, $0.lastSync, $0.lastError) = ("waiting", report.status.lastSync, nil)
                    ($0.lastErrorMessage, $0.failures, $0.nextAttempt) = (nil, 0, nil)
                    $0.syncs += 1
                }
                // Edits made while it ran are pending: send them now (a few times at most: an item
                // the server refuses stays pending).
                if report.status.pending > report.rejections.count, repeats < 3 {
                    repeats += 1
                    continue loop
                }
                repeats = 0
                refused = report.rejections.count
            } catch {
                let failure = error as? SyncError ?? SyncError(.storage, "\(error)")
                switch failure.code {
                case .notEnabled:
                    update { ($0.phase, $0.failures, $0.nextAttempt) = ("off", 0, nil) }
                    (failures, pollFailures, client) = (0, 0, nil)
                    // Off: wait for sync to be turned on (a nudge, or the next look).
                    guard await waitWhileOff(signal: signal, &iterator) else { break loop }
                    queued.flag.store(false, ordering: .releasing)
                    continue loop
                case .locked:
                    break loop
                default:
                    failures += 1
                    guard await backOff(after: failure, failures: failures) else { break loop }
                    continue loop
                }
            }
            // Wait for work.
            let state: SyncDeviceState?
            do {
                state = try await KeyhavenSession.$backgroundWork.withValue(true) {
                    try await session.savedSyncStateInBackground()
                }
            } catch {
                failures += 1
                guard await backOff(after: error, failures: failures) else { break loop }
                continue loop
            }
            guard let state else { continue loop }
            let key = "\(state.server) \(state.account) \(state.deviceKey.id)"
            if client?.key != key {
                do {
                    client = (
                        key,
                        try SyncHTTPClient(
                            server: state.server,
                            key: state.deviceKey,
                            account: state.account,
                            now: session.configuration.now
                        )
                    )
                } catch {
                    failures += 1
                    let failure = SyncError(.invalidServer, error.message)
                    guard await backOff(after: failure, failures: failures) else { break loop }
                    continue loop
                }
            }
            switch await waitForWork(
                state,
                client: client!.client,
                refused: refused,
                queued: queued,
                signal: signal,
                &iterator
            ) {
            case .sync: continue loop
            case .remote:
                pollFailures = 0
                continue loop
            case .stop: break loop
            case .failed(let error):
                pollFailures += 1
                guard await backOff(after: error, failures: pollFailures) else { break loop }
            }
        }
        signal.finish()
        SyncNudges.remove(nudge)
        await session.stopObserving(observer)
    }

    /// Whether a `.changed` waits in the loop's queue.
    final class ChangeQueued: Sendable {
        let flag = Atomic<Bool>(false)
    }

    enum Work {
        /// Sync: the long poll answered with another device's writes.
        case remote
        case sync, stop
        case failed(SyncError)
    }

    /// Waits until another device writes (a long poll, in a child task), this vault has changes
    /// pending (after a change event and the pause, or at the next look), or a nudge.
    func waitForWork(
        _ state: SyncDeviceState,
        client: SyncHTTPClient,
        refused: Int,
        queued: ChangeQueued,
        signal: AsyncStream<Signal>.Continuation,
        _ iterator: inout AsyncStream<Signal>.Iterator
    ) async -> Work {
        let timing = self.timing
        let clock = session.configuration.now
        return await withTaskGroup(of: Void.self) { group -> Work in
            group.addTask {
                var remote = SyncSession(
                    replica: state.replica,
                    codec: SealedPayloads(sealer: state.sealer, generator: SystemRandomNumberGenerator()),
                    client: client,
                    now: { CredentialRecordMapping.milliseconds(clock()) },
                    sleep: timing.sleep
                )
                do {
                    // This device's own pushes come back in the long poll (the server does not
                    // filter them): an answer that changes no record here is that echo, so the
                    // poll goes on from the cursor past it instead of a second sync.
                    while true {
                        let before = remote.replica.records
                        try await remote.waitForChanges(wait: timing.longPoll)
                        if remote.replica.records != before { break }
                    }
                    signal.yield(.remote)
                } catch {
                    guard !Task.isCancelled, !(error is CancellationError) else { return }
                    signal.yield(.failed(KeyhavenSession.syncError(error, pending: nil, doing: "waiting for changes")))
                }
            }
            group.addTask { await Self.tick(timing, signal) }
            defer { group.cancelAll() }
            while let next = await iterator.next() {
                switch next {
                case .remote:
                    return .remote
                case .nudged:
                    return .sync
                case .failed(let error):
                    return .failed(error)
                case .changed:
                    // A pause, so that a burst of edits (an import, a script) is one sync.
                    guard (try? await timing.sleep(timing.debounce)) != nil else { return .stop }
                    // The look below sees every edit made until now: a later one queues anew.
                    queued.flag.store(false, ordering: .releasing)
                    if await hasPending(beyond: 0) { return .sync }
                case .recheck:
                    if await hasPending(beyond: refused) { return .sync }
                }
            }
            return .stop
        }
    }

    /// Signals a recheck every ``Timing/recheck`` until cancelled.
    static func tick(_ timing: Timing, _ signal: AsyncStream<Signal>.Continuation) async {
        while (try? await timing.sleep(timing.recheck)) != nil, !Task.isCancelled {
            signal.yield(.recheck)
        }
    }

    /// Waits out the back-off after a failure, saying when the next attempt is due; false when
    /// cancelled meanwhile.
    func backOff(after error: any Error, failures: Int) async -> Bool {
        let failure = error as? SyncError ?? SyncError(.storage, "\(error)")
        let delay = timing.backoff(after: failures)
        let due = session.configuration.now().addingTimeInterval(
            Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18
        )
        update {
            ($0.phase, $0.lastError, $0.lastErrorMessage) = ("backingOff", failure.code.name, failure.message)
            ($0.failures, $0.nextAttempt) = (failures, due)
        }
        do {
            try await timing.sleep(delay)
            return !Task.isCancelled
        } catch {
            return false
        }
    }

    /// While sync is off: waits for a nudge (sync turned on through this session), a change or
    /// the next look (sync turned on by another process); false when cancelled.
    func waitWhileOff(
        signal: AsyncStream<Signal>.Continuation,
        _ iterator: inout AsyncStream<Signal>.Iterator
    ) async -> Bool {
        let timing = self.timing
        return await withTaskGroup(of: Void.self) { group -> Bool in
            group.addTask { await Self.tick(timing, signal) }
            defer { group.cancelAll() }
            while let next = await iterator.next() {
                switch next {
                case .nudged, .recheck, .changed: return true
                case .remote, .failed: continue
                }
            }
            return false
        }
    }

    /// Whether the vault has more than `count` changes the server has not confirmed.
    func hasPending(beyond count: Int) async -> Bool {
        let status = try? await KeyhavenSession.$backgroundWork.withValue(true) { try await session.syncStatus() }
        return (status?.pending ?? 0) > count
    }
}

/// Asks a session's background sync to sync soon: after `sync enable` (so it starts at once) and
/// a resolved conflict (which may change nothing in the vault, so no change event says so).
enum SyncNudges {
    private static let registered = Mutex<[Int: (session: ObjectIdentifier, nudge: @Sendable () -> Void)]>([:])
    private static let counter = Atomic<Int>(0)

    static func register(_ session: KeyhavenSession, _ nudge: @escaping @Sendable () -> Void) -> Int {
        let id = counter.wrappingAdd(1, ordering: .relaxed).newValue
        registered.withLock { $0[id] = (ObjectIdentifier(session), nudge) }
        return id
    }

    static func remove(_ id: Int) {
        _ = registered.withLock { $0.removeValue(forKey: id) }
    }

    static func nudge(_ session: KeyhavenSession) {
        let id = ObjectIdentifier(session)
        let nudges = registered.withLock { $0.values.filter { $0.session == id }.map(\.nudge) }
        for nudge in nudges { nudge() }
    }
}

extension KeyhavenSession {
    /// ``syncNow()``, after the sync of this session that runs (the background one, or a manual
    /// one) ends, rather than refused with `busy`; waits at most 30 s for it.
    func syncNowWhenFree() async throws(SyncError) -> SyncReport {
        let claim = try await SyncGate.claim(self, waitingUpTo: .seconds(30))
        defer { claim.release() }
        return try await syncNowHoldingGate()
    }
}

extension KeyhavenSession {
    /// The saved sync state (what the long poll needs: the server, the key, the replica's cursor).
    func savedSyncStateInBackground() throws(SyncError) -> SyncDeviceState? {
        try syncVault(readOnly: true) { snapshot in try SyncDeviceState.load(snapshot) }
    }
}
