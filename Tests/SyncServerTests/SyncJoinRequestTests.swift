import Foundation
import HTTPTypes
import HummingbirdTesting
import KeyhavenTesting
import SyncServer
import SyncServerPostgres
import Testing
import VaultSync
import _KeyhavenSupport

/// Join requests (`keyhaven sync join`) on the server: stored 10 minutes, one per lookup, a cap on
/// how many wait, the grant stored once; reading a request takes an enrolled device's token.
@Suite(.offCooperativePool)
struct SyncJoinRequestTests {
    static func request(_ lookup: String, expires: Date) -> JoinRequest {
        JoinRequest(
            lookup: lookup,
            publicKey: Array(repeating: 1, count: 32),
            agreementKey: Array(repeating: 2, count: 32),
            name: "phone",
            tag: Array(repeating: 3, count: 32),
            expires: expires
        )
    }

    static func lookup(_ n: Int) -> String { String(format: "%032x", n) }

    /// What both stores must do, at the store's level.
    static func exercise(_ store: any SyncStore) async throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let expires = now.addingTimeInterval(600)
        try await store.saveJoinRequest(request(lookup(1), expires: expires), now: now, maxPending: 3)
        #expect(try await store.joinRequest(lookup: lookup(1), now: now) == request(lookup(1), expires: expires))
        #expect(try await store.joinRequest(lookup: lookup(2), now: now) == nil)

        // One pending request per lookup.
        await #expect(throws: SyncServerError(.alreadyExists, "")) {
            try await store.saveJoinRequest(request(lookup(1), expires: expires), now: now, maxPending: 3)
        }

        // The grant is stored once, beside the request.
        try await store.saveJoinGrant([9, 9, 9], lookup: lookup(1), now: now)
        #expect(try await store.joinRequest(lookup: lookup(1), now: now)?.grant == [9, 9, 9])
        await #expect(throws: SyncServerError(.alreadyExists, "")) {
            try await store.saveJoinGrant([8], lookup: lookup(1), now: now)
        }
        #expect(try await store.joinRequest(lookup: lookup(1), now: now)?.grant == [9, 9, 9])
        await #expect(throws: SyncServerError(.notFound, "")) {
            try await store.saveJoinGrant([8], lookup: lookup(2), now: now)
        }

        // The cap: three pending, a fourth refused.
        try await store.saveJoinRequest(request(lookup(2), expires: expires), now: now, maxPending: 3)
        try await store.saveJoinRequest(request(lookup(3), expires: expires), now: now, maxPending: 3)
        await #expect(throws: SyncServerError(.busy, "")) {
            try await store.saveJoinRequest(request(lookup(4), expires: expires), now: now, maxPending: 3)
        }

        // Once expired, a request is gone: not read, not granted, purged by the next insert (which
        // the cap then admits), and its lookup free again.
        let later = expires
        #expect(try await store.joinRequest(lookup: lookup(2), now: later) == nil)
        await #expect(throws: SyncServerError(.notFound, "")) {
            try await store.saveJoinGrant([8], lookup: lookup(2), now: later)
        }
        let next = later.addingTimeInterval(600)
        try await store.saveJoinRequest(request(lookup(4), expires: next), now: later, maxPending: 3)
        try await store.saveJoinRequest(request(lookup(1), expires: next), now: later, maxPending: 3)
        #expect(try await store.joinRequest(lookup: lookup(1), now: later)?.grant == nil)
    }

    @Test func theSQLiteStoreKeepsJoinRequestsAsItShould() async throws {
        try await Self.exercise(try SQLiteSyncStore(path: nil))
    }

    @Test(.enabled(if: SyncPostgresTests.url != nil, "set KEYHAVEN_TEST_POSTGRES_URL (scripts/test.sh does)"))
    func thePostgresStoreKeepsJoinRequestsAsItShould() async throws {
        try await SyncPostgresTests.withStores(1) { stores in try await Self.exercise(stores[0]) }
    }

    static func joinBody(_ lookup: String, origin: ServiceOrigin = .testServer, name: String = "phone") -> [String: Any]
    {
        [
            "origin": origin.serialized, "lookup": lookup,
            "publicKey": Base64URL.encode(Array(repeating: 1, count: 32)),
            "agreementKey": Base64URL.encode(Array(repeating: 2, count: 32)), "name": name,
            "tag": Base64URL.encode(Array(repeating: 3, count: 32)),
        ]
    }

    @Test func overHTTPARequestExpiresAfterTenMinutesAndOnlyEnrolledDevicesReadIt() async throws {
        let clock = TestClock()
        let service = SyncService.testing(store: try SQLiteSyncStore(path: nil), clock: clock)
        try await withSyncServer(service) { api in
            var generator = SeededRandomNumberGenerator(seed: 9)
            let laptop = TestDeviceKey(&generator)
            _ = try await api.createAccount(laptop)
            let token = try await api.signIn(laptop)
            let lookup = Self.lookup(7)

            let created = try await api.call(.post, "/v1/join-requests", body: Self.joinBody(lookup))
            #expect(created.status == .created && created.string("lookup") == lookup)
            #expect(try await api.call(.post, "/v1/join-requests", body: Self.joinBody(lookup)).status == .conflict)

            // Without a token nobody reads the request; with one, the device does.
            let anonymous = try await api.call(.get, "/v1/join-requests/\(lookup)")
            #expect(anonymous.status == .unauthorized)
            #expect(anonymous.json["publicKey"] == nil)
            let read = try await api.call(.get, "/v1/join-requests/\(lookup)", token: token)
            #expect(read.status == .ok && read.string("name") == "phone")
            #expect(read.string("agreementKey") == Base64URL.encode(Array(repeating: 2, count: 32)))

            // The new device waits (no token): not approved yet.
            let waiting = try await api.call(.get, "/v1/join-requests/\(lookup)/grant")
            #expect(waiting.status == .ok && (waiting.json["approved"] as? NSNumber)?.boolValue == false)
            // Granting takes a token, and happens once.
            let grant = ["grant": Base64URL.encode([1, 2, 3])]
            #expect(try await api.call(.post, "/v1/join-requests/\(lookup)/grant", body: grant).status == .unauthorized)
            #expect(
                try await api.call(.post, "/v1/join-requests/\(lookup)/grant", token: token, body: grant).status
                    == .created
            )
            #expect(
                try await api.call(.post, "/v1/join-requests/\(lookup)/grant", token: token, body: grant).status
                    == .conflict
            )
            let approved = try await api.call(.get, "/v1/join-requests/\(lookup)/grant")
            #expect(
                (approved.json["approved"] as? NSNumber)?.boolValue == true
                    && approved.string("grant") == Base64URL.encode([1, 2, 3])
            )

            // Ten minutes later it is gone.
            clock.advance(600)
            #expect(try await api.call(.get, "/v1/join-requests/\(lookup)/grant").status == .notFound)
            let newToken = try await api.signIn(laptop)
            #expect(try await api.call(.get, "/v1/join-requests/\(lookup)", token: newToken).status == .notFound)
        }
    }

    @Test func junkAndOtherServersAre4xxAndTheCapHolds() async throws {
        let clock = TestClock()
        var configuration = SyncService.testing(store: try SQLiteSyncStore(path: nil), clock: clock).configuration
        configuration.maxJoinRequests = 2
        let service = SyncService(store: try SQLiteSyncStore(path: nil), configuration: configuration)
        try await withSyncServer(service) { api in
            var bad = Self.joinBody(Self.lookup(1))
            bad["agreementKey"] = Base64URL.encode([1, 2])
            #expect(try await api.call(.post, "/v1/join-requests", body: bad).status == .badRequest)
            #expect(try await api.call(.post, "/v1/join-requests", body: Self.joinBody("XYZ")).status == .badRequest)
            #expect(try await api.call(.post, "/v1/join-requests", raw: Array("{".utf8)).status == .badRequest)
            #expect(
                try await api.call(.post, "/v1/join-requests", body: Self.joinBody(Self.lookup(1), name: "a\u{202E}b"))
                    .status == .badRequest
            )
            let relayed = Self.joinBody(Self.lookup(1), origin: ServiceOrigin("https://evil.example")!)
            #expect(try await api.call(.post, "/v1/join-requests", body: relayed).status == .unauthorized)
            #expect(try await api.call(.get, "/v1/join-requests/nothex/grant").status == .badRequest)
            #expect(try await api.call(.get, "/v1/join-requests/\(Self.lookup(5))/grant").status == .notFound)

            #expect(
                try await api.call(.post, "/v1/join-requests", body: Self.joinBody(Self.lookup(1))).status == .created
            )
            #expect(
                try await api.call(.post, "/v1/join-requests", body: Self.joinBody(Self.lookup(2))).status == .created
            )
            let full = try await api.call(.post, "/v1/join-requests", body: Self.joinBody(Self.lookup(3)))
            #expect(full.status == .tooManyRequests && full.string("error") == "busy")
            clock.advance(600)
            #expect(
                try await api.call(.post, "/v1/join-requests", body: Self.joinBody(Self.lookup(3))).status == .created
            )
        }
    }

    /// One client cannot fill the server's cap: 5 pending per address (an IPv6 /64), counted by
    /// the connection's peer, or behind a trusted proxy by the address the proxy appended.
    @Test func oneAddressHasAtMostFivePendingRequests() async throws {
        let clock = TestClock()
        let direct = SyncService.testing(store: try SQLiteSyncStore(path: nil), clock: clock)
        try await withSyncServer(direct, .live) { api in
            for n in 1...5 {
                let created = try await api.call(.post, "/v1/join-requests", body: Self.joinBody(Self.lookup(n)))
                #expect(created.status == .created)
            }
            // A header is not believed without --client-address-header: still the same peer.
            let sixth = try await api.call(
                .post,
                "/v1/join-requests",
                body: Self.joinBody(Self.lookup(6)),
                headers: [HTTPField.Name("X-Forwarded-For")!: "203.0.113.9"]
            )
            #expect(sixth.status == .tooManyRequests && sixth.string("error") == "busy")
            #expect(sixth.string("message")?.contains("from this address") == true)
            clock.advance(600)
            #expect(
                try await api.call(.post, "/v1/join-requests", body: Self.joinBody(Self.lookup(6))).status == .created
            )
        }

        var configuration = direct.configuration
        configuration.clientAddressHeader = "X-Forwarded-For"
        let proxied = SyncService(store: try SQLiteSyncStore(path: nil), configuration: configuration)
        try await withSyncServer(proxied, .live) { api in
            var statuses: [HTTPResponse.Status] = []
            let addresses =
                Array(repeating: "203.0.113.7", count: 6) + ["203.0.113.8"]
                + Array(repeating: "2001:db8:1:2::5", count: 4) + ["2001:DB8:1:2:ffff:0:0:9", "2001:db8:1:2:abcd::1"]
                + ["2001:db8:1:3::1"]
            for (n, address) in addresses.enumerated() {
                let answer = try await api.call(
                    .post,
                    "/v1/join-requests",
                    body: Self.joinBody(Self.lookup(100 + n)),
                    // The client's own claim on the left is ignored; the proxy appended the last.
                    headers: [HTTPField.Name("X-Forwarded-For")!: "198.51.100.1, \(address)"]
                )
                statuses.append(answer.status)
            }
            let (created, busy) = (HTTPResponse.Status.created, HTTPResponse.Status.tooManyRequests)
            #expect(
                statuses == Array(repeating: created, count: 5) + [busy, created]
                    + Array(repeating: created, count: 5) + [busy, created]
            )
        }
    }
}
