import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import KeyhavenTesting
import NIOCore
import SyncServer
import Testing
import VaultSync
import _KeyhavenSupport

@testable import SyncClient

/// What the client reads of a server's answers: every field of a device, nothing malformed taken
/// as empty, answers no larger than a page, and one sign-in for calls that share a refused token.
@Suite(.offCooperativePool)
struct SyncClientReadingTests {
    /// The sign-in answers of a stand-in server for `key` (any challenge, a token for ever).
    static func signIn(_ path: String, key: SyncDeviceKey) -> StallingHTTPServer.Answer? {
        switch path {
        case "/v1/auth/challenge": ("200 OK", #"{"challenge":"AAAA","expires":"2099-01-01T00:00:00Z"}"#)
        case "/v1/auth/token":
            (
                "200 OK",
                #"{"token":"t","tokenType":"Bearer","expires":"2099-01-01T00:00:00Z","device":"\#(key.id)","#
                    + #""account":"\#(String(repeating: "a", count: 32))"}"#
            )
        default: nil
        }
    }

    @Test func theDeviceListSaysWhichDeviceApprovedEach() async throws {
        let clock = SharedClock()
        try await withLiveSyncServer(clock: clock) { server in
            let devices = try await TwoDevices(server: server, clock: clock)
            let listed = try await devices.laptop.client.devices()
            let byID = Dictionary(uniqueKeysWithValues: listed.map { ($0.id, $0) })
            #expect(byID.count == 2)
            #expect(byID[devices.laptop.key.id]?.approvedBy == nil)
            #expect(byID[devices.phone.key.id]?.approvedBy == devices.laptop.key.id)
            #expect(byID[devices.phone.key.id]?.publicKey == devices.phone.key.publicKey)
        }
    }

    /// A device whose key is not an Ed25519 key (not base64url, 31 bytes), whose id is not its key's,
    /// or whose approver is not a device id, is not a sync server's answer.
    @Test(arguments: 0..<4)
    func aMalformedDeviceIsABadAnswer(_ flaw: Int) async throws {
        let key = SyncDeviceKey()
        let other = SyncDeviceKey()
        let (publicKey, id, approvedBy): (String, String, String) =
            switch flaw {
            case 0: ("!!not-base64!!", key.id, other.id)
            case 1: (Base64URL.encode(Array(key.publicKey.prefix(31))), key.id, other.id)
            case 2: (Base64URL.encode(other.publicKey), key.id, other.id)
            default: (Base64URL.encode(key.publicKey), key.id, "<script>")
            }
        let device =
            #"{"id":"\#(id)","account":"\#(String(repeating: "a", count: 32))","name":"phone","#
            + #""publicKey":"\#(publicKey)","created":"2026-01-01T00:00:00Z","approvedBy":"\#(approvedBy)"}"#
        let server = try StallingHTTPServer { path in
            path == "/v1/devices" ? ("200 OK", #"{"devices":[\#(device)]}"#) : Self.signIn(path, key: key)
        }
        defer { server.close() }
        let client = try SyncHTTPClient(server: server.url, key: key, timeout: .seconds(5))
        await #expect(throws: SyncClientError(.badAnswer, "")) { try await client.devices() }
    }

    /// The cap on an answer follows the server's page (4 MiB of payloads, as base64url, and the
    /// JSON around 500 items) instead of 64 MiB: a real server's fullest page is read, a larger
    /// answer is `badAnswer`.
    @Test func answersAreCappedAtAPageOfTheServer() async throws {
        let configuration = SyncServerConfiguration()
        #expect(
            SyncHTTPClient.answerLimit >= configuration.changesMaxBytes / 3 * 4 + configuration.changesLimit * 200
        )
        #expect(SyncHTTPClient.answerLimit <= 8 << 20)

        let clock = SharedClock()
        try await withLiveSyncServer(clock: clock) { server in
            let client = try SyncHTTPClient(server: server, key: SyncDeviceKey(), now: { clock.now })
            _ = try await client.createAccount(name: "laptop")
            // 70 items just under the item cap: the first page holds 4 MiB of them.
            var random = SystemRandomNumberGenerator()
            let size = configuration.maxItemBytes - 16
            for index in 0..<70 {
                let payload = (0..<size).map { _ in UInt8.random(in: 0...255, using: &random) }
                let pushed = try await client.push(
                    Mutation(item: ItemID(high: 5, low: UInt64(index)), baseRevision: 0, payload: payload)
                )
                #expect(pushed == .accepted(revision: 1))
            }
            let page = try await client.changes(since: 0)
            #expect(page.items.count >= configuration.changesMaxBytes / size - 1)
            #expect(page.items.count < 70)
        }

        let key = SyncDeviceKey()
        let huge =
            #"{"items":[],"sequence":0,"padding":""# + String(repeating: "A", count: SyncHTTPClient.answerLimit) + "\"}"
        let stand = try StallingHTTPServer { path in
            path.hasPrefix("/v1/changes") ? ("200 OK", huge) : Self.signIn(path, key: key)
        }
        defer { stand.close() }
        let client = try SyncHTTPClient(server: stand.url, key: key, timeout: .seconds(10))
        let error = try await #require(throws: SyncClientError.self) { try await client.changes(since: 0) }
        #expect(error.code == .badAnswer)
        #expect(error.message.contains("larger than a page"))
    }

    /// Two calls refused with the same token (it expired on the server) sign in once: the second
    /// finds the token the first fetched and uses it, rather than signing in again. A call signs in
    /// again only when the refused token is still the one the client holds.
    @Test func aRefusedTokenIsReplacedOnceForCallsThatShareIt() async throws {
        let counts = RequestCounter()  // "token": tokens issued, "refused": 401s answered
        let key = SyncDeviceKey()
        let router = Router()
        let json: @Sendable (HTTPResponse.Status, String) -> Response = { status, text in
            Response(
                status: status,
                headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: text))
            )
        }
        router.post("/v1/auth/challenge") { _, _ in
            json(.ok, #"{"challenge":"AAAA","expires":"2099-01-01T00:00:00Z"}"#)
        }
        router.post("/v1/auth/token") { _, _ in
            counts.add("token")
            let number = counts["token"]
            return json(
                .ok,
                #"{"token":"t\#(number)","tokenType":"Bearer","expires":"2099-01-01T00:00:00Z","#
                    + #""device":"\#(key.id)","account":"\#(String(repeating: "a", count: 32))"}"#
            )
        }
        router.get("/v1/devices") { request, _ in
            // The first token has expired on this server; the later ones are good.
            if let bearer = request.headers[.authorization], bearer != "Bearer t1" {
                return json(.ok, #"{"devices":[]}"#)
            }
            counts.add("refused")
            if counts["refused"] > 1 {
                // The second refusal arrives after the first call has fetched a new token.
                let start = ContinuousClock.now
                while counts["token"] < 2, ContinuousClock.now - start < .seconds(5) {
                    try await Task.sleep(for: .milliseconds(20))
                }
                try await Task.sleep(for: .milliseconds(300))
            }
            return json(.unauthorized, #"{"error":"unauthorized","message":"the token expired"}"#)
        }
        try await Application(router: router).test(.live) { http in
            let port = try #require(http.port)
            let client = try SyncHTTPClient(server: "http://127.0.0.1:\(port)", key: key, timeout: .seconds(10))
            // Signed in before (a token just fetched that is refused is not fetched again).
            try await client.signIn()
            async let first = client.devices()
            async let second = client.devices()
            let (one, other) = try await (first, second)
            #expect(one.isEmpty && other.isEmpty)
        }
        #expect(counts["refused"] == 2)
        #expect(counts["token"] == 2)
    }
}
