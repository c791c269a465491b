import BreachCheck
import Foundation
import KeyhavenTesting
import Testing
import _KeyhavenSupport

@testable import BreachPSI

#if canImport(Glibc)
import Glibc
#endif

/// A stand-in transport over real servers that records every request it is given, and may switch
/// to another server (another key) after a number of requests.
final class RecordingTransport: BreachPSITransport, @unchecked Sendable {
    let servers: [BreachPSIServer]
    let switchAfter: Int
    private let lock = NSLock()
    private var sent: [[UInt8]] = []

    init(_ servers: [BreachPSIServer], switchAfter: Int = .max) {
        self.servers = servers
        self.switchAfter = switchAfter
    }

    var requests: [[UInt8]] { lock.withLock { sent } }
    var serverDescription: String { "stand-in" }

    func publication() async throws(BreachPSIError) -> BreachPSIPublication {
        BreachPSIPublication(publicKey: servers[0].key.publicKey)
    }

    func send(_ request: [UInt8]) async throws(BreachPSIError) -> [UInt8] {
        let number = lock.withLock {
            sent.append(request)
            return sent.count
        }
        let server = servers[number > switchAfter ? 1 : 0]
        return try server.answer(encoded: request)
    }
}

struct BreachPSICheckerTests {
    static let leaked = BreachCorpus(size: 40, seed: 2929)

    static func server(seed: UInt64) throws -> BreachPSIServer {
        var rng = SeededRandomNumberGenerator(seed: seed)
        let key = BreachPSIServerKey(using: &rng)
        var builder = BreachPSIBucketBuilder(key: key)
        try builder.add(contentsOf: leaked.present.map(\.digest))
        return BreachPSIServer(key: key, buckets: builder.finish())
    }

    /// The wire test at the checker: 1 password and 16 cost the same 16 requests of 52 bytes, each
    /// only a version, a 15-bit prefix and a compressed point; the answers are right.
    @Test func oneAndSixteenPasswordsLookTheSame() async throws {
        let server = try Self.server(seed: 1)
        let one = RecordingTransport([server])
        let sixteen = RecordingTransport([server])
        let single = [Self.leaked.present[0].digest]
        let many = Self.leaked.present.prefix(8).map(\.digest) + Self.leaked.absent.prefix(8)
        #expect(try await BreachPSIChecker(transport: one).breached(single) == [true])
        #expect(
            try await BreachPSIChecker(transport: sixteen).breached(many)
                == [Bool](repeating: true, count: 8) + [Bool](repeating: false, count: 8)
        )
        #expect(one.requests.count == 16 && sixteen.requests.count == 16)
        for request in one.requests + sixteen.requests {
            #expect(request.count == PSIRequest.encodedLength)
            let decoded = try PSIRequest(decoding: request)
            #expect(decoded.blindedElement.count == 49 && [2, 3].contains(decoded.blindedElement[0]))
        }
        // The real digest's prefix is among the 16, in a random place; nothing else identifies it.
        let prefixes = try one.requests.map { try PSIRequest(decoding: $0).prefix }
        #expect(prefixes.contains(BreachPSI.prefix(of: single[0])))
        // 17 passwords: two whole batches.
        let seventeen = RecordingTransport([server])
        _ = try await BreachPSIChecker(transport: seventeen).breached(Array(Self.leaked.absent.prefix(17)))
        #expect(seventeen.requests.count == 32)
    }

    /// A server that changes its key mid-audit: the second batch's answers are under another key,
    /// which is an error (not "not breached") even though every answer is well formed.
    @Test func aKeyChangedMidwayIsAnError() async throws {
        let transport = RecordingTransport([try Self.server(seed: 1), try Self.server(seed: 2)], switchAfter: 16)
        let digests = Self.leaked.present.prefix(20).map(\.digest)
        let error = await #expect(throws: BreachPSIError.self) {
            try await BreachPSIChecker(transport: transport).breached(digests)
        }
        #expect(error?.code == .keyChanged)
    }

    /// A transport failure ends the check at once (one batch was tried, nothing retried).
    @Test func aFailingTransportIsAnError() async throws {
        struct Down: BreachPSITransport {
            let key: BreachPSIPublicKey
            var serverDescription: String { "down" }
            func publication() async throws(BreachPSIError) -> BreachPSIPublication { .init(publicKey: key) }
            func send(_ request: [UInt8]) async throws(BreachPSIError) -> [UInt8] {
                throw BreachPSIError(.unreachable, "cannot reach down")
            }
        }
        let server = try Self.server(seed: 1)
        let error = await #expect(throws: BreachPSIError.self) {
            try await BreachPSIChecker(transport: Down(key: server.key.publicKey)).breached([Self.leaked.absent[0]])
        }
        #expect(error?.code == .unreachable)
    }

    /// A pinned key: the server's own (by ID or whole key) is accepted; another key is refused
    /// before anything is sent, so no answer under it can say "not breached".
    @Test func aPinnedKeyIsRequired() async throws {
        let server = try Self.server(seed: 1)
        let other = try Self.server(seed: 2)
        let digest = Self.leaked.present[0].digest
        for pin in [
            try BreachPSIKeyPin(hex: Hex.encode(server.key.publicKey.id)),
            try BreachPSIKeyPin(hex: Hex.encode(server.key.publicKey.representation) + "\n"),
        ] {
            #expect(
                try await BreachPSIChecker(transport: RecordingTransport([server]), pin: pin).breached([digest]) == [
                    true
                ]
            )
        }
        let impostor = RecordingTransport([other])
        let pinned = try BreachPSIKeyPin(hex: Hex.encode(server.key.publicKey.id))
        let error = await #expect(throws: BreachPSIError.self) {
            try await BreachPSIChecker(transport: impostor, pin: pinned).breached([digest])
        }
        #expect(error?.code == .keyNotPinned)
        #expect(impostor.requests.isEmpty)
        #expect(throws: BreachPSIError.self) { try BreachPSIKeyPin(hex: "abcd") }
        #expect(throws: BreachPSIError.self) { try BreachPSIKeyPin(hex: String(repeating: "zz", count: 16)) }
    }

    /// A password reused by 17 credentials is asked about once: one batch, and the results fan
    /// back to every credential.
    @Test func reusedPasswordsAreAskedOnce() async throws {
        let server = try Self.server(seed: 1)
        let transport = RecordingTransport([server])
        let reused = Self.leaked.present[1].digest
        let other = Self.leaked.absent[0]
        let digests = [SHA1Digest](repeating: reused, count: 17) + [other, reused]
        let answers = try await BreachPSIChecker(transport: transport).breached(digests)
        #expect(answers == [Bool](repeating: true, count: 17) + [false, true])
        #expect(transport.requests.count == 16)
        let prefixes = try transport.requests.map { try PSIRequest(decoding: $0).prefix }
        #expect(prefixes.filter { $0 == BreachPSI.prefix(of: reused) }.count >= 1)
    }

    /// The checker's P-384 work runs on its dedicated thread, not on the cooperative pool.
    @Test func cryptoRunsOnADedicatedThread() async throws {
        let executor = DedicatedThreadExecutor(name: "keyhaven.breach-psi.test")
        defer { executor.finish() }
        let dedicated = await Task(executorPreference: executor) { "\(pthread_self())" }.value
        let used = try await BreachPSIChecker.onThread(executor) { () throws(BreachPSIError) in "\(pthread_self())" }
        #expect(used == dedicated && used != "\(pthread_self())")
        let error = await #expect(throws: BreachPSIError.self) {
            try await BreachPSIChecker.onThread(executor) { () throws(BreachPSIError) in
                throw BreachPSIError(.badProof, "on the thread")
            }
        }
        #expect(error?.code == .badProof)
    }
}
