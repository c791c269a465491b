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

    public init(replica: SyncReplica, codec: Codec, client: SyncHTTPClient, now: @escaping @Sendable () -> UInt64) {
        self.replica = replica
        self.codec = codec
        self.client = client
        self.now = now
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

    /// Merges every change on the server since the replica's cursor, page by page.
    ///
    /// - Returns: the merge of each item that changed.
    @discardableResult
    public mutating func pull() async throws -> [ItemID: MergeResult] {
        var merges: [ItemID: MergeResult] = [:]
        while true {
            let before = replica.cursor
            let batch = try await client.changes(since: before)
            merges.merge(try replica.apply(batch, now: now(), decoding: codec)) { $1 }
            if batch.items.isEmpty || batch.sequence <= before { return merges }
        }
    }

    /// Sends the outbox until it is empty (or holds only items the server refused).
    @discardableResult
    public mutating func push() async throws -> PushReport {
        var report = PushReport()
        while let mutation = try replica.nextMutation(encoding: &codec) {
            // Every item left was refused this round: they wait for the next one.
            if report.rejected[mutation.item] != nil { break }
            let response = try await send(mutation, &report)
            switch try replica.handle(response, to: mutation, now: now(), decoding: codec) {
            case .confirmed: report.confirmed += 1
            case .acceptedWithMoreToSend: break
            case .merged: report.merged += 1
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
    /// polls of `wait` each (at most 60 seconds), one after the other, until something changed.
    /// Cancel the task to stop waiting (it throws `CancellationError`).
    ///
    /// - Returns: the merge of each item that changed.
    @discardableResult
    public mutating func waitForChanges(wait: Duration = .seconds(25)) async throws -> [ItemID: MergeResult] {
        while true {
            try Task.checkCancellation()
            let batch = try await client.changes(since: replica.cursor, wait: wait)
            var merges = try replica.apply(batch, now: now(), decoding: codec)
            if !batch.items.isEmpty {
                merges.merge(try await pull()) { $1 }
                return merges
            }
        }
    }
}
