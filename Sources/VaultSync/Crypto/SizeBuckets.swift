/// Plaintext padding to a few sizes, so that a sealed item's length says little about what is in
/// it (a long password, many notes, a passkey): the server and anyone who sees the traffic learn
/// only a size bucket.
///
/// Buckets are the powers of two from 128 bytes: a part of 1 to 124 bytes is 128 bytes sealed, one
/// of 125 to 252 bytes is 256, and so on; the waste is below one half. The padded form is the
/// length (4 bytes, big-endian), the bytes, then zeros — the zeros are authenticated with the rest
/// and refused if not zero, so padding carries nothing.
public enum SizeBuckets {
    public static let smallest = 128

    /// The bucket a plaintext of `count` bytes is padded to.
    public static func bucket(for count: Int) -> Int {
        var size = smallest
        while size < count + 4 { size *= 2 }
        return size
    }

    static func pad(_ bytes: [UInt8]) -> [UInt8] {
        let length = UInt32(bytes.count)
        var padded = (0..<4).map { UInt8(truncatingIfNeeded: length >> (24 - 8 * UInt32($0))) } + bytes
        padded += [UInt8](repeating: 0, count: bucket(for: bytes.count) - padded.count)
        return padded
    }

    /// The bytes of a padded plaintext, or nil when it is not one ``pad(_:)`` made.
    static func unpad(_ padded: [UInt8]) -> [UInt8]? {
        guard padded.count >= 4 else { return nil }
        let length = Int(padded.prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
        guard padded.count == bucket(for: length), padded[(4 + length)...].allSatisfy({ $0 == 0 }) else { return nil }
        return Array(padded[4..<4 + length])
    }
}
