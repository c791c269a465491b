public import BreachCheck
import Foundation
import _CryptoExtras
public import _KeyhavenSupport

/// The device's side: blinds a password's digest into a ``PSIRequest``, then checks the server's
/// answer against the published key it pins and decides membership itself. Every answer it cannot
/// verify is a ``BreachPSIError``, never "not breached".
public struct BreachPSIClient: Sendable {
    /// The key the server published; answers proven with any other are refused.
    public let publicKey: BreachPSIPublicKey
    /// The most entries accepted in one bucket.
    public let maximumBucketEntries: Int

    public init(publicKey: BreachPSIPublicKey, maximumBucketEntries: Int = BreachPSI.maximumBucketEntries) {
        self.publicKey = publicKey
        self.maximumBucketEntries = maximumBucketEntries
    }

    /// A query for `digest`: its request and the secret blind to finish it with. The blind comes
    /// from swift-crypto's own random source (its API takes no generator).
    public func query(_ digest: SHA1Digest) throws(BreachPSIError) -> BreachPSIQuery {
        let blinded: P384._VOPRF.BlindedInput
        do {
            blinded = try publicKey.key.blind(Data(BreachPSI.input(digest)))
        } catch {
            throw BreachPSIError(.invalidKey, "could not blind the input under the published key")
        }
        let request = PSIRequest(
            prefix: BreachPSI.prefix(of: digest),
            blindedElement: Array(blinded.blindedElement.oprfRepresentation)
        )
        return BreachPSIQuery(request: request, blinded: blinded)
    }

    /// Whether the query's digest is in the server's set, from the response's bytes.
    public func isBreached(_ query: BreachPSIQuery, response: some Collection<UInt8>) throws(BreachPSIError) -> Bool {
        try isBreached(query, response: PSIResponse(decoding: response, maximumEntries: maximumBucketEntries))
    }

    /// Whether the query's digest is in the server's set: checks the bucket, the key ID and the
    /// proof, finalizes the OPRF and looks for its entry in the bucket.
    public func isBreached(_ query: BreachPSIQuery, response: PSIResponse) throws(BreachPSIError) -> Bool {
        guard response.prefix == query.request.prefix else {
            throw BreachPSIError(.wrongBucket, "the breach-PSI server answered for another bucket than asked")
        }
        guard constantTimeEqual(response.keyID, publicKey.id) else {
            throw BreachPSIError(
                .keyChanged,
                "the breach-PSI server answered with a key other than the one published; fetch its published key again and check it with the operator"
            )
        }
        guard response.entries.count <= maximumBucketEntries else {
            throw BreachPSIError(
                .oversizedBucket,
                "the answer has \(response.entries.count) entries; a bucket holds at most \(maximumBucketEntries)"
            )
        }
        guard zip(response.entries, response.entries.dropFirst()).allSatisfy({ $0 < $1 }) else {
            throw BreachPSIError(.malformedResponse, "the bucket's entries are not in strictly ascending order")
        }
        let evaluation: P384._VOPRF.BlindEvaluation
        do {
            evaluation = try P384._VOPRF.BlindEvaluation(rawRepresentation: response.evaluation)
        } catch {
            throw BreachPSIError(.malformedResponse, "the evaluated element or proof cannot be read")
        }
        let output: Data
        do {
            output = try publicKey.key.finalize(query.blinded, using: evaluation)
        } catch {
            throw BreachPSIError(
                .badProof,
                "the breach-PSI server's proof does not match its published key; the answer is ignored"
            )
        }
        let entry = BreachPSI.entry(output)
        // The bucket is public; scanning all of it keeps the time independent of where (or whether)
        // the entry is.
        var found: UInt64 = 0
        for candidate in response.entries {
            let difference = candidate ^ entry
            found |= ~((difference | (0 &- difference)) >> 63) & 1
        }
        return found == 1
    }
}

/// One password's pending check: the request to send and the blind that stays on the device.
///
/// `@unchecked Sendable`: immutable; swift-crypto's blinded input is a value it does not mark
/// `Sendable`.
/// Its description and mirror show the bucket only: the blinded input holds the digest and the blind.
public struct BreachPSIQuery: @unchecked Sendable, CustomStringConvertible, CustomReflectable {
    /// What goes to the server.
    public let request: PSIRequest
    let blinded: P384._VOPRF.BlindedInput

    public var description: String { "BreachPSIQuery(bucket: \(request.prefix))" }
    public var customMirror: Mirror { Mirror(self, children: ["bucket": request.prefix]) }
}
