import BreachCheck
import Foundation
import KeyhavenTesting
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
        let text = try #require(values[name], "\(name) in the document")
        return try #require(Hex.decode(text), "\(name) is hex")
    }

    @Test func rfc9497VectorThroughKeyhavensKeyAndServer() throws {
        let values = try Self.vectors()
        let key = try BreachPSIServerKey(scalar: Self.hex(values, "skSm"))
        let publicKey = try Self.hex(values, "pkSm")
        #expect(key.publicKey.representation == publicKey)
        let server = BreachPSIServer(key: key, buckets: BreachPSIBucketBuilder(key: key).finish())
        let blindedElement = try Self.hex(values, "BlindedElement")
        let evaluatedElement = try Self.hex(values, "EvaluationElement")
        let response = try server.answer(PSIRequest(prefix: 0, blindedElement: blindedElement))
        #expect(Array(response.evaluation.prefix(49)) == evaluatedElement)
        let output = try key.output(for: Self.hex(values, "Input"))
        let rfcOutput = try Self.hex(values, "Output")
        #expect(output == rfcOutput)
    }

    @Test func keyhavenVector() throws {
        let values = try Self.vectors()
        let key = try BreachPSIServerKey(scalar: Self.hex(values, "skSm"))
        let keyID = try Self.hex(values, "key-id")
        #expect(key.publicKey.id == keyID)
        let password = try #require(values["password"])
        let digest = SHA1Digest(password: password)
        #expect(digest.hex == values["sha1"])
        let prefix = try #require(values["prefix"].flatMap { UInt16($0) })
        #expect(BreachPSI.prefix(of: digest) == prefix)
        let output = try key.output(for: digest.bytes)
        let expectedOutput = try Self.hex(values, "output")
        #expect(output == expectedOutput)
        let entry = try Self.hex(values, "entry")
        #expect(Array(output.prefix(8)) == entry)

        // The whole protocol with this key, holding only this password, reaches the same entry.
        var builder = BreachPSIBucketBuilder(key: key)
        try builder.add(digest)
        let server = BreachPSIServer(key: key, buckets: builder.finish())
        let published = try BreachPSIPublicKey(representation: Self.hex(values, "pkSm"))
        let client = BreachPSIClient(publicKey: published)
        let query = try client.query(digest)
        #expect(query.request.prefix == prefix)
        let response = try server.answer(query.request)
        #expect(response.entries == [entry.reduce(0) { $0 << 8 | UInt64($1) }])
        #expect(try client.isBreached(query, response: response.encoded))
    }
}
