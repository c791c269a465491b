public import VaultSync

/// One device's ``VaultSync/SyncReplica`` run against a sync server through ``SyncHTTPClient``:
/// pull (the changes since the replica's cursor, merged), push (the outbox until it is empty,
/// merging stale answers and sending on top of them), and a long-poll wait for other devices'
/// writes. Pure orchestration: the caller owns the replica (and persists it), edits it through
/// ``replica``, and injects the wall clock; nothing here touches a vault.
///
/// A push whose answer was lost is sent again as the same mutation (same id, same bytes), so the
/// server applies it once; a push that could not be sent at all stays in flight in the replica
/// and goes out first on the next ``push()``.
public struct SyncSession<Codec: PayloadCodec & Sendable>: Sendable {
    public var replica: SyncReplica
    /// How payloads are sealed and opened (``VaultSync/SealedPayloads`` on a real device).
    public var codec: Codec
    public let client: SyncHTTPClient
    /// Milliseconds since 1970 (the replica's clock input).
    public let now: @Sendable () -> UInt64
    /// How many times one mutation is sent when its answer is lost, before ``push()`` gives up.
    public var attempts = 3
    /// How many stale answers for one item one ``push()`` merges before it gives up with
    /// ``SyncClientError/Code/noProgress`` (each is a write of another device landing in between,
    /// or a server that does not apply compare-and-swap).
    public var mergesPerItem = 8
    /// How many `busy` answers in a row ``waitForChanges(wait:)`` waits out before it throws.
    public var busyAnswers = 5
    /// Waits (injected in tests; by default `Task.sleep`); throws `CancellationError` when the task
    /// is cancelled.
    public var sleep: @Sendable (Duration) async throws -> Void

    public init(
        replica: SyncReplica,
        codec: Codec,
        client: SyncHTTPClient,
        now: @escaping @Sendable () -> UInt64,
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    ) {
        self.replica = replica
        self.codec = codec
        self.client = client
        self.now = now
        self.sleep = sleep
    }

    /// What a push did.
    public struct PushReport: Hashable, Sendable {
        /// Items the server now holds as this device does.
        public var confirmed = 0
        /// Stale answers merged (and sent again on top of the server's revision).
        public var merged = 0
        /// Mutations sent again after a lost answer.
        public var resent = 0
        /// Items the server refused, with its (neutralised) reason; they stay pending.
        public var rejected: [ItemID: String] = [:]

        public init() {}
    }

    /// Pulls, then pushes: afterwards the server holds every change of this device, and this
    /// device every change the server had.
    @discardableResult
    public mutating func sync() async throws -> PushReport {
        try await pull()
        return try await push()
    }

    /// Merges every change on the server since the replica's cursor, page by page. When the
    /// server answers that the cursor is ahead of it (it was restored from a backup), the replica
    /// resyncs (``VaultSync/SyncReplica/resync()``) and pulls from 0, once; the next ``push()``
    /// sends what the server lost.
    ///
    /// - Returns: the merge of each item that changed.
    @discardableResult
    public mutating func pull() async throws -> [ItemID: MergeResult] {
        var merges: [ItemID: MergeResult] = [:]
        var resynced = false
        while true {
            let before = replica.cursor
            let batch: ChangeBatch
            do {
                batch = try await client.changes(since: before)
            } catch let error as SyncClientError where error.code == .cursorAhead && !resynced {
                resynced = true
                replica.resync()
                continue
            }
            merges.merge(try replica.apply(batch, now: now(), decoding: codec)) { $1 }
            if batch.items.isEmpty || batch.sequence <= before { return merges }
        }
    }

    /// Sends the outbox until it is empty (or holds only items the server refused).
    @discardableResult
    public mutating func push() async throws -> PushReport {
        var report = PushReport()
        var merges: [ItemID: Int] = [:]
        while let mutation = try replica.nextMutation(encoding: &codec) {
            // Every item left was refused this round: they wait for the next one.
            if report.rejected[mutation.item] != nil { break }
            let response = try await send(mutation, &report)
            switch try replica.handle(response, to: mutation, now: now(), decoding: codec) {
            case .confirmed: report.confirmed += 1
            case .acceptedWithMoreToSend: break
            case .merged:
                report.merged += 1
                merges[mutation.item, default: 0] += 1
                if merges[mutation.item, default: 0] >= mergesPerItem, replica.outbox.contains(mutation.item) {
                    throw SyncClientError(
                        .noProgress,
                        "pushing item \(mutation.item): the server answered stale \(mergesPerItem) times in a row "
                            + "(another device writing it constantly, or not a working sync server); the change "
                            + "stays pending here — sync again later"
                    )
                }
            case .rejected(let reason): report.rejected[mutation.item] = reason
            }
        }
        return report
    }

    /// Sends `mutation`, again (the same one) while its answer is lost.
    private func send(_ mutation: Mutation, _ report: inout PushReport) async throws -> PushResponse {
        var attempt = 1
        while true {
            do {
                return try await client.push(mutation)
            } catch let error as SyncClientError where error.code == .noAnswer && attempt < attempts {
                attempt += 1
                report.resent += 1
            }
        }
    }

    /// Waits until another device writes, then merges what it wrote (and anything after it): long
    /// polls of `wait` each (1 to 60 seconds), one after the other, until something changed. An
    /// empty answer that comes back well before `wait` (a server with `--max-wait 0` or a shorter
    /// one) is followed by a sleep for the rest, so the server is asked at most once per `wait`;
    /// a `busy` answer by a sleep of its `Retry-After`, up to ``busyAnswers`` in a row. Cancel the
    /// task to stop waiting (it throws `CancellationError`).
    ///
    /// - Returns: the merge of each item that changed.
    /// - Throws: ``SyncClientError/Code/invalidRequest`` for a wait under a second;
    ///   ``SyncClientError/Code/busy`` after ``busyAnswers`` busy answers in a row.
    @discardableResult
    public mutating func waitForChanges(wait: Duration = .seconds(25)) async throws -> [ItemID: MergeResult] {
        guard wait >= .seconds(1) else {
            throw SyncClientError(
                .invalidRequest,
                "a long poll waits at least 1 second (it was asked for \(wait)); a shorter one would ask the "
                    + "server again and again"
            )
        }
        let clock = ContinuousClock()
        var busy = 0
        while true {
            try Task.checkCancellation()
            let start = clock.now
            let batch: ChangeBatch
            do {
                batch = try await client.changes(since: replica.cursor, wait: wait)
                busy = 0
            } catch let error as SyncClientError where error.code == .busy {
                busy += 1
                guard busy < busyAnswers else { throw error }
                try await sleep(.seconds(error.retryAfter ?? 5))
                continue
            }
            var merges = try replica.apply(batch, now: now(), decoding: codec)
            if !batch.items.isEmpty {
                merges.merge(try await pull()) { $1 }
                return merges
            }
            // Answered empty well before the wait asked: the server waits less (or not at all).
            let left = min(wait, .seconds(60)) - (clock.now - start)
            if left > .milliseconds(500) { try await sleep(left) }
        }
    }
}
