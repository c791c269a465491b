public import _KeyhavenSupport

/// The server's side (no I/O, no HTTP): one blind evaluation per request, plus a bucket read.
/// An OPRF server is an oracle for whoever can ask it; the HTTP front rate-limits per client.
public struct BreachPSIServer: Sendable {
    public let key: BreachPSIServerKey
    public let buckets: BreachPSIBuckets

    public init(key: BreachPSIServerKey, buckets: BreachPSIBuckets) {
        self.key = key
        self.buckets = buckets
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
            entries: Array(buckets.entries(prefix: request.prefix))
        )
    }

    /// Answers a request's bytes with a response's bytes.
    public func answer(encoded request: some Collection<UInt8>) throws(BreachPSIError) -> [UInt8] {
        try answer(PSIRequest(decoding: request)).encoded
    }
}
