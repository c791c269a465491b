import Foundation
import HTTPTypes
import KeyhavenTesting
import SyncServer
import Testing
import VaultSync
import _KeyhavenSupport

/// Devices authenticate with their own keys: every way in without one is refused.
@Suite(.offCooperativePool)
struct SyncAuthTests {
    struct Fixture {
        var laptop: TestDeviceKey
        var phone: TestDeviceKey
        var stranger: TestDeviceKey
        let clock = TestClock()
        let service: SyncService

        init() throws {
            var generator = SeededRandomNumberGenerator(seed: 7)
            laptop = TestDeviceKey(&generator)
            phone = TestDeviceKey(&generator)
            stranger = TestDeviceKey(&generator)
            service = SyncService.testing(store: try SQLiteSyncStore(path: nil), clock: clock)
        }
    }

    @Test func aSignedChallengeGivesATokenThatWorksUntilItExpires() async throws {
        let fixture = try Fixture()
        try await withSyncServer(fixture.service) { api in
            _ = try await api.createAccount(fixture.laptop)
            let token = try await api.signIn(fixture.laptop)
            #expect(try await api.call(.get, "/v1/devices", token: token).status == .ok)
            fixture.clock.advance(16 * 60)
            let expired = try await api.call(.get, "/v1/devices", token: token)
            #expect(expired.status == .unauthorized)
            #expect(expired.headers[.wwwAuthenticate] == "Bearer")
            #expect(expired.string("error") == "unauthorized")
        }
    }

    @Test func unsignedExpiredReplayedAndMisdirectedChallengesAreRefused() async throws {
        let fixture = try Fixture()
        try await withSyncServer(fixture.service) { api in
            let account = try await api.createAccount(fixture.laptop)
            #expect(try await api.addDevice(fixture.phone, to: account, approvedBy: fixture.laptop).status == .created)

            // Signed by another key.
            var challenge = try await api.challenge(fixture.laptop).string("challenge")!
            #expect(
                try await api.token(fixture.laptop, challenge: challenge, signer: fixture.stranger).status
                    == .unauthorized
            )
            // Not signed at all.
            challenge = try await api.challenge(fixture.laptop).string("challenge")!
            let unsigned = try await api.call(
                .post,
                "/v1/auth/token",
                body: [
                    "device": fixture.laptop.id, "challenge": challenge, "origin": ServiceOrigin.testServer.serialized,
                    "signature": "",
                ]
            )
            #expect(unsigned.status == .unauthorized)
            // Expired.
            challenge = try await api.challenge(fixture.laptop).string("challenge")!
            fixture.clock.advance(61)
            #expect(try await api.token(fixture.laptop, challenge: challenge).status == .unauthorized)
            // Replayed: answered once, then refused.
            challenge = try await api.challenge(fixture.laptop).string("challenge")!
            #expect(try await api.token(fixture.laptop, challenge: challenge).status == .ok)
            #expect(try await api.token(fixture.laptop, challenge: challenge).status == .unauthorized)
            // Issued to the laptop, answered by the phone (with the phone's own valid signature).
            challenge = try await api.challenge(fixture.laptop).string("challenge")!
            #expect(try await api.token(fixture.phone, challenge: challenge).status == .unauthorized)
            // A challenge the server never issued.
            let invented = Base64URL.encode([UInt8](repeating: 7, count: 32))
            #expect(try await api.token(fixture.laptop, challenge: invented).status == .unauthorized)
            // A device that is not enrolled gets no challenge.
            #expect(try await api.challenge(fixture.stranger).status == .unauthorized)
            // No token, a made-up token.
            #expect(try await api.call(.get, "/v1/devices").status == .unauthorized)
            #expect(try await api.call(.get, "/v1/devices", token: invented).status == .unauthorized)
        }
    }

    @Test func aDeviceJoinsOnlyWithTheApprovalOfAnEnrolledDevice() async throws {
        let fixture = try Fixture()
        try await withSyncServer(fixture.service) { api in
            let account = try await api.createAccount(fixture.laptop)
            // Approved by itself (a key that is not in the account).
            #expect(
                try await api.addDevice(fixture.phone, to: account, approvedBy: fixture.phone).status
                    == .forbidden
            )
            // The approver named, but the approval signed by another key.
            var forged = try await api.call(
                .post,
                "/v1/devices",
                body: [
                    "account": account, "publicKey": Base64URL.encode(fixture.phone.publicKey), "name": "phone",
                    "approver": fixture.laptop.id,
                    "approval": Base64URL.encode(
                        fixture.phone.sign(
                            DeviceSignatures.approval(
                                server: .testServer,
                                account: account,
                                newPublicKey: fixture.phone.publicKey
                            )
                        )
                    ),
                    "origin": ServiceOrigin.testServer.serialized,
                    "proof": Base64URL.encode(
                        fixture.phone.sign(
                            DeviceSignatures.enrolment(
                                server: .testServer,
                                account: account,
                                newPublicKey: fixture.phone.publicKey
                            )
                        )
                    ),
                ]
            )
            #expect(forged.status == .forbidden)
            // The laptop's approval of another key does not admit the phone's.
            forged = try await api.call(
                .post,
                "/v1/devices",
                body: [
                    "account": account, "publicKey": Base64URL.encode(fixture.phone.publicKey), "name": "phone",
                    "approver": fixture.laptop.id,
                    "approval": Base64URL.encode(
                        fixture.laptop.sign(
                            DeviceSignatures.approval(
                                server: .testServer,
                                account: account,
                                newPublicKey: fixture.stranger.publicKey
                            )
                        )
                    ),
                    "origin": ServiceOrigin.testServer.serialized,
                    "proof": Base64URL.encode(
                        fixture.phone.sign(
                            DeviceSignatures.enrolment(
                                server: .testServer,
                                account: account,
                                newPublicKey: fixture.phone.publicKey
                            )
                        )
                    ),
                ]
            )
            #expect(forged.status == .forbidden)
            // Approved properly: in, and its key can sign in.
            let added = try await api.addDevice(fixture.phone, to: account, approvedBy: fixture.laptop)
            #expect(added.status == .created)
            #expect(added.string("id") == fixture.phone.id)
            #expect(added.string("approvedBy") == fixture.laptop.id)
            let token = try await api.signIn(fixture.phone)
            let list = try await api.call(.get, "/v1/devices", token: token)
            #expect(
                (list.json["devices"] as? [[String: Any]])?.compactMap { $0["id"] as? String }.sorted()
                    == [fixture.laptop.id, fixture.phone.id].sorted()
            )
            // The same key again: refused.
            #expect(
                try await api.addDevice(fixture.phone, to: account, approvedBy: fixture.laptop).status
                    == .conflict
            )
        }
    }

    @Test func revokingADeviceEndsItsTokensAtOnceAndItsApprovals() async throws {
        let fixture = try Fixture()
        try await withSyncServer(fixture.service) { api in
            let account = try await api.createAccount(fixture.laptop)
            _ = try await api.addDevice(fixture.phone, to: account, approvedBy: fixture.laptop)
            let laptopToken = try await api.signIn(fixture.laptop)
            let phoneToken = try await api.signIn(fixture.phone)
            // A challenge the phone holds before it is revoked.
            let pending = try await api.challenge(fixture.phone).string("challenge")!

            let revoked = try await api.call(.delete, "/v1/devices/\(fixture.phone.id)", token: laptopToken)
            #expect(revoked.status == .ok)
            #expect(revoked.string("revoked") != nil)

            #expect(try await api.call(.get, "/v1/devices", token: phoneToken).status == .unauthorized)
            #expect(try await api.token(fixture.phone, challenge: pending).status == .unauthorized)
            #expect(try await api.challenge(fixture.phone).status == .unauthorized)
            // A revoked device approves nobody, and its key never comes back.
            #expect(
                try await api.addDevice(fixture.stranger, to: account, approvedBy: fixture.phone).status
                    == .forbidden
            )
            #expect(
                try await api.addDevice(fixture.phone, to: account, approvedBy: fixture.laptop).status
                    == .conflict
            )
            // The laptop still works; revoking twice, or a device of nobody, is 404.
            #expect(try await api.call(.get, "/v1/devices", token: laptopToken).status == .ok)
            #expect(
                try await api.call(.delete, "/v1/devices/\(fixture.phone.id)", token: laptopToken).status
                    == .notFound
            )
        }
    }

    @Test func anAccountNeedsTheKeysProof() async throws {
        let fixture = try Fixture()
        try await withSyncServer(fixture.service) { api in
            let answer = try await api.call(
                .post,
                "/v1/accounts",
                body: [
                    "publicKey": Base64URL.encode(fixture.laptop.publicKey), "name": "laptop",
                    "origin": ServiceOrigin.testServer.serialized,
                    "proof": Base64URL.encode(
                        fixture.stranger.sign(
                            DeviceSignatures.accountCreation(server: .testServer, publicKey: fixture.laptop.publicKey)
                        )
                    ),
                ]
            )
            #expect(answer.status == .unauthorized)
            let malformed = try await api.call(.post, "/v1/accounts", raw: Array("{\"publicKey\":".utf8))
            #expect(malformed.status == .badRequest)
            #expect(malformed.string("error") == "invalidRequest")
        }
    }

    /// Nothing secret in an error: not the token, not the challenge, not the signature.
    @Test func errorsCarryNoSecret() async throws {
        let fixture = try Fixture()
        try await withSyncServer(fixture.service) { api in
            _ = try await api.createAccount(fixture.laptop)
            let token = try await api.signIn(fixture.laptop)
            let challenge = try await api.challenge(fixture.laptop).string("challenge")!
            let wrong = try await api.token(fixture.laptop, challenge: challenge, signer: fixture.stranger)
            let misused = try await api.call(.get, "/v1/devices", token: token + "x")
            for answer in [wrong, misused] {
                let text = "\(answer.json)"
                #expect(!text.contains(token) && !text.contains(challenge))
            }
        }
    }

    /// Every answer, errors included, carries the security headers and is never cached.
    @Test func everyAnswerCarriesTheSecurityHeaders() async throws {
        let fixture = try Fixture()
        try await withSyncServer(fixture.service) { api in
            let created = try await api.call(
                .post,
                "/v1/accounts",
                body: [
                    "publicKey": Base64URL.encode(fixture.laptop.publicKey), "name": "laptop",
                    "origin": ServiceOrigin.testServer.serialized,
                    "proof": Base64URL.encode(
                        fixture.laptop.sign(
                            DeviceSignatures.accountCreation(server: .testServer, publicKey: fixture.laptop.publicKey)
                        )
                    ),
                ]
            )
            let answers = [
                created,
                try await api.call(.get, "/v1/devices"),
                try await api.call(.get, "/v1/nowhere"),
                try await api.call(.post, "/v1/accounts", raw: Array("[]".utf8)),
                try await api.call(.post, "/v1/accounts", raw: [UInt8](repeating: 0x20, count: 20 << 10)),
            ]
            #expect(answers.map(\.status.code) == [201, 401, 404, 400, 413])
            for answer in answers {
                #expect(
                    answer.headers[HTTPField.Name("Content-Security-Policy")!]
                        == "default-src 'none'; frame-ancestors 'none'"
                )
                #expect(answer.headers[HTTPField.Name("X-Frame-Options")!] == "DENY")
                #expect(answer.headers[HTTPField.Name("X-Content-Type-Options")!] == "nosniff")
                #expect(answer.headers[.cacheControl] == "no-store")
            }
        }
    }

    /// Ids are 32 lowercase hex digits, checked before anything else; a bad one is 400 and its
    /// text is not echoed back.
    @Test func malformedIdsAre400WithoutEcho() async throws {
        let fixture = try Fixture()
        try await withSyncServer(fixture.service) { api in
            let account = try await api.createAccount(fixture.laptop)
            let token = try await api.signIn(fixture.laptop)
            let marker = "<script>evil-id-marker</script>"
            let approval = Base64URL.encode(
                fixture.laptop.sign(
                    DeviceSignatures.approval(
                        server: .testServer,
                        account: account,
                        newPublicKey: fixture.phone.publicKey
                    )
                )
            )
            let proof = Base64URL.encode(
                fixture.phone.sign(
                    DeviceSignatures.enrolment(
                        server: .testServer,
                        account: account,
                        newPublicKey: fixture.phone.publicKey
                    )
                )
            )
            let answers = [
                try await api.call(.post, "/v1/auth/challenge", body: ["device": marker]),
                try await api.call(
                    .post,
                    "/v1/auth/token",
                    body: [
                        "device": marker, "challenge": "AAAA", "origin": ServiceOrigin.testServer.serialized,
                        "signature": "AAAA",
                    ]
                ),
                try await api.call(
                    .post,
                    "/v1/devices",
                    body: [
                        "account": account, "publicKey": Base64URL.encode(fixture.phone.publicKey), "name": "phone",
                        "approver": marker, "origin": ServiceOrigin.testServer.serialized, "approval": approval,
                        "proof": proof,
                    ]
                ),
                try await api.call(
                    .post,
                    "/v1/devices",
                    body: [
                        "account": marker, "publicKey": Base64URL.encode(fixture.phone.publicKey), "name": "phone",
                        "approver": fixture.laptop.id, "origin": ServiceOrigin.testServer.serialized,
                        "approval": approval, "proof": proof,
                    ]
                ),
                try await api.call(.delete, "/v1/devices/\(fixture.laptop.id.uppercased())", token: token),
            ]
            for answer in answers {
                #expect(answer.status == .badRequest)
                #expect(answer.string("error") == "invalidRequest")
                #expect(!"\(answer.json)".contains("evil-id-marker"))
            }
            // An unknown approver is named as "the approving device", not by its id.
            let unknown = try await api.addDevice(fixture.phone, to: account, approvedBy: fixture.stranger)
            #expect(unknown.status == .forbidden)
            #expect(unknown.string("message")?.contains(fixture.stranger.id) == false)
        }
    }

    /// A device name is one line of 1 to 100 characters and at most 200 bytes, without control or
    /// formatting characters (bidi overrides included): else 400.
    @Test(arguments: [
        "", "a\nb", "tab\there", "bidi\u{202E}txet", "zero\u{200B}width", "line\u{2028}sep",
        String(repeating: "a", count: 101), String(repeating: "\u{1F600}", count: 51),
    ])
    func badDeviceNamesAre400(name: String) async throws {
        let fixture = try Fixture()
        try await withSyncServer(fixture.service) { api in
            let answer = try await api.call(
                .post,
                "/v1/accounts",
                body: [
                    "publicKey": Base64URL.encode(fixture.laptop.publicKey), "name": name,
                    "origin": ServiceOrigin.testServer.serialized,
                    "proof": Base64URL.encode(
                        fixture.laptop.sign(
                            DeviceSignatures.accountCreation(server: .testServer, publicKey: fixture.laptop.publicKey)
                        )
                    ),
                ]
            )
            #expect(answer.status == .badRequest)
            #expect(answer.string("error") == "invalidRequest")
        }
        // A name with accents and an emoji is fine.
        try await withSyncServer(fixture.service) { api in
            _ = try await api.createAccount(fixture.laptop, name: "Zoë's phone \u{1F600}")
        }
    }

    // MARK: A relaying server (threat S4)

    /// The origin of a server that relays the real one's challenges to a device whose key is
    /// enrolled on both.
    static let phisher = ServiceOrigin("https://sync.phish.example")!

    /// A challenge of the real server, answered by the device for the relaying server (it believes
    /// it talks to that one), is refused as signed for another server (and used up); rewriting the
    /// origin to the real one breaks the signature. The device still signs in for the real one.
    @Test func aChallengeRelayedFromAnotherServerIsRefused() async throws {
        let fixture = try Fixture()
        try await withSyncServer(fixture.service) { api in
            _ = try await api.createAccount(fixture.laptop)
            var relay = api
            relay.origin = Self.phisher
            let challenge = try await api.challenge(fixture.laptop).string("challenge")!
            let relayed = try await relay.token(fixture.laptop, challenge: challenge)
            #expect(relayed.status == .unauthorized)
            #expect(relayed.string("error") == "wrongServer")
            let message = relayed.string("message") ?? ""
            // Generic: an unauthenticated caller learns neither origin (the server logs them).
            #expect(message == "the device signed this for another server: check the server URL the device uses")
            #expect(!message.contains(ServiceOrigin.testServer.host) && !message.contains("127.0.0.1"))
            #expect(!message.contains(challenge) && !message.contains(Self.phisher.host))
            // Used up: the same answer with the real origin named is refused too.
            #expect(try await api.token(fixture.laptop, challenge: challenge).string("error") == "unauthorized")

            // The relay names the real server's origin, but the signature is for itself.
            let second = try await api.challenge(fixture.laptop).string("challenge")!
            let signature = fixture.laptop.sign(
                DeviceSignatures.tokenRequest(
                    server: Self.phisher,
                    device: fixture.laptop.id,
                    challenge: Base64URL.decode(second)!
                )
            )
            let rewritten = try await api.call(
                .post,
                "/v1/auth/token",
                body: [
                    "device": fixture.laptop.id, "challenge": second, "origin": ServiceOrigin.testServer.serialized,
                    "signature": Base64URL.encode(signature),
                ]
            )
            #expect(rewritten.status == .unauthorized)
            #expect(rewritten.string("error") == "unauthorized")
            _ = try await api.signIn(fixture.laptop)
        }
    }

    /// A `wrongServer` refusal carries both origins for the server's log (logged at notice by the
    /// HTTP server), and that line names no proof or key: only the answer is generic.
    @Test func aRefusalForAnotherServerKeepsItsOriginsForTheLog() async throws {
        let fixture = try Fixture()
        fixture.service.serving(at: .testServer)
        let proof = fixture.laptop.sign(
            DeviceSignatures.accountCreation(server: Self.phisher, publicKey: fixture.laptop.publicKey)
        )
        let error = try await #require(throws: SyncServerError.self) {
            try await fixture.service.createAccount(
                publicKey: fixture.laptop.publicKey,
                name: "laptop",
                signedFor: Self.phisher,
                proof: proof
            )
        }
        #expect(error.code == .wrongServer)
        #expect(!error.message.contains(ServiceOrigin.testServer.host) && !error.message.contains(Self.phisher.host))
        let details = try #require(error.details)
        #expect(details == .signedForAnotherServer(signedFor: Self.phisher, own: .testServer))
        let line = details.logMessage
        #expect(line.contains(Self.phisher.serialized) && line.contains(ServiceOrigin.testServer.serialized))
        #expect(!line.contains(Base64URL.encode(proof)) && !line.contains(Base64URL.encode(fixture.laptop.publicKey)))
    }

    /// An account creation signed for another server is refused (the key stays free to create an
    /// account here), and so is one whose origin was rewritten.
    @Test func anAccountCreationRelayedFromAnotherServerIsRefused() async throws {
        let fixture = try Fixture()
        try await withSyncServer(fixture.service) { api in
            let relayed = try await api.call(
                .post,
                "/v1/accounts",
                body: [
                    "publicKey": Base64URL.encode(fixture.laptop.publicKey), "name": "laptop",
                    "origin": Self.phisher.serialized,
                    "proof": Base64URL.encode(
                        fixture.laptop.sign(
                            DeviceSignatures.accountCreation(server: Self.phisher, publicKey: fixture.laptop.publicKey)
                        )
                    ),
                ]
            )
            #expect(relayed.status == .unauthorized)
            #expect(relayed.string("error") == "wrongServer")
            let rewritten = try await api.call(
                .post,
                "/v1/accounts",
                body: [
                    "publicKey": Base64URL.encode(fixture.laptop.publicKey), "name": "laptop",
                    "origin": ServiceOrigin.testServer.serialized,
                    "proof": Base64URL.encode(
                        fixture.laptop.sign(
                            DeviceSignatures.accountCreation(server: Self.phisher, publicKey: fixture.laptop.publicKey)
                        )
                    ),
                ]
            )
            #expect(rewritten.string("error") == "unauthorized")
            _ = try await api.createAccount(fixture.laptop)
        }
    }

    /// An enrolment signed (approval and proof) for another server is refused; an approval made
    /// for another server does not admit a key even when the new device's proof is for this one.
    @Test func anEnrolmentRelayedFromAnotherServerIsRefused() async throws {
        let fixture = try Fixture()
        try await withSyncServer(fixture.service) { api in
            let account = try await api.createAccount(fixture.laptop)
            var relay = api
            relay.origin = Self.phisher
            let relayed = try await relay.addDevice(fixture.phone, to: account, approvedBy: fixture.laptop)
            #expect(relayed.status == .unauthorized)
            #expect(relayed.string("error") == "wrongServer")
            let approvedElsewhere = try await api.call(
                .post,
                "/v1/devices",
                body: [
                    "account": account, "publicKey": Base64URL.encode(fixture.phone.publicKey), "name": "phone",
                    "approver": fixture.laptop.id, "origin": ServiceOrigin.testServer.serialized,
                    "approval": Base64URL.encode(
                        fixture.laptop.sign(
                            DeviceSignatures.approval(
                                server: Self.phisher,
                                account: account,
                                newPublicKey: fixture.phone.publicKey
                            )
                        )
                    ),
                    "proof": Base64URL.encode(
                        fixture.phone.sign(
                            DeviceSignatures.enrolment(
                                server: .testServer,
                                account: account,
                                newPublicKey: fixture.phone.publicKey
                            )
                        )
                    ),
                ]
            )
            #expect(approvedElsewhere.status == .forbidden)
            #expect(try await api.addDevice(fixture.phone, to: account, approvedBy: fixture.laptop).status == .created)
        }
    }

    /// Every message names the server by its normalised origin: the same server written
    /// differently signs the same bytes, another server (scheme, host or port) different ones.
    @Test func signedMessagesNameTheServersOrigin() throws {
        let key = [UInt8](repeating: 7, count: 32)
        func messages(_ url: String) throws -> [[UInt8]] {
            let server = try #require(ServiceOrigin.of(url: url))
            return [
                DeviceSignatures.accountCreation(server: server, publicKey: key),
                DeviceSignatures.tokenRequest(server: server, device: "d", challenge: key),
                DeviceSignatures.approval(server: server, account: "a", newPublicKey: key),
                DeviceSignatures.enrolment(server: server, account: "a", newPublicKey: key),
            ]
        }
        let base = try messages("https://sync.example")
        #expect(try messages("HTTPS://Sync.Example:443/keyhaven/") == base)
        for other in ["http://sync.example", "https://sync.example:8443", "https://sync.example.net"] {
            let theirs = try messages(other)
            for (mine, their) in zip(base, theirs) { #expect(mine != their) }
        }
        #expect(base.allSatisfy { $0.starts(with: Array("keyhaven-sync/v2/".utf8)) })
    }
}
