import Foundation
import HTTPTypes
import KeyhavenTesting
import SyncServer
import SyncServerHTTP
import Synchronization
import Testing
import VaultSync
import _KeyhavenSupport

#if canImport(Glibc)
import Glibc
#endif

/// The server's limits: idle connections, page sizes, outstanding challenges, long polls.
@Suite(.offCooperativePool)
struct SyncLimitsTests {
    /// A connection that sends nothing is closed after the idle timeout (else idle sockets pile up).
    /// (And a server started without a public origin takes the address it listens on.)
    @Test func anIdleConnectionIsClosed() async throws {
        let service = SyncService.testing(store: try SQLiteSyncStore(path: nil))
        let ready = AsyncStream<Int>.makeStream()
        let server = Task {
            try await SyncHTTPServer(service: service).run(
                host: "127.0.0.1",
                port: 0,
                idleTimeout: .milliseconds(300),
                onReady: { port in ready.continuation.yield(port) }
            )
        }
        defer { server.cancel() }
        var ports = ready.stream.makeAsyncIterator()
        let port = try #require(await ports.next())
        // Without --public-url, devices sign for the address it listens on.
        #expect(service.publicOrigin == ServiceOrigin(scheme: .http, host: "127.0.0.1", port: port))
        let started = ContinuousClock.now
        let received = Self.readUntilClosed(port: port, timeoutSeconds: 4)
        #expect(received == 0, "the server did not close the idle connection")
        #expect(ContinuousClock.now - started < .seconds(3))
    }

    /// Connects to 127.0.0.1:`port` and reads: 0 when the server closed the connection, -1 when the
    /// read timed out or failed.
    static func readUntilClosed(port: Int, timeoutSeconds: Int) -> Int {
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socketFD >= 0 else { return -1 }
        defer { close(socketFD) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socketFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { return -1 }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(socketFD, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8](repeating: 0, count: 64)
        return recv(socketFD, &buffer, buffer.count, 0)
    }

    /// A flood of challenges for one device leaves at most `maxChallengesPerDevice` of them, the
    /// newest: the latest challenge still works, the oldest do not.
    @Test func aChallengeFloodKeepsFewRows() async throws {
        let store = try SQLiteSyncStore(path: nil)
        let service = SyncService.testing(store: store)
        var generator = SeededRandomNumberGenerator(seed: 11)
        let laptop = TestDeviceKey(&generator)
        try await withSyncServer(service) { api in
            _ = try await api.createAccount(laptop)
            var challenges: [String] = []
            for _ in 0..<40 {
                let answer = try await api.challenge(laptop)
                challenges.append(try #require(answer.string("challenge")))
            }
            let kept = try await store.challengeCount(device: laptop.id)
            #expect(kept <= service.configuration.maxChallengesPerDevice)
            #expect(kept > 0)
            #expect(try await api.token(laptop, challenge: challenges[0]).status == .unauthorized)
            #expect(try await api.token(laptop, challenge: challenges[39]).status == .ok)
        }
    }

    /// A device may have two long polls waiting; a third is 429 `busy` with Retry-After. A write
    /// wakes them, and nothing is left waiting.
    @Test func longPollsPerDeviceAreLimited() async throws {
        let service = SyncService.testing(store: try SQLiteSyncStore(path: nil))
        var generator = SeededRandomNumberGenerator(seed: 12)
        let laptop = TestDeviceKey(&generator)
        try await withSyncServer(service) { api in
            _ = try await api.createAccount(laptop)
            let token = try await api.signIn(laptop)
            let device = try await service.authenticate(token: token)
            let polls = (0..<2).map { _ in Task { try await service.changes(since: 0, by: device, wait: .seconds(30)) }
            }
            let clock = ContinuousClock()
            let deadline = clock.now + .seconds(5)
            while service.waitingLongPolls.polls < 2, clock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(service.waitingLongPolls.polls == 2)
            let third = try await api.call(.get, "/v1/changes?since=0&wait=30", token: token)
            #expect(third.status == .tooManyRequests)
            #expect(third.string("error") == "busy")
            #expect(third.headers[.retryAfter] != nil)
            // Without waiting, the same device is served.
            #expect(try await api.call(.get, "/v1/changes?since=0", token: token).status == .ok)
            _ = try await service.push(
                Mutation(item: ItemID(high: 1, low: 1), baseRevision: 0, payload: [1]),
                by: device
            )
            for poll in polls { #expect(try await poll.value.items.count == 1) }
            #expect(service.waitingLongPolls.polls == 0 && service.waitingLongPolls.waiters == 0)
        }
    }

    /// A cursor beyond the account's latest sequence (the server restored from a backup) is 409
    /// `cursorAhead`: the device resyncs from 0 instead of missing writes.
    @Test func aCursorAheadOfTheServerIs409() async throws {
        let service = SyncService.testing(store: try SQLiteSyncStore(path: nil))
        var generator = SeededRandomNumberGenerator(seed: 13)
        let laptop = TestDeviceKey(&generator)
        try await withSyncServer(service) { api in
            _ = try await api.createAccount(laptop)
            let token = try await api.signIn(laptop)
            let device = try await service.authenticate(token: token)
            _ = try await service.push(
                Mutation(item: ItemID(high: 1, low: 1), baseRevision: 0, payload: [1]),
                by: device
            )
            #expect(try await api.call(.get, "/v1/changes?since=1", token: token).status == .ok)
            let ahead = try await api.call(.get, "/v1/changes?since=5&wait=1", token: token)
            #expect(ahead.status == .conflict)
            #expect(ahead.string("error") == "cursorAhead")
        }
    }

    /// A store failing with an error that is not a SyncServerError is answered 500 `storage` as
    /// JSON, without the error's details.
    @Test func anUnknownStoreErrorIs500Storage() async throws {
        let service = SyncService.testing(store: FailingStore())
        try await withSyncServer(service) { api in
            let answer = try await api.call(
                .post,
                "/v1/auth/challenge",
                body: ["device": String(repeating: "a", count: 32)]
            )
            #expect(answer.status == .internalServerError)
            #expect(answer.string("error") == "storage")
            #expect(answer.string("message")?.contains("secret-detail") == false)
        }
    }
}

/// A store whose every call fails with an error that is not a ``SyncServerError``.
struct FailingStore: SyncStore {
    struct Failure: Error, CustomStringConvertible {
        var description: String { "secret-detail" }
    }

    func createAccount(_ account: String, firstDevice: EnrolledDevice) async throws { throw Failure() }
    func addDevice(_ device: EnrolledDevice, approvedBy approver: String) async throws { throw Failure() }
    func device(_ id: String) async throws -> EnrolledDevice? { throw Failure() }
    func devices(of account: String) async throws -> [EnrolledDevice] { throw Failure() }
    func revoke(_ device: String, of account: String, at date: Date) async throws -> Bool { throw Failure() }
    func saveChallenge(hash: [UInt8], device: String, expires: Date, keepAtMost: Int, purgeBefore: Date?) async throws {
        throw Failure()
    }
    func takeChallenge(hash: [UInt8]) async throws -> (device: String, expires: Date)? { throw Failure() }
    func saveToken(hash: [UInt8], device: String, expires: Date, purgeBefore: Date?) async throws { throw Failure() }
    func tokenHolder(hash: [UInt8], now: Date) async throws -> EnrolledDevice? { throw Failure() }
    func saveJoinRequest(_ request: JoinRequest, now: Date, maxPending: Int) async throws { throw Failure() }
    func joinRequest(lookup: String, now: Date) async throws -> JoinRequest? { throw Failure() }
    func saveJoinGrant(_ grant: [UInt8], lookup: String, now: Date) async throws { throw Failure() }
    func push(_ mutation: Mutation, account: String) async throws -> PushResponse { throw Failure() }
    func changes(account: String, since cursor: UInt64, limit: Int, maxBytes: Int) async throws -> ChangeBatch {
        throw Failure()
    }
}
