/// A model of the sync server, in memory: what the real server (`keyhaven sync serve`, later)
/// must do, written as a value so that the protocol can be tested exhaustively without sockets or
/// a database — the property tests run thousands of devices' sessions against it — and so that
/// the real server's tests can compare their answers with it.
///
/// It stores payloads it cannot read (a device's record, sealed in production) and knows only
/// items, revisions and sequence numbers. Its two operations:
/// - ``push(_:)``: compare-and-swap on the item's revision, answering a stale write with the
///   current payload (HTTP 409 with the ciphertext, later), and a retried mutation with its first
///   answer (mutation ids are remembered: idempotence).
/// - ``changes(since:)``: delta sync, every item whose latest revision came after a cursor.
public struct ReferenceSyncServer: Hashable, Sendable {
    public private(set) var items: [ItemID: ServerItem] = [:]
    /// The sequence number of the latest accepted write (0: none yet).
    public private(set) var sequence: UInt64 = 0
    /// Each applied mutation and the revision it made.
    private var applied: [MutationID: UInt64] = [:]

    public init() {}

    /// Applies `mutation` if its base revision is the item's current revision.
    public mutating func push(_ mutation: Mutation) -> PushResponse {
        if let revision = applied[mutation.id] { return .accepted(revision: revision) }
        let current = items[mutation.item]
        guard mutation.baseRevision == (current?.revision ?? 0) else {
            guard let current else {
                return .rejected(
                    reason: "item \(mutation.item) is not on the server (base revision \(mutation.baseRevision))"
                )
            }
            return .stale(current: current)
        }
        sequence += 1
        let revision = mutation.baseRevision + 1
        items[mutation.item] = ServerItem(
            item: mutation.item,
            revision: revision,
            payload: mutation.payload,
            sequence: sequence
        )
        applied[mutation.id] = revision
        return .accepted(revision: revision)
    }

    /// The items changed after `cursor` (a ``ChangeBatch/sequence`` from an earlier call; 0 for all).
    public func changes(since cursor: UInt64) -> ChangeBatch {
        ChangeBatch(
            items: items.values.filter { $0.sequence > cursor }.sorted { $0.sequence < $1.sequence },
            sequence: sequence
        )
    }
}
