import Crypto
import Foundation
public import KeyhavenApp
import SyncClient
import Synchronization
import Vault
import VaultSync
import VaultSyncBridge
public import _KeyhavenSupport

/// Sync as one more client of the session (issue 28): the vault stays where edits land, the
/// session's thread runs every vault call, and the network runs between them without holding the
/// session — other requests (AutoFill, the CLI, the web app) are answered while a sync waits on
/// the server.
extension KeyhavenSession {
    /// Turns sync on for this vault, as the first device of a new account on `server`: makes this
    /// device's key, the sync vault key and the replica, creates the account, takes in every
    /// credential (with its history and dates; recently deleted ones as deletions), saves it all
    /// in the vault, then syncs.
    ///
    /// - Returns: the status after the first sync.
    /// - Throws: ``SyncError`` `alreadyEnabled`, `invalidServer`, `unreachable` (nothing was
    ///   created: run it again), `refused`, `locked`, `storage`. Once the account exists, a failed
    ///   first push leaves sync on with every credential pending (`unreachable`: `keyhaven sync
    ///   now` sends them).
    public func enableSync(server: String, deviceName: String) async throws(SyncError) -> SyncStatus {
        let claim = try SyncGate.claim(self)
        defer { claim.release() }
        let name = try checkSyncOff(deviceName: deviceName, advice: "`keyhaven sync status` shows it")
        let key = SyncDeviceKey()
        let client = try Self.client(server: server, key: key, account: nil, now: configuration.now)
        let account: String
        do {
            account = try await client.createAccount(name: name).account
        } catch {
            throw Self.syncError(error, pending: nil, doing: "creating the sync account")
        }
        var random = SystemRandomNumberGenerator()
        var state = SyncDeviceState(
            server: await client.server,
            account: account,
            deviceName: name,
            deviceKey: key,
            vaultKey: SymmetricKey(size: .bits256),
            vaultID: VaultID(using: &random),
            replica: SyncReplica(device: DeviceID(using: &random)),
            lastSync: nil
        )
        let (now, initial) = (milliseconds, state)
        state = try syncVault { transaction in
            var state = initial
            guard try SyncDeviceState.load(transaction) == nil else {
                throw SyncError(.alreadyEnabled, "sync was turned on meanwhile (another process)")
            }
            try VaultReplicaFold.fold(transaction, into: &state.replica, base: [:], unreadable: [], now: now)
            try state.save(transaction, replica: true)
            return state
        }
        return try await run(client: client).status
    }

    /// Syncs now: the vault's edits since the last sync go into the replica, the replica pulls
    /// and pushes through the server, and what the merge holds comes back into the vault (new
    /// credentials created, changed ones updated, deleted ones moved to recently deleted) through
    /// the vault's own writes, so the session's change events fire.
    ///
    /// - Throws: ``SyncError`` `notEnabled`, `unreachable` (at once for a server that is not
    ///   there; every change stays pending), `refused`, `busy`, `locked`, `damaged`, `storage`.
    public func syncNow() async throws(SyncError) -> SyncReport {
        let claim = try SyncGate.claim(self)
        defer { claim.release() }
        return try await syncNowHoldingGate()
    }

    /// ``syncNow()`` for a caller that holds the ``SyncGate``.
    func syncNowHoldingGate() async throws(SyncError) -> SyncReport {
        let (_, client) = try enabledSync()
        return try await run(client: client)
    }

    static var notEnabled: SyncError {
        SyncError(.notEnabled, "sync is off for this vault: `keyhaven sync enable --server URL` turns it on")
    }

    /// Whether sync is on, with which server, account and device, what is pending (the items with
    /// changes the server has not confirmed, edits made in the vault since the last sync
    /// included), how many items have conflicts and when the last sync reached the server. Reads
    /// the vault only: nothing is written.
    public func syncStatus() throws(SyncError) -> SyncStatus {
        let now = milliseconds
        return try syncVault(readOnly: true) { snapshot -> SyncStatus in
            guard var state = try SyncDeviceState.load(snapshot) else { return .disabled }
            let (known, unreadable) = VaultReplicaFold.credentials(of: state.replica)
            try VaultReplicaFold.fold(snapshot, into: &state.replica, base: known, unreadable: unreadable, now: now)
            return state.status
        }
    }

    /// Turns sync off on this device: the device's sync state (its key, the sync vault key, the
    /// replica with whatever was still pending) is removed from the vault, in one transaction; the
    /// credentials stay as they are. The server keeps the account and this device's entry (the
    /// person's other devices go on syncing); removing it there is a revocation from another device
    /// (`keyhaven device revoke`, not in this version yet). A sync of this session that runs (the
    /// background one) ends first: it waits for it, up to 30 s.
    ///
    /// - Returns: the status sync had (the server and account this device leaves).
    /// - Throws: ``SyncError`` `notEnabled`, `busy` (a sync still ran after 30 s), `locked`, `storage`.
    public func disableSync() async throws(SyncError) -> SyncStatus {
        let claim = try await SyncGate.claim(self, waitingUpTo: .seconds(30))
        defer { claim.release() }
        return try syncVault { transaction in
            guard let state = try SyncDeviceState.load(transaction) else { throw Self.notEnabled }
            try transaction.removeState()
            return state.status
        }
    }

    // MARK: One sync

    /// One sync of `state`, in the order that cannot lose an edit whenever the process dies:
    ///
    /// 1. One vault transaction: the vault's edits since the last sync are written into the
    ///    replica, which is saved. Dying before it commits: the edits are still in the vault (and
    ///    found again); after: they are in the saved outbox as well.
    /// 2. The network: pull, then push, on a copy of the replica in memory. Nothing on disk
    ///    changes. Dying here loses nothing: the saved replica still holds every edit pending and
    ///    its old cursor; the next sync pulls again, and a push the server already applied comes
    ///    back as a stale answer holding that very write, merged without a duplicate.
    /// 3. One vault transaction, also after a failed network step (what was merged so far must
    ///    reach the vault with the replica, or the next step 1 would take the vault's older values
    ///    for edits): edits made in the vault during step 2 are written into the replica as it was
    ///    after step 1 — so a field the server also changed meets them in a merge (a conflict,
    ///    marked, both values kept) and a deletion has seen only what this device had seen (an
    ///    edit from elsewhere brings the item back) — and merged with the network's result; the
    ///    merged credentials are written into the vault and the replica saved (only if it
    ///    changed) — one commit, so the vault and the saved replica never disagree on disk. If
    ///    another process saved the sync state after step 1, nothing is written and the sync
    ///    fails with `busy`: the vault and that process's state hold every edit, and the server
    ///    every push, so the next sync finds them all.
    func run(client: SyncHTTPClient) async throws(SyncError) -> SyncReport {
        let now = milliseconds
        // 1.
        let (saved, base, generation) = try syncVault { transaction in
            guard var state = try SyncDeviceState.load(transaction) else { throw Self.notEnabled }
            let start = state.replica
            let (known, unreadable) = VaultReplicaFold.credentials(of: state.replica)
            try VaultReplicaFold.fold(transaction, into: &state.replica, base: known, unreadable: unreadable, now: now)
            if state.replica != start { try state.save(transaction, replica: true) }
            return (
                state, VaultReplicaFold.credentials(of: state.replica).credentials,
                try SyncDeviceState.generation(transaction)
            )
        }
        var state = saved
        // 2.
        let clock = configuration.now
        var session = SyncSession(
            replica: state.replica,
            codec: SealedPayloads(sealer: state.sealer, generator: SystemRandomNumberGenerator()),
            client: client,
            now: { CredentialRecordMapping.milliseconds(clock()) }
        )
        var failure: SyncError?
        var pushed: SyncSession<SealedPayloads<SystemRandomNumberGenerator>>.PushReport?
        var pulled = 0
        do {
            pulled = try await session.pull().count
            pushed = try await session.push()
        } catch {
            failure = Self.syncError(error, pending: session.replica.outbox.entries.count, doing: "syncing")
        }
        if let duringNetwork = SyncHooks.duringNetwork { await duringNetwork() }
        // 3.
        state.replica = session.replica
        if failure == nil { state.lastSync = configuration.now() }
        let after = milliseconds
        let merged = state
        let finish: @Sendable (VaultSyncTransaction) throws -> (SyncDeviceState, VaultReplicaFold.Written) = {
            transaction in
            guard try SyncDeviceState.generation(transaction) == generation else {
                throw SyncError(
                    .busy,
                    "another Keyhaven process synced this vault meanwhile; nothing is lost (the vault holds "
                        + "every edit, the server every change sent): run `keyhaven sync now` again"
                )
            }
            var local = saved.replica
            let unreadable = VaultReplicaFold.credentials(of: local).unreadable
            try VaultReplicaFold.fold(transaction, into: &local, base: base, unreadable: unreadable, now: after)
            var state = merged
            for (item, record) in local.records where saved.replica.records[item] != record {
                try state.replica.adopt(record, now: after)
            }
            let written = try VaultReplicaFold.writeBack(state.replica, into: transaction)
            try state.save(transaction, replica: state.replica != saved.replica)
            return (state, written)
        }
        let written: (SyncDeviceState, VaultReplicaFold.Written)
        do {
            written = try syncVault(changedCredentials: { $0.1.changed }, finish)
        } catch {
            // The network's error says what happened first; the vault's is added to it.
            guard let failure else { throw error }
            throw SyncError(failure.code, "\(failure.message) Saving what was merged also failed: \(error.message)")
        }
        state = written.0
        if let failure { throw failure }
        var report = SyncReport(status: state.status)
        report.pushed = pushed?.confirmed ?? 0
        report.pulled = pulled
        report.created = written.1.created
        report.updated = written.1.updated
        report.deleted = written.1.deleted
        report.restored = written.1.restored
        if let rejected = pushed?.rejected {
            report.rejections = rejected.keys.sorted().map { "item \($0): \(Self.printable(rejected[$0]!))" }
        }
        return report
    }

    // MARK: Helpers

    var milliseconds: UInt64 { CredentialRecordMapping.milliseconds(configuration.now()) }

    func loadSyncState() throws(SyncError) -> SyncDeviceState? {
        try syncVault(readOnly: true) { snapshot in try SyncDeviceState.load(snapshot) }
    }

    /// Runs `body` in one vault transaction on the session's thread, or on a read-only snapshot.
    /// A write publishes a change of credentials only when `changedCredentials` says its result
    /// made one (sync's own state is not one: a sync that brought nothing publishes nothing).
    func syncVault<T: Sendable>(
        readOnly: Bool = false,
        changedCredentials: (T) -> Bool = { _ in false },
        _ body: @Sendable (VaultSyncTransaction) throws -> T
    ) throws(SyncError) -> T {
        do {
            if readOnly { return try withVault { vault in try vault.syncSnapshot(body) } }
            return try write({ vault in try vault.syncTransaction(body) }, changedCredentials: changedCredentials)
        } catch let error as SyncError {
            throw error
        } catch let error as SessionError where error.code == .locked {
            throw SyncError(.locked, error.message)
        } catch let error as VaultError {
            throw SyncError(.storage, "the vault could not be read or written: \(error.message)")
        } catch let error as VaultSyncError {
            throw SyncError(.damaged, "the sync state could not be updated: \(error.message)")
        } catch {
            throw SyncError(.storage, "the vault could not be read or written: \(error)")
        }
    }

    /// The saved sync state and a client for its server, account and device key.
    ///
    /// - Throws: ``SyncError`` `notEnabled` while sync is off, `invalidServer`, `damaged`, `locked`.
    func enabledSync() throws(SyncError) -> (state: SyncDeviceState, client: SyncHTTPClient) {
        guard let state = try loadSyncState() else { throw Self.notEnabled }
        let client = try Self.client(
            server: state.server,
            key: state.deviceKey,
            account: state.account,
            now: configuration.now
        )
        return (state, client)
    }

    /// Refuses a vault with sync on already (`advice`: what the person may do instead) and returns
    /// the device name given, trimmed and not empty. The caller holds the ``SyncGate``.
    ///
    /// - Throws: ``SyncError`` `alreadyEnabled`, `invalidInput`, `damaged`, `locked`.
    func checkSyncOff(deviceName: String, advice: String) throws(SyncError) -> String {
        if let state = try loadSyncState() {
            throw SyncError(
                .alreadyEnabled,
                "sync is already on for this vault (server \(state.server), account \(state.account)); \(advice)"
            )
        }
        let name = deviceName.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !name.isEmpty else { throw SyncError(.invalidInput, "give this device a name (--name NAME)") }
        return name
    }

    static func client(
        server: String,
        key: SyncDeviceKey,
        account: String?,
        now: @escaping @Sendable () -> Date
    ) throws(SyncError) -> SyncHTTPClient {
        do {
            return try SyncHTTPClient(server: server, key: key, account: account, now: now)
        } catch {
            throw SyncError(.invalidServer, error.message)
        }
    }

    /// A client's (or the replica's) error as the person reads it; `pending` says what waits.
    static func syncError(_ error: any Error, pending: Int?, doing: String) -> SyncError {
        let kept =
            pending.map {
                $0 == 0 ? "" : " \($0 == 1 ? "1 change stays" : "\($0) changes stay") pending here for the next sync."
            } ?? ""
        guard let error = error as? SyncClientError else {
            if let error = error as? VaultSyncError {
                return SyncError(.damaged, "\(doing): \(error.message).\(kept)")
            }
            return SyncError(.refused, "\(doing) failed: \(error).\(kept)")
        }
        switch error.code {
        case .unreachable, .noAnswer, .busy:
            return SyncError(.unreachable, "\(doing): \(error.message).\(kept)")
        case .invalidServer:
            return SyncError(.invalidServer, error.message)
        default:
            return SyncError(.refused, "\(doing): \(error.message).\(kept)")
        }
    }
}

/// One sync at a time per session: a second `syncNow` while one waits on the server is refused
/// with `busy` rather than run on an older copy of the replica.
struct SyncGate {
    private static let running = Mutex<Set<ObjectIdentifier>>([])
    let id: ObjectIdentifier

    static func claim(_ session: KeyhavenSession) throws(SyncError) -> SyncGate {
        let id = ObjectIdentifier(session)
        guard running.withLock({ $0.insert(id).inserted }) else {
            throw SyncError(.busy, "a sync of this vault is already running; wait for it to end")
        }
        return SyncGate(id: id)
    }

    /// ``claim(_:)``, after the sync of this session that runs ends, rather than `busy`: polls
    /// every 50 ms, up to `limit`; `busy` after it, or at once when the task is cancelled.
    static func claim(_ session: KeyhavenSession, waitingUpTo limit: Duration) async throws(SyncError) -> SyncGate {
        let deadline = ContinuousClock.now + limit
        while true {
            do throws(SyncError) {
                return try claim(session)
            } catch {
                guard ContinuousClock.now < deadline, !Task.isCancelled else { throw error }
                do {
                    try await Task.sleep(for: .milliseconds(50))
                } catch {
                    throw SyncError(.busy, "a sync of this vault is already running; wait for it to end")
                }
            }
        }
    }

    func release() {
        _ = Self.running.withLock { $0.remove(id) }
    }
}

/// Points where tests step into a sync (a vault edit, another process's sync, made while the
/// network runs). Nil outside tests.
enum SyncHooks {
    /// Runs after the network step, before the last vault transaction.
    @TaskLocal static var duringNetwork: (@Sendable () async -> Void)?
}

extension KeyhavenSession {
    /// A server's text as it may be printed: control and format characters (a terminal's escapes,
    /// line breaks that forge output, bidi overrides that reorder it) and line or paragraph
    /// separators replaced by U+FFFD — what the server refuses in a device name, in case a server
    /// returns one anyway.
    static func printable(_ text: String) -> String {
        let refused: Set<Unicode.GeneralCategory> = [.control, .format, .lineSeparator, .paragraphSeparator]
        return String(
            String.UnicodeScalarView(
                text.unicodeScalars.map { refused.contains($0.properties.generalCategory) ? "\u{FFFD}" : $0 }
            )
        )
    }
}
