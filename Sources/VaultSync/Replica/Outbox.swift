/// A device's writes the server has not confirmed yet, in the order they were first made.
///
/// One entry per item, not per edit: the server stores whole records, so the next mutation of an
/// item carries all of its pending edits at once. An entry may hold the mutation already sent
/// (``Entry/inFlight``): until the server answers, a retry sends exactly that mutation again (same
/// id, same bytes), which the server recognises if the first one arrived — a lost answer can
/// never apply a write twice or make the device guess.
public struct Outbox: Hashable, Sendable {
    public struct Entry: Hashable, Sendable {
        public var item: ItemID
        /// The mutation sent and not answered yet, if any.
        public var inFlight: Mutation?
        /// The record ``inFlight`` carries (its payload may be sealed): when the server accepts it
        /// and the local record is still this one, nothing is left to send.
        public var sentRecord: SyncRecord?
        /// How many times a mutation of this entry was sent without an answer (for back-off and
        /// `keyhaven sync status`).
        public var unansweredAttempts: Int

        init(item: ItemID) {
            self.item = item
            self.inFlight = nil
            self.sentRecord = nil
            self.unansweredAttempts = 0
        }
    }

    public private(set) var entries: [Entry] = []

    public init() {}

    public var isEmpty: Bool { entries.isEmpty }
    public var items: [ItemID] { entries.map(\.item) }

    public func contains(_ item: ItemID) -> Bool { entries.contains { $0.item == item } }

    /// Records that `item` has a local change to send (a no-op if it has one already).
    public mutating func enqueue(_ item: ItemID) {
        if !contains(item) { entries.append(Entry(item: item)) }
    }

    /// Appends `entry` as it was saved (``SyncReplica/init(canonicalBytes:)``).
    mutating func restore(_ entry: Entry) {
        entries.append(entry)
    }

    mutating func remove(_ item: ItemID) {
        entries.removeAll { $0.item == item }
    }

    mutating func update(_ item: ItemID, _ change: (inout Entry) -> Void) {
        if let index = entries.firstIndex(where: { $0.item == item }) { change(&entries[index]) }
    }
}
