/// How a replica's records become what the server stores, and back.
///
/// The replica's steps do not care: ``PlainPayloads`` sends a record's canonical bytes (the
/// protocol's tests, a server that is trusted), ``SealedPayloads`` sends it sealed by
/// ``ItemSealer`` (what devices do: the server learns nothing). `version` is the revision the
/// payload is or becomes on the server, bound into a sealed item so that an old one cannot be
/// served as a newer one.
public protocol PayloadCodec {
    mutating func encode(_ record: SyncRecord, version: UInt64) throws(VaultSyncError) -> [UInt8]
    func decode(_ payload: [UInt8], item: ItemID, version: UInt64) throws(VaultSyncError) -> SyncRecord
}

/// Payloads are the records' ``SyncRecord/canonicalBytes``.
public struct PlainPayloads: PayloadCodec, Sendable {
    public init() {}

    public func encode(_ record: SyncRecord, version: UInt64) -> [UInt8] { record.canonicalBytes }

    public func decode(_ payload: [UInt8], item: ItemID, version: UInt64) throws(VaultSyncError) -> SyncRecord {
        try SyncRecord(canonicalBytes: payload)
    }
}

/// Payloads are sealed items (``SealedItem/bytes``): what a device sends a server that must learn
/// nothing. Keys and nonces come from `generator` (the system's in production).
public struct SealedPayloads<Generator: RandomNumberGenerator>: PayloadCodec {
    public let sealer: ItemSealer
    public var generator: Generator

    public init(sealer: ItemSealer, generator: Generator) {
        self.sealer = sealer
        self.generator = generator
    }

    public mutating func encode(_ record: SyncRecord, version: UInt64) throws(VaultSyncError) -> [UInt8] {
        try sealer.seal(record, version: version, using: &generator).bytes
    }

    public func decode(_ payload: [UInt8], item: ItemID, version: UInt64) throws(VaultSyncError) -> SyncRecord {
        try sealer.open(SealedItem(bytes: payload, item: item, version: version), item: item, version: version)
    }
}

extension SealedPayloads: Sendable where Generator: Sendable {}
