import BreachCheck
import KeyhavenTesting

@testable import BreachPSI

/// A server with a key from a fixed seed holding `leaked`, and a client pinning its key.
struct PSIFixture {
    var key: BreachPSIServerKey
    var server: BreachPSIServer
    var client: BreachPSIClient

    init(leaked: [SHA1Digest], seed: UInt64 = 29, maximumBucketEntries: Int = BreachPSI.maximumBucketEntries) throws {
        var rng = SeededRandomNumberGenerator(seed: seed)
        key = BreachPSIServerKey(using: &rng)
        var builder = BreachPSIBucketBuilder(key: key)
        try builder.add(contentsOf: leaked)
        server = BreachPSIServer(key: key, buckets: builder.finish())
        client = BreachPSIClient(publicKey: key.publicKey, maximumBucketEntries: maximumBucketEntries)
    }

    /// The whole exchange for one password, through the wire bytes.
    func isBreached(_ digest: SHA1Digest) throws -> Bool {
        let query = try client.query(digest)
        let response = try server.answer(encoded: query.request.encoded)
        return try client.isBreached(query, response: response)
    }
}
