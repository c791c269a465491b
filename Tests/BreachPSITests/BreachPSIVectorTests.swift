import BreachCheck
import Foundation
import Testing
import _KeyhavenSupport

@testable import BreachPSI

/// The test vectors of docs/breach-psi.md, read from the document itself so the two cannot drift:
/// RFC 9497's own VOPRF(P-384, SHA-384) vector through Keyhaven's key and server, and Keyhaven's
/// vector for one password (its prefix, OPRF output and bucket entry).
@Suite(.offCooperativePool)
struct BreachPSIVectorTests {
    /// `name: value` lines of the block after `<!-- test vectors -->` in docs/breach-psi.md.
    static func vectors() throws -> [String: String] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("docs/breach-psi.md"), encoding: .utf8)
        let marker = try #require(text.range(of: "<!-- test vectors -->"))
        let block = text[marker.upperBound...].split(separator: "```", omittingEmptySubsequences: false)[1]
        var values: [String: String] = [:]
        for line in block.split(separator: "\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces)
            values[name] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return values
    }

    static func hex(_ values: [String: String], _ name: String) throws -> [UInt8] {
        try #require(Hex.decode(try #require(values[name], "\(name) in the document")), "\(name) is hex")
    }

    @Test func rfc9497VectorThroughKeyhavensKeyAndServer() throws {
        let values = try Self.vectors()
        let key = try BreachPSIServerKey(scalar: Self.hex(values, "skSm"))
        #expect(key.publicKey.representation == (try Self.hex(values, "pkSm")))
        let server = BreachPSIServer(key: key, buckets: BreachPSIBucketBuilder(key: key).finish())
        let response = try server.answer(
            PSIRequest(prefix: 0, blindedElement: Self.hex(values, "BlindedElement"))
        )
        #expect(Array(response.evaluation.prefix(49)) == (try Self.hex(values, "EvaluationElement")))
        #expect(try key.output(for: Self.hex(values, "Input")) == Self.hex(values, "Output"))
    }

    @Test func keyhavenVector() throws {
        let values = try Self.vectors()
        let key = try BreachPSIServerKey(scalar: Self.hex(values, "skSm"))
        #expect(key.publicKey.id == (try Self.hex(values, "key-id")))
        let password = try #require(values["password"])
        let digest = SHA1Digest(password: password)
        #expect(digest.hex == values["sha1"])
        #expect(BreachPSI.prefix(of: digest) == UInt16(try #require(values["prefix"])))
        let output = try key.output(for: digest.bytes)
        #expect(output == (try Self.hex(values, "output")))
        let entry = try Self.hex(values, "entry")
        #expect(Array(output.prefix(8)) == entry)

        // The whole protocol with this key, holding only this password, reaches the same entry.
        var builder = BreachPSIBucketBuilder(key: key)
        try builder.add(digest)
        let server = BreachPSIServer(key: key, buckets: builder.finish())
        let client = BreachPSIClient(publicKey: try BreachPSIPublicKey(representation: Self.hex(values, "pkSm")))
        let query = try client.query(digest)
        #expect(query.request.prefix == BreachPSI.prefix(of: digest))
        let response = try server.answer(query.request)
        #expect(response.entries == [entry.reduce(0) { $0 << 8 | UInt64($1) }])
        #expect(try client.isBreached(query, response: response.encoded))
    }
}
