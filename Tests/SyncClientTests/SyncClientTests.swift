import Foundation
import Hummingbird
import HummingbirdTesting
import KeyhavenTesting
import NIOCore
import SyncClient
import SyncServer
import Testing
import Vault
import VaultSync
import VaultSyncBridge
import _KeyhavenSupport

/// Devices sync sealed credentials through the real server over loopback with `SyncHTTPClient`
/// and `SyncSession`.
@Suite(.offCooperativePool)
struct SyncClientTests {
    static let created = Date(timeIntervalSince1970: 1_799_000_000)

    @Test func anApprovedSecondDeviceConvergesWithTheFirstOnSealedCredentials() async throws {
        let clock = SharedClock()
        try await withLiveSyncServer(clock: clock) { server in
            var devices = try await TwoDevices(server: server, clock: clock)
            let listed = try await devices.phone.client.devices()
            #expect(Set(listed.map(\.id)) == [devices.laptop.key.id, devices.phone.key.id])
            #expect(listed.allSatisfy { $0.account == devices.account && $0.revoked == nil })

            var random = SystemRandomNumberGenerator()
            let item = ItemID(using: &random)
            let content = CredentialContent(
                title: "Mail",
                services: [ServiceIdentifier(kind: .domain, identifier: "mail.example")],
                user: "ada@example.com",
                password: "correct horse"
            )
            try devices.laptop.session.replica.adopt(
                SyncedCredential(content: content, created: Self.created),
                as: item,
                now: clock.milliseconds
            )
            let report = try await devices.laptop.session.sync()
            #expect(report.confirmed == 1)
            #expect(devices.laptop.session.replica.outbox.entries.isEmpty)

            let merges = try await devices.phone.session.pull()
            #expect(merges.keys.contains(item))
            #expect(try devices.phone.session.replica.credential(item).content == content)
            #expect(devices.phone.session.replica.records == devices.laptop.session.replica.records)
        }
    }

    @Test func aStaleWriteIsMergedAndLands() async throws {
        let clock = SharedClock()
        try await withLiveSyncServer(clock: clock) { server in
            var devices = try await TwoDevices(server: server, clock: clock)
            var random = SystemRandomNumberGenerator()
            let item = ItemID(using: &random)
            let content = CredentialContent(title: "Bank", user: "ada", password: "p0")
            try devices.laptop.session.replica.adopt(
                SyncedCredential(content: content, created: Self.created),
                as: item,
                now: clock.milliseconds
            )
            try await devices.laptop.session.sync()
            try await devices.phone.session.sync()

            // Offline on both: the phone changes the password, the laptop the notes.
            clock.advance(1)
            var phoneEdit = content
            phoneEdit.password = "p1"
            try devices.phone.session.replica.write(phoneEdit, passkeys: [], to: item, now: clock.milliseconds)
            clock.advance(1)
            var laptopEdit = content
            laptopEdit.notes = "PIN in the safe"
            try devices.laptop.session.replica.write(laptopEdit, passkeys: [], to: item, now: clock.milliseconds)

            #expect(try await devices.phone.session.push().confirmed == 1)
            // The laptop pushes on the revision it saw: stale, merged, sent on top, accepted.
            let report = try await devices.laptop.session.push()
            #expect(report.merged == 1)
            #expect(report.confirmed == 1)
            #expect(devices.laptop.session.replica.outbox.entries.isEmpty)

            try await devices.phone.session.sync()
            let expected = CredentialContent(title: "Bank", user: "ada", password: "p1", notes: "PIN in the safe")
            #expect(try devices.phone.session.replica.credential(item).content == expected)
            #expect(try devices.laptop.session.replica.credential(item).content == expected)
            #expect(devices.phone.session.replica.records == devices.laptop.session.replica.records)
            #expect(try devices.phone.session.replica.credential(item).conflicts.isEmpty)
        }
    }

    @Test func aMutationWhoseAnswerWasLostIsSentAgainAndAppliedOnce() async throws {
        let clock = SharedClock()
        try await withLiveSyncServer(clock: clock) { server in
            var devices = try await TwoDevices(server: server, clock: clock)
            var random = SystemRandomNumberGenerator()
            let item = ItemID(using: &random)
            try devices.laptop.session.replica.adopt(
                SyncedCredential(content: CredentialContent(title: "Git", password: "g0"), created: Self.created),
                as: item,
                now: clock.milliseconds
            )
            // Sent, but the answer never reached the device.
            var codec = devices.laptop.session.codec
            let next = try devices.laptop.session.replica.nextMutation(encoding: &codec)
            let sent = try #require(next)
            _ = try await devices.laptop.client.push(sent)

            // The next push sends the same mutation: the server recognises it, applies nothing new.
            let again = try #require(devices.laptop.session.replica.outbox.entries.first?.inFlight)
            #expect(again.id == sent.id)
            #expect(try await devices.laptop.session.push().confirmed == 1)
            let batch = try await devices.phone.client.changes(since: 0)
            #expect(batch.items.map(\.revision) == [1])
            #expect(batch.items.map(\.payload) == [sent.payload])
        }
    }

    @Test func aRevokedDevicesNextCallFailsWithATypedError() async throws {
        let clock = SharedClock()
        try await withLiveSyncServer(clock: clock) { server in
            var devices = try await TwoDevices(server: server, clock: clock)
            try await devices.phone.session.sync()  // the phone holds a token now
            let revoked = try await devices.laptop.client.revoke(devices.phone.key.id)
            #expect(revoked.revoked != nil)

            do {
                try await devices.phone.session.sync()
                Issue.record("a revoked device synced")
            } catch let error as SyncClientError {
                #expect(error.code == .unauthorized)
                #expect(error.message.contains("revoked"))
            }
            await #expect(throws: SyncClientError(.unauthorized, "")) { try await devices.phone.client.devices() }
            // The laptop goes on.
            #expect(try await devices.laptop.client.devices().count == 2)
        }
    }

    @Test func theTokenIsFetchedAgainWhenItExpires() async throws {
        let clock = SharedClock()
        try await withLiveSyncServer(clock: clock) { server in
            let devices = try await TwoDevices(server: server, clock: clock)
            let first = try await devices.laptop.client.signIn()
            clock.advance(16 * 60)  // past the server's 15 minutes
            #expect(try await devices.laptop.client.devices().count == 2)
            let second = try await devices.laptop.client.signIn()
            #expect(second > first)
        }
    }

    @Test func anUnreachableServerFailsAtOnce() async throws {
        let clock = SharedClock()
        // A port that was just served and is closed now.
        let server = try await withLiveSyncServer(clock: clock) { server in server }
        let client = try SyncHTTPClient(server: server, key: SyncDeviceKey(), account: "00", now: { clock.now })
        let start = ContinuousClock.now
        let error = try await #require(throws: SyncClientError.self) { try await client.devices() }
        #expect(error.code == .unreachable)
        #expect(ContinuousClock.now - start < .seconds(1))
        #expect(throws: SyncClientError(.invalidServer, "")) {
            try SyncHTTPClient(server: "ftp://x", key: SyncDeviceKey())
        }
    }

    /// A server whose public URL is not the one the device uses refuses what the device signs for
    /// its URL (the same as a server relaying the device's sign-in to it): ``SyncClientError/Code/wrongServer``,
    /// never retried as an expired token would be. An approval carries the client's server too.
    @Test func aServerWithAnotherPublicURLRefusesTheDevicesSignatures() async throws {
        let clock = SharedClock()
        var elsewhere = SyncServerConfiguration()
        elsewhere.publicOrigin = ServiceOrigin("https://sync.elsewhere.test")
        let counter = RequestCounter()
        try await withLiveSyncServer(clock: clock, counter: counter, configuration: elsewhere) { server in
            let client = try SyncHTTPClient(server: server, key: SyncDeviceKey(), now: { clock.now })
            #expect(await client.origin.serialized == server)
            let error = try await #require(throws: SyncClientError.self) {
                try await client.createAccount(name: "laptop")
            }
            #expect(error.code == .wrongServer)
            #expect(error.message.contains("--public-url"))
            await #expect(throws: SyncClientError(.invalidRequest, "")) {
                try await client.approval(of: SyncDeviceKey().publicKey)
            }
        }
        #expect(counter["/v1/accounts"] == 1)
    }

    /// A server that sends the head of its answer and then stalls the body: a push (sent, so it
    /// may have been applied) and a long poll fail with `noAnswer` by their deadlines (1 s, a long
    /// poll its wait on top; the bound is the deadline plus 10 s, for 2 loaded cores), never hang
    /// (the time limit makes a regression fail), also when the body trickles; both connections are
    /// closed by the client.
    @Test(.timeLimit(.minutes(1)), arguments: [StallingHTTPServer.Stall.silent, .trickle])
    func aServerThatStallsAfterItsHeadersIsNoAnswerByTheDeadline(_ stall: StallingHTTPServer.Stall) async throws {
        let key = SyncDeviceKey()
        let account = String(repeating: "a", count: 32)
        let server = try StallingHTTPServer(stall: stall) { path in
            switch path {
            case "/v1/auth/challenge": ("200 OK", #"{"challenge":"AAAA","expires":"2099-01-01T00:00:00Z"}"#)
            case "/v1/auth/token":
                (
                    "200 OK",
                    #"{"token":"t","tokenType":"Bearer","expires":"2099-01-01T00:00:00Z","device":"\#(key.id)","#
                        + #""account":"\#(account)"}"#
                )
            default: nil
            }
        }
        defer { server.close() }
        let client = try SyncHTTPClient(server: server.url, key: key, timeout: .seconds(1))
        var start = ContinuousClock.now
        let pushed = try await #require(throws: SyncClientError.self) {
            try await client.push(Mutation(item: ItemID(high: 1, low: 2), baseRevision: 0, payload: [1, 2, 3]))
        }
        #expect(pushed.code == .noAnswer)
        #expect(pushed.message.contains("may have been applied"))
        #expect(ContinuousClock.now - start < .seconds(11))
        start = ContinuousClock.now
        let polled = try await #require(throws: SyncClientError.self) {
            try await client.changes(since: 0, wait: .seconds(1))
        }
        #expect(polled.code == .noAnswer)
        #expect(ContinuousClock.now - start < .seconds(12))
        #expect(server.stalledPaths == ["/v1/push", "/v1/changes?since=0&wait=1"])
        #expect(await server.clientClosed(count: 2, within: .seconds(10)))
    }

    @Test func aLongPollOnOneDeviceReturnsWhenTheOtherPushes() async throws {
        let clock = SharedClock()
        try await withLiveSyncServer(clock: clock) { server in
            var devices = try await TwoDevices(server: server, clock: clock)
            try await devices.phone.session.sync()
            let phone = devices.phone.session
            let start = ContinuousClock.now
            let waiting = Task {
                var session = phone
                let merges = try await session.waitForChanges(wait: .seconds(30))
                return (session, Set(merges.keys))
            }
            try await Task.sleep(for: .milliseconds(300))
            var random = SystemRandomNumberGenerator()
            let item = ItemID(using: &random)
            let content = CredentialContent(title: "Chat", user: "ada", password: "c0")
            try devices.laptop.session.replica.adopt(
                SyncedCredential(content: content, created: Self.created),
                as: item,
                now: clock.milliseconds
            )
            try await devices.laptop.session.push()
            let (session, merges) = try await waiting.value
            #expect(ContinuousClock.now - start < .seconds(10))
            #expect(merges.contains(item))
            #expect(try session.replica.credential(item).content == content)
        }
    }

    @Test func aLongPollStopsWhenCancelled() async throws {
        let clock = SharedClock()
        try await withLiveSyncServer(clock: clock) { server in
            var devices = try await TwoDevices(server: server, clock: clock)
            try await devices.phone.session.sync()
            let phone = devices.phone.session
            let waiting = Task {
                var session = phone
                // Short: the server finishes the abandoned poll before it shuts down.
                _ = try await session.waitForChanges(wait: .seconds(4))
            }
            try await Task.sleep(for: .milliseconds(300))
            let start = ContinuousClock.now
            waiting.cancel()
            await #expect(throws: CancellationError.self) { try await waiting.value }
            #expect(ContinuousClock.now - start < .seconds(2))
        }
    }
}

/// What a server says reaches the person only neutralised; an answer that is not the sync API's is
/// a typed error.
@Suite(.offCooperativePool)
struct SyncClientAnswerTests {
    @Test func aServersMessageIsNeutralisedAndAForeignAnswerIsBadAnswer() async throws {
        let router = Router()
        let hostile = "\u{1B}[2J\u{1B}]0;owned\u{07}\nsecret" + String(repeating: "x", count: 400)
        router.post("v1/auth/challenge") { _, _ in
            let json = try JSONEncoder().encode(["error": "unauthorized", "message": hostile])
            return Response(status: .unauthorized, body: ResponseBody(byteBuffer: ByteBuffer(bytes: Array(json))))
        }
        router.post("v1/accounts") { _, _ in
            Response(status: .created, body: ResponseBody(byteBuffer: ByteBuffer(string: "<html>a router</html>")))
        }
        let app = Application(router: router)
        try await app.test(.live) { client in
            let port = try #require(client.port)
            let sync = try SyncHTTPClient(server: "http://127.0.0.1:\(port)/", key: SyncDeviceKey())
            do {
                try await sync.signIn()
                Issue.record("signed in against a server that refuses")
            } catch let error as SyncClientError {
                #expect(error.code == .unauthorized)
                #expect(!error.message.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F })
                #expect(error.message.contains("?[2J?]0;owned??secret"))
                #expect(error.message.count < 400)
            }
            await #expect(throws: SyncClientError(.badAnswer, "")) { try await sync.createAccount(name: "laptop") }
        }
    }
}

/// How a transport error reads: only an error before any answer may say that nothing was sent.
struct SyncClientTransportFailureTests {
    @Test func anErrorWhileReadingTheBodyIsNeverUnreachable() throws {
        let refused = IOError(errnoCode: ECONNREFUSED, reason: "connect")
        let sending = try #require(
            SyncHTTPClient.failure(refused, answered: false, server: "http://127.0.0.1:9", doing: "pushing")
                as? SyncClientError
        )
        #expect(sending.code == .unreachable)
        // The head had arrived: the request was sent, whatever the error says.
        for error in [refused, IOError(errnoCode: ECONNRESET, reason: "read")] as [any Error] {
            let reading = try #require(
                SyncHTTPClient.failure(error, answered: true, server: "http://127.0.0.1:9", doing: "pushing")
                    as? SyncClientError
            )
            #expect(reading.code == .noAnswer)
            #expect(reading.message.contains("may have been applied") && !reading.message.contains("nothing was sent"))
        }
        #expect(
            SyncHTTPClient.failure(CancellationError(), answered: true, server: "http://127.0.0.1:9", doing: "pushing")
                is CancellationError
        )
    }
}
