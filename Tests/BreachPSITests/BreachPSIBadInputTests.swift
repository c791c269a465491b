import BreachCheck
import KeyhavenTesting
import Testing
import _KeyhavenSupport

@testable import BreachPSI

/// Bad input (issue 29, item 4): each case is a ``BreachPSIError`` with its code, never a false
/// "not breached". Every case uses a breached password, so an answer of `false` would be a lie.
@Suite(.offCooperativePool)
struct BreachPSIBadInputTests {
    static let password = SHA1Digest(password: "password")
    static let leaked = [password] + (0..<200).map { SHA1Digest(password: "leak-\($0)") }

    let fixture: PSIFixture
    let query: BreachPSIQuery
    let response: [UInt8]

    init() throws {
        fixture = try PSIFixture(leaked: Self.leaked)
        query = try fixture.client.query(Self.password)
        response = try fixture.server.answer(encoded: query.request.encoded)
        #expect(try fixture.client.isBreached(query, response: response), "the untouched answer says breached")
    }

    func expectError(_ code: BreachPSIError.Code, _ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(throws: BreachPSIError(code, ""), sourceLocation: sourceLocation) {
            try fixture.client.isBreached(query, response: bytes)
        }
    }

    // MARK: Requests (the server's side)

    @Test func malformedRequests() throws {
        let good = query.request.encoded
        let server = fixture.server
        #expect(throws: BreachPSIError(.malformedRequest, "")) { try server.answer(encoded: [UInt8]()) }
        #expect(throws: BreachPSIError(.malformedRequest, "")) { try server.answer(encoded: good.dropLast()) }
        #expect(throws: BreachPSIError(.malformedRequest, "")) { try server.answer(encoded: good + [0]) }
        var version = good
        version[0] = 2
        #expect(throws: BreachPSIError(.unsupportedVersion, "")) { try server.answer(encoded: version) }
        var prefix = good
        prefix[1] |= 0x80
        #expect(throws: BreachPSIError(.malformedRequest, "")) { try server.answer(encoded: prefix) }
        // x = 2^392 - 1 is larger than the field: no point.
        let notAPoint = Array(good.prefix(3)) + [2] + [UInt8](repeating: 0xff, count: 48)
        #expect(throws: BreachPSIError(.malformedRequest, "")) { try server.answer(encoded: notAPoint) }
        var badTag = good
        badTag[3] = 4
        #expect(throws: BreachPSIError(.malformedRequest, "")) { try server.answer(encoded: badTag) }
    }

    // MARK: Responses (the client's side)

    @Test func malformedResponses() {
        expectError(.malformedResponse, [])
        expectError(.malformedResponse, Array(response.prefix(100)))
        var version = response
        version[0] = 9
        expectError(.unsupportedVersion, version)
        var element = response
        element.replaceSubrange(19..<68, with: [2] + [UInt8](repeating: 0xff, count: 48))
        expectError(.malformedResponse, element)
    }

    @Test func unsortedOrRepeatedEntriesAreRefused() throws {
        var decoded = try PSIResponse(decoding: response)
        try #require(!decoded.entries.isEmpty)
        decoded.entries.append(decoded.entries[0])
        expectError(.malformedResponse, decoded.encoded)
        #expect(throws: BreachPSIError(.malformedResponse, "")) {
            try fixture.client.isBreached(query, response: decoded)
        }
    }

    @Test func answerForAnotherBucket() throws {
        var decoded = try PSIResponse(decoding: response)
        decoded.prefix ^= 1
        expectError(.wrongBucket, decoded.encoded)
    }

    /// A proof made with another key, under the published key's ID (a server lying about its key).
    @Test func proofWithAnotherKey() throws {
        let other = try PSIFixture(leaked: Self.leaked, seed: 30)
        var forged = try other.server.answer(query.request)
        #expect(forged.keyID != fixture.key.publicKey.id)
        forged.keyID = fixture.key.publicKey.id
        expectError(.badProof, forged.encoded)
    }

    /// An honest evaluation, but of another request (a replayed or misrouted answer).
    @Test func proofForAnotherElement() throws {
        let otherQuery = try fixture.client.query(Self.password)
        let replayed = try fixture.server.answer(encoded: otherQuery.request.encoded)
        expectError(.badProof, replayed)
        var flipped = response
        flipped[100] ^= 1  // a bit of the proof
        expectError(.badProof, flipped)
    }

    /// The server changed its key after the client pinned the published one.
    @Test func keyChangedSincePublished() throws {
        let rotated = try PSIFixture(leaked: Self.leaked, seed: 31)
        let answer = try rotated.server.answer(encoded: query.request.encoded)
        expectError(.keyChanged, answer)
        // Through the rotated key's own client the same answer is fine: only the key differs.
        let rotatedQuery = try rotated.client.query(Self.password)
        #expect(try rotated.client.isBreached(rotatedQuery, response: rotated.server.answer(rotatedQuery.request)))
    }

    @Test func truncatedBucket() {
        expectError(.truncatedBucket, response.dropLast())
        expectError(.truncatedBucket, response.dropLast(8))
    }

    @Test func oversizedBucket() throws {
        expectError(.oversizedBucket, response + [0])
        var decoded = try PSIResponse(decoding: response)
        let small = BreachPSIClient(publicKey: fixture.key.publicKey, maximumBucketEntries: decoded.entries.count - 1)
        #expect(throws: BreachPSIError(.oversizedBucket, "")) { try small.isBreached(query, response: response) }
        // A count over the limit is refused before the body is read.
        var huge = Array(response.prefix(PSIResponse.headerLength))
        huge.replaceSubrange(164..<168, with: [0xff, 0xff, 0xff, 0xff])
        expectError(.oversizedBucket, huge)
        decoded.entries = (0..<UInt64(BreachPSI.maximumBucketEntries + 1)).map { $0 }
        #expect(throws: BreachPSIError(.oversizedBucket, "")) {
            try fixture.client.isBreached(query, response: decoded)
        }
    }
}
