public import _KeyhavenSupport

/// The server's side (no I/O, no HTTP): one blind evaluation per request, plus a bucket read.
/// An OPRF server is an oracle for whoever can ask it; the HTTP front rate-limits per client.
public struct BreachPSIServer: Sendable {
    public let key: BreachPSIServerKey
    public let buckets: any BreachPSIBucketSource

    public init(key: BreachPSIServerKey, buckets: BreachPSIBuckets) {
        self.key = key
        self.buckets = buckets
    }

    /// A server over a bucket file; refuses a file built under another key (its entries would all
    /// be wrong, and every check would say "not breached").
    public init(key: BreachPSIServerKey, bucketFile: BreachPSIBucketFile) throws(BreachPSIError) {
        guard constantTimeEqual(bucketFile.keyID, key.publicKey.id) else {
            throw BreachPSIError(
                .invalidKey,
                "the bucket file was built under another key (ID \(Hex.encode(bucketFile.keyID))); rebuild it with this key or give the key it was built with"
            )
        }
        self.key = key
        self.buckets = bucketFile
    }

    /// Answers a request.
    public func answer(_ request: PSIRequest) throws(BreachPSIError) -> PSIResponse {
        guard Int(request.prefix) < BreachPSI.bucketCount else {
            throw BreachPSIError(.malformedRequest, "the prefix has more than \(BreachPSI.prefixBits) bits")
        }
        guard request.blindedElement.count == PSIRequest.elementLength else {
            throw BreachPSIError(.malformedRequest, "the blinded element is not \(PSIRequest.elementLength) bytes")
        }
        return PSIResponse(
            prefix: request.prefix,
            keyID: key.publicKey.id,
            evaluation: try key.evaluate(blindedElement: request.blindedElement),
            entries: try buckets.bucket(request.prefix)
        )
    }

    /// Answers a request's bytes with a response's bytes.
    public func answer(encoded request: some Collection<UInt8>) throws(BreachPSIError) -> [UInt8] {
        try answer(PSIRequest(decoding: request)).encoded
    }
}
