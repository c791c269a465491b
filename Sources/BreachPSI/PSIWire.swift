public import _KeyhavenSupport

/// A client's question (wire version 1, 52 bytes, the same size for every password):
///
/// | offset | size | field |
/// |---|---|---|
/// | 0 | 1 | version (1) |
/// | 1 | 2 | bucket prefix, big-endian, < 2^15 |
/// | 3 | 49 | blinded element, compressed P-384 point |
public struct PSIRequest: Hashable, Sendable {
    public static let encodedLength = 3 + elementLength
    static let elementLength = 49

    /// The bucket asked for (15 bits).
    public var prefix: UInt16
    /// The blinded element (49 bytes); blinding hides the password from the server.
    public var blindedElement: [UInt8]

    public init(prefix: UInt16, blindedElement: [UInt8]) {
        self.prefix = prefix
        self.blindedElement = blindedElement
    }

    /// The 52 bytes on the wire.
    public var encoded: [UInt8] {
        [BreachPSI.version, UInt8(prefix >> 8), UInt8(prefix & 0xff)] + blindedElement
    }

    /// Reads the 52 bytes of a request; checks the sizes and the prefix range (the server checks the
    /// point when it evaluates it).
    public init(decoding bytes: some Collection<UInt8>) throws(BreachPSIError) {
        let bytes = Array(bytes)
        guard let version = bytes.first else {
            throw BreachPSIError(.malformedRequest, "the request is empty; send \(Self.encodedLength) bytes")
        }
        guard version == BreachPSI.version else {
            throw BreachPSIError(.unsupportedVersion, "request version \(version); this server speaks 1")
        }
        guard bytes.count == Self.encodedLength else {
            throw BreachPSIError(
                .malformedRequest,
                "the request is \(bytes.count) bytes; version 1 requests are \(Self.encodedLength)"
            )
        }
        let prefix = UInt16(bytes[1]) << 8 | UInt16(bytes[2])
        guard Int(prefix) < BreachPSI.bucketCount else {
            throw BreachPSIError(.malformedRequest, "the prefix has more than \(BreachPSI.prefixBits) bits")
        }
        self.init(prefix: prefix, blindedElement: Array(bytes[3...]))
    }
}

/// The server's answer (wire version 1): a 168-byte header and the bucket.
///
/// | offset | size | field |
/// |---|---|---|
/// | 0 | 1 | version (1) |
/// | 1 | 2 | bucket prefix, big-endian (the request's) |
/// | 3 | 16 | key ID (``BreachPSIPublicKey/id``) |
/// | 19 | 49 | evaluated element, compressed P-384 point |
/// | 68 | 96 | DLEQ proof (c ‖ s, 48 bytes each) |
/// | 164 | 4 | entry count *n*, big-endian |
/// | 168 | 8 *n* | entries: 8-byte big-endian prefixes of OPRF outputs, strictly ascending |
public struct PSIResponse: Hashable, Sendable {
    public static let headerLength = 168
    static let evaluationLength = 145

    public var prefix: UInt16
    /// The ID of the key that answered.
    public var keyID: [UInt8]
    /// The evaluated element and its proof (145 bytes).
    public var evaluation: [UInt8]
    /// The bucket, sorted.
    public var entries: [UInt64]

    public init(prefix: UInt16, keyID: [UInt8], evaluation: [UInt8], entries: [UInt64]) {
        self.prefix = prefix
        self.keyID = keyID
        self.evaluation = evaluation
        self.entries = entries
    }

    public var encoded: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Self.headerLength + entries.count * BreachPSI.entryLength)
        bytes.append(BreachPSI.version)
        bytes += [UInt8(prefix >> 8), UInt8(prefix & 0xff)]
        bytes += keyID
        bytes += evaluation
        withUnsafeBytes(of: UInt32(entries.count).bigEndian) { bytes += $0 }
        for entry in entries {
            withUnsafeBytes(of: entry.bigEndian) { bytes += $0 }
        }
        return bytes
    }

    /// Reads a response, refusing more than `maximumEntries` entries, a body shorter or longer
    /// than its count, and entries out of order.
    public init(
        decoding bytes: some Collection<UInt8>,
        maximumEntries: Int = BreachPSI.maximumBucketEntries
    ) throws(BreachPSIError) {
        let bytes = Array(bytes)
        guard let version = bytes.first else {
            throw BreachPSIError(.malformedResponse, "the breach-PSI server sent an empty answer")
        }
        guard version == BreachPSI.version else {
            throw BreachPSIError(
                .unsupportedVersion,
                "the breach-PSI server answered in version \(version); this build speaks 1 (update Keyhaven or the server)"
            )
        }
        guard bytes.count >= Self.headerLength else {
            throw BreachPSIError(
                .malformedResponse,
                "the answer is \(bytes.count) bytes, shorter than its \(Self.headerLength)-byte header"
            )
        }
        let count = bytes[164..<168].reduce(0) { $0 << 8 | Int($1) }
        guard count <= maximumEntries else {
            throw BreachPSIError(
                .oversizedBucket,
                "the answer claims \(count) entries; a bucket holds at most \(maximumEntries)"
            )
        }
        let body = bytes.count - Self.headerLength
        let expected = count * BreachPSI.entryLength
        guard body >= expected else {
            throw BreachPSIError(
                .truncatedBucket,
                "the bucket is cut short: \(body) of \(expected) bytes; try again"
            )
        }
        guard body == expected else {
            throw BreachPSIError(
                .oversizedBucket,
                "the answer has \(body - expected) bytes beyond its \(count) entries"
            )
        }
        var entries: [UInt64] = []
        entries.reserveCapacity(count)
        var offset = Self.headerLength
        for _ in 0..<count {
            let entry = bytes[offset..<offset + BreachPSI.entryLength].reduce(0) { $0 << 8 | UInt64($1) }
            if let last = entries.last, last >= entry {
                throw BreachPSIError(.malformedResponse, "the bucket's entries are not in strictly ascending order")
            }
            entries.append(entry)
            offset += BreachPSI.entryLength
        }
        self.init(
            prefix: UInt16(bytes[1]) << 8 | UInt16(bytes[2]),
            keyID: Array(bytes[3..<19]),
            evaluation: Array(bytes[19..<164]),
            entries: entries
        )
    }
}
