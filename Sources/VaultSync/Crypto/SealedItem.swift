/// One version of an item as the server stores it: the wrapped item key and the two sealed parts
/// (each a nonce, the ciphertext and the tag).
public struct SealedItem: Hashable, Sendable {
    public var item: ItemID
    public var version: UInt64
    public var wrappedKey: [UInt8]
    public var overview: [UInt8]
    public var details: [UInt8]

    public init(item: ItemID, version: UInt64, wrappedKey: [UInt8], overview: [UInt8], details: [UInt8]) {
        self.item = item
        self.version = version
        self.wrappedKey = wrappedKey
        self.overview = overview
        self.details = details
    }

    /// The three boxes, as the server stores them: `0x01`, the wrapped key's, the overview's and
    /// the details' lengths (4 bytes each, big-endian), then the boxes. The item and version are
    /// not in it: the server knows them, and the associated data binds them.
    public var bytes: [UInt8] {
        var bytes: [UInt8] = [1]
        for box in [wrappedKey, overview, details] {
            withUnsafeBytes(of: UInt32(box.count).bigEndian) { bytes.append(contentsOf: $0) }
        }
        return bytes + wrappedKey + overview + details
    }

    /// Reads ``bytes`` of version `version` of `item`.
    ///
    /// - Throws: ``VaultSyncError/Code/cannotOpen`` when they are not three boxes.
    public init(bytes: [UInt8], item: ItemID, version: UInt64) throws(VaultSyncError) {
        guard bytes.count >= 13, bytes[0] == 1 else {
            throw VaultSyncError(.cannotOpen, "item \(item) version \(version) is not a sealed item", details: item)
        }
        let lengths = (0..<3).map { index in
            bytes[1 + 4 * index..<5 + 4 * index].reduce(0) { $0 << 8 | Int($1) }
        }
        guard lengths.reduce(13, +) == bytes.count else {
            throw VaultSyncError(.cannotOpen, "item \(item) version \(version) is not a sealed item", details: item)
        }
        let key = 13 + lengths[0]
        let overview = key + lengths[1]
        self.init(
            item: item,
            version: version,
            wrappedKey: Array(bytes[13..<key]),
            overview: Array(bytes[key..<overview]),
            details: Array(bytes[overview...])
        )
    }
}
