internal import Crypto
import _KeyhavenSupport

/// One write a device asks the server to make: "item X, which I last saw at revision N, is now
/// this payload". The server applies it only if the item is still at revision N
/// (compare-and-swap, ``ReferenceSyncServer/push(_:)``).
///
/// Idempotent: its ``id`` is derived from what it says (item, base revision, payload), so sending
/// it twice — a retry after a lost answer — is recognised by the server and applied once, and two
/// different writes can never share an id.
public struct Mutation: Hashable, Sendable {
    public let id: MutationID
    public let item: ItemID
    /// The server revision the payload was merged with (0: the item is new to the server).
    public let baseRevision: UInt64
    /// The item's record as the server stores it (its ``SyncRecord/canonicalBytes`` here; sealed
    /// by ``ItemSealer`` once devices encrypt).
    public let payload: [UInt8]

    public init(item: ItemID, baseRevision: UInt64, payload: [UInt8]) {
        self.item = item
        self.baseRevision = baseRevision
        self.payload = payload
        self.id = MutationID(item: item, baseRevision: baseRevision, payload: payload)
    }
}

/// A mutation's id: the first 16 bytes of SHA-256 over its item, base revision and payload.
public struct MutationID: Hashable, Sendable, CustomStringConvertible {
    public let bytes: [UInt8]

    init(item: ItemID, baseRevision: UInt64, payload: [UInt8]) {
        var hash = SHA256()
        hash.update(data: Array("keyhaven/sync/mutation/v1".utf8))
        hash.update(data: item.bytes)
        hash.update(data: (0..<8).map { UInt8(truncatingIfNeeded: baseRevision >> (56 - 8 * UInt64($0))) })
        hash.update(data: payload)
        bytes = Array(hash.finalize().prefix(16))
    }

    public var description: String { Hex.encode(bytes) }
}

/// The server's answer to a ``Mutation``.
public enum PushResponse: Hashable, Sendable {
    /// Applied (now, or already before: a retried mutation): the item is at `revision`.
    case accepted(revision: UInt64)
    /// The item moved on since the mutation's base revision: here is what it is now. The device
    /// merges it into its own record and sends the result on top of it.
    case stale(current: ServerItem)
    /// Refused for a reason a retry cannot fix.
    case rejected(reason: String)
}

/// An item as the server holds it: an opaque payload at a revision.
public struct ServerItem: Hashable, Sendable {
    public var item: ItemID
    /// Counts the item's accepted writes (1 for the first).
    public var revision: UInt64
    public var payload: [UInt8]
    /// Where in the server's log of changes this revision is (``ReferenceSyncServer/changes(since:)``).
    public var sequence: UInt64

    public init(item: ItemID, revision: UInt64, payload: [UInt8], sequence: UInt64) {
        self.item = item
        self.revision = revision
        self.payload = payload
        self.sequence = sequence
    }
}

/// What changed on the server after a device's cursor.
public struct ChangeBatch: Hashable, Sendable {
    /// The latest revision of each item changed after the cursor, by sequence.
    public var items: [ServerItem]
    /// The cursor to ask from next time.
    public var sequence: UInt64

    public init(items: [ServerItem], sequence: UInt64) {
        self.items = items
        self.sequence = sequence
    }
}
