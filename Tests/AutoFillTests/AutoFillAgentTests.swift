import Crypto
import Foundation
import KeyhavenApp
import KeyhavenTesting
import Testing
import Vault
import _KeyhavenSupport

@testable import AutoFill

/// The agent's provider behaviour without a socket: unlock and idle lock, pairing, sessions, the
/// fill policy, deadlines on an injected clock, saves with their incremental events, generation.
@Suite struct AutoFillAgentTests {
    final class Events: @unchecked Sendable {
        private let lock = NSLock()
        private var received: [JSONValue] = []
        /// Kept as it goes on the wire (``BrowserEvent/encoded()``).
        func append(_ event: BrowserEvent) {
            let wire = (try? JSONValue.parse(event.encoded())) ?? .null
            lock.withLock { received.append(wire) }
        }
        var all: [JSONValue] { lock.withLock { received } }
    }

    struct Harness {
        let testVault: TestVault
        let clock: TestClock
        let agent: AutoFillAgent

        init(idleLock: TimeInterval = 900, randomness: AutoFillRandomness = .system) throws {
            clock = TestClock()
            testVault = try TestVault(now: clock.now)
            agent = AutoFillAgent(
                vaultURL: testVault.url,
                idleLock: idleLock,
                allowInsecureKDF: true,
                now: clock.now,
                randomness: randomness
            )
        }

        @discardableResult
        func add(
            _ service: String,
            user: String,
            password: String = "s3cret-Pw!",
            totp: String? = nil
        ) throws
            -> CredentialID
        {
            try testVault.vault.add(
                CredentialContent(services: [ServiceIdentifier(service)], user: user, password: password, totp: totp)
            )
        }

        func unlock() async throws { try await agent.unlock(masterPassword: testVault.masterPassword) }

        /// Pairs like the extension does and returns the pairing id.
        func pair() async throws -> String { try await HarnessView(agent: agent).pair() }

        func ask(_ request: JSONValue, _ pairing: String) async -> JSONValue {
            await agent.handle(request, pairingId: pairing)
        }
    }

    func errorCode(_ reply: JSONValue) -> String? { reply["error"]?["code"]?.string }

    @Test func aWrongMasterPasswordLeavesItLockedAndIdleTimeLocksIt() async throws {
        let harness = try Harness(idleLock: 60)
        await #expect(throws: AutoFillError(.wrongPassword, "The master password is wrong.")) {
            try await harness.agent.unlock(masterPassword: "not it")
        }
        #expect(await harness.agent.isUnlocked == false)
        try await harness.unlock()
        let session = harness.agent.session
        harness.clock.advance(by: 59)
        await session.tick()
        #expect(await harness.agent.isUnlocked)
        _ = try await harness.agent.vault()  // activity
        harness.clock.advance(by: 59)
        await session.tick()
        #expect(await harness.agent.isUnlocked)
        harness.clock.advance(by: 1)
        await session.tick()
        #expect(await harness.agent.isUnlocked == false)
    }

    @Test func theIdleLockSetInTheAppIsKeptInTheVaultForTheNextAgent() async throws {
        let harness = try Harness(idleLock: 900)
        let session = harness.agent.session
        await #expect(throws: SessionError.self) { try await session.setIdleLock(120) }  // locked
        try await harness.unlock()
        try await session.setIdleLock(120)
        #expect(await session.idleLockSeconds == 120)
        harness.clock.advance(by: 120)
        await session.tick()
        #expect(await harness.agent.isUnlocked == false)
        // Another agent on the same vault (started with its own default) takes it at unlock.
        let next = AutoFillAgent(
            vaultURL: harness.testVault.url,
            idleLock: 900,
            allowInsecureKDF: true,
            now: harness.clock.now
        )
        #expect(await next.session.idleLockSeconds == 900)
        try await next.unlock(masterPassword: harness.testVault.masterPassword)
        #expect(await next.session.idleLockSeconds == 120)
        try await next.session.setIdleLock(.infinity)
        harness.clock.advance(by: 1_000_000)
        await next.session.tick()
        #expect(await next.isUnlocked)
        #expect(await next.status().idleLockSeconds == 0)
    }

    @Test func pairingsAreSealedInTheVaultAndSurviveARestartAndRevokingEndsThem() async throws {
        let harness = try Harness()
        try await harness.unlock()
        let pairing = try await harness.pair()
        let again = AutoFillAgent(vaultURL: harness.testVault.url, allowInsecureKDF: true)
        await #expect(throws: AutoFillError.self) {
            try await again.openSession(pairingId: pairing, clientNonce: Data(count: 16))
        }
        try await again.unlock(masterPassword: harness.testVault.masterPassword)
        _ = try await again.openSession(pairingId: pairing, clientNonce: Data(count: 16))
        try await again.revokePairing(pairing)
        #expect(await harness.errorCodeAfterRevoke(again, pairing) == "notPaired")
        #expect(try harness.testVault.reopen().agentRecords(kind: "browser-pairing").isEmpty)
    }

    @Test func theFramePolicyDecidesWhatFillsSilently() async throws {
        let harness = try Harness()
        let id = try harness.add("https://example.com", user: "ada", password: "example-Pw-1")
        let local = try harness.add("http://127.0.0.1:8080", user: "dev")
        let plain = try harness.add("http://plain.example.net", user: "old")
        try await harness.unlock()
        let pairing = try await harness.pair()
        func provide(_ record: CredentialID, _ url: String, _ top: String) async -> JSONValue {
            await harness.ask(
                [
                    "id": 1, "type": "credential.provideWithoutUserInteraction",
                    "recordIdentifier": .string(record.rawValue),
                    "url": .string(url), "topURL": .string(top),
                ],
                pairing
            )
        }
        #expect(
            await provide(id, "https://example.com/login", "https://example.com/")["ok"]?["credential"]?["password"]?
                .string
                == "example-Pw-1"
        )
        #expect(await provide(id, "https://example.com/login", "https://www.example.com/")["ok"] != nil)  // same site
        #expect(
            errorCode(await provide(id, "https://example.com/login", "https://evil.test/")) == "userInteractionRequired"
        )
        #expect(
            errorCode(await provide(id, "https://evil.test/", "https://evil.test/")) == "credentialIdentityNotFound"
        )
        #expect(await provide(local, "http://127.0.0.1:8080/", "http://127.0.0.1:8080/")["ok"] != nil)  // loopback
        #expect(
            errorCode(await provide(plain, "http://plain.example.net/", "http://plain.example.net/"))
                == "userInteractionRequired"
        )
        // What the person confirmed in the extension's own prompt fills; never another site's.
        let confirmed = await harness.ask(
            [
                "id": 2, "type": "credential.prepareInterface", "recordIdentifier": .string(id.rawValue),
                "url": "https://example.com/login", "topURL": "https://evil.test/", "confirmed": true,
            ],
            pairing
        )
        #expect(confirmed["ok"]?["credential"]?["user"]?.string == "ada")
        let elsewhere = await harness.ask(
            [
                "id": 3, "type": "credential.prepareInterface", "recordIdentifier": .string(id.rawValue),
                "url": "https://evil.test/", "topURL": "https://evil.test/", "confirmed": true,
            ],
            pairing
        )
        #expect(errorCode(elsewhere) == "credentialIdentityNotFound")
        // Unless the person picked it from the whole list ("Other passwords…") and confirmed it.
        let picked = await harness.ask(
            [
                "id": 4, "type": "credential.prepareInterface", "recordIdentifier": .string(id.rawValue),
                "url": "https://evil.test/", "topURL": "https://evil.test/", "confirmed": true,
                "fromCredentialList": true,
            ],
            pairing
        )
        #expect(picked["ok"]?["credential"]?["user"]?.string == "ada")
        let unconfirmed = await harness.ask(
            [
                "id": 5, "type": "credential.provideWithoutUserInteraction", "recordIdentifier": .string(id.rawValue),
                "url": "https://evil.test/", "topURL": "https://evil.test/", "fromCredentialList": true,
            ],
            pairing
        )
        #expect(errorCode(unconfirmed) == "credentialIdentityNotFound")
        let list = await harness.ask(
            ["id": 6, "type": "credentialList", "url": "https://example.com/", "topURL": "https://example.com/"],
            pairing
        )
        #expect(list["ok"]?["identities"]?.array?.first?["user"]?.string == "ada")
        #expect(list["ok"]?["identities"]?.array?.count == 3)
        // Every account name of the vault goes to no plain-http page and no frame of another site
        // (review 2026-11-27 #1: "credentialList privacy").
        for (number, url, top) in [
            (7, "http://example.com/", "http://example.com/"),
            (8, "https://example.com/", "https://ads.example.net/"),
            (9, "https://example.com/", ""),
        ] {
            let refused = await harness.ask(
                ["id": .number(Double(number)), "type": "credentialList", "url": .string(url), "topURL": .string(top)],
                pairing
            )
            #expect(errorCode(refused) == "userInteractionRequired", "\(url) in \(top)")
            #expect(refused["ok"] == nil)
        }
    }

    @Test func aCredentialReadAfterTheDeadlineNeedsInteraction() async throws {
        let clock = TestClock()
        let testVault = try TestVault(now: clock.now)
        let id = try testVault.vault.add(
            CredentialContent(services: [ServiceIdentifier("example.com")], user: "ada", password: "p")
        )
        // A clock that moves 1.5 s each time it is read, like a slow disk would.
        let slow: @Sendable () -> Date = {
            clock.advance(by: 1.5)
            return clock.now()
        }
        let agent = AutoFillAgent(vaultURL: testVault.url, allowInsecureKDF: true, now: slow)
        try await agent.unlock(masterPassword: testVault.masterPassword)
        let harness = HarnessView(agent: agent)
        let pairing = try await harness.pair()
        func provide(_ deadline: Int) async -> JSONValue {
            await agent.handle(
                [
                    "id": 1, "type": "credential.provideWithoutUserInteraction",
                    "recordIdentifier": .string(id.rawValue),
                    "url": "https://example.com/", "topURL": "https://example.com/",
                    "deadlineMs": .number(Double(deadline)),
                ],
                pairingId: pairing
            )
        }
        #expect(errorCode(await provide(1000)) == "userInteractionRequired")
        #expect(await provide(60_000)["ok"] != nil)
    }

    @Test func savesAddUpdateOrLeaveAndTellEveryOpenSession() async throws {
        let harness = try Harness()
        try await harness.unlock()
        let pairing = try await harness.pair()
        let events = Events()
        _ = await harness.agent.addListener(pairingId: pairing) { events.append($0) }
        func save(_ user: String, _ password: String) async -> JSONValue {
            await harness.ask(
                [
                    "id": 1, "type": "credential.save", "url": "https://shop.example/signup", "user": .string(user),
                    "password": .string(password),
                ],
                pairing
            )
        }
        let saved = await save("ada", "first-Pw-1")
        #expect(saved["ok"]?["action"]?.string == "saved")
        #expect(await save("ada", "first-Pw-1")["ok"]?["action"]?.string == "unchanged")
        #expect(await save("ada", "second-Pw-2")["ok"]?["action"]?.string == "updated")
        let id = try #require(saved["ok"]?["recordIdentifier"]?.string.flatMap(CredentialID.init(rawValue:)))
        let vault = try await harness.agent.vault()
        #expect(try vault.credential(id).password == "second-Pw-2")
        #expect(try vault.history(id).map(\.password) == ["first-Pw-1"])
        let changes = events.all.filter { $0["event"]?.string == "identities.changed" }
        #expect(changes.count == 2)
        #expect(changes.allSatisfy { $0["v"] == 1 && $0["removed"] == [] && $0["replaced"] == nil })
        #expect(changes.first?["saved"]?.array?.first?["user"]?.string == "ada")
        #expect(changes.first?["saved"]?.array?.first?["match"] == nil)
        #expect(changes.map { $0["revision"]?.integer ?? 0 } == changes.map { $0["revision"]?.integer ?? 0 }.sorted())
        let query = await harness.ask(
            ["id": 2, "type": "identities.query", "url": "https://shop.example/login"],
            pairing
        )
        #expect(query["ok"]?["identities"]?.array?.compactMap { $0["user"]?.string } == ["ada"])
        await harness.agent.lock()
        #expect(events.all.contains { $0["event"]?.string == "state" && $0["state"]?.string == "locked" })
        #expect(
            errorCode(
                await harness.ask(["id": 3, "type": "identities.query", "url": "https://shop.example/"], pairing)
            )
                == "locked"
        )
    }

    @Test func credentialsAddedByAnotherProcessAreOfferedAtTheNextQuery() async throws {
        let harness = try Harness()
        try await harness.unlock()
        let pairing = try await harness.pair()
        let events = Events()
        _ = await harness.agent.addListener(pairingId: pairing) { events.append($0) }
        func users() async -> [String] {
            await harness.ask(
                ["id": 1, "type": "identities.query", "url": "https://example.com/", "kinds": ["password"]],
                pairing
            )[
                "ok"
            ]?["identities"]?.array?.compactMap { $0["user"]?.string } ?? []
        }
        #expect(await users() == [])
        // `keyhaven add` in another process: another connection to the same file.
        let other = try harness.testVault.reopen()
        _ = try other.add(CredentialContent(services: [ServiceIdentifier("example.com")], user: "bob", password: "b"))
        #expect(await users() == ["bob"])
        #expect(events.all.contains { $0["event"]?.string == "identities.changed" && $0["replaced"]?.bool == true })
    }

    @Test func generationFollowsTheFieldThenTheSitesQuirkThenApplesFormat() async throws {
        let harness = try Harness()
        try await harness.unlock()
        let pairing = try await harness.pair()
        let field = await harness.ask(
            [
                "id": 1, "type": "password.generate", "url": "https://shop.example/",
                "passwordRules": "minlength: 8; maxlength: 8; required: digit;",
            ],
            pairing
        )["ok"]
        #expect(field?["source"]?.string == "field")
        let password = try #require(field?["password"]?.string)
        #expect(password.count == 8 && password.allSatisfy(\.isNumber))
        let quirk = await harness.ask(
            ["id": 2, "type": "password.generate", "url": "https://www.apple.com/account"],
            pairing
        )["ok"]
        #expect(quirk?["source"]?.string == "quirk")
        let plain = await harness.ask(["id": 3, "type": "password.generate", "url": "https://shop.example/"], pairing)[
            "ok"
        ]
        #expect(plain?["source"]?.string == "default")
        #expect(plain?["password"]?.string?.count == 20)
    }

    @Test func oneTimeCodesComeWithTheirExpiry() async throws {
        let harness = try Harness()
        let id = try harness.add("example.com", user: "ada", totp: "JBSWY3DPEHPK3PXP")
        try await harness.unlock()
        let pairing = try await harness.pair()
        let reply = await harness.ask(
            [
                "id": 1, "type": "oneTimeCode.provide", "recordIdentifier": .string(id.rawValue),
                "url": "https://example.com/",
                "topURL": "https://example.com/",
            ],
            pairing
        )["ok"]
        #expect(reply?["code"]?.string?.count == 6)
        #expect(reply?["validUntil"]?.string != nil)
    }
}

/// Pairs with an agent the way the extension does (background.js): `pair.begin` with a fresh
/// nonce, the code the agent shows, CPace as the responder, `pair.finish` with its tag; and checks
/// the agent's tag as the extension does.
struct HarnessView {
    let agent: AutoFillAgent
    var browser = "chromium"
    var caller = "test"

    static func random(_ count: Int) -> Data { Data((0..<count).map { _ in UInt8.random(in: .min ... .max) }) }

    func pair() async throws -> String { try await pairing().id }

    /// One try with `code` (the one the agent shows when nil), on a new request or another try of
    /// `request`: the pairing id and the key the extension keeps.
    func pairing(code: String? = nil, request: String? = nil) async throws -> (id: String, key: SymmetricKey) {
        let clientNonce = Self.random(16)
        let offer = try await agent.beginPairing(
            clientNonce: clientNonce,
            request: request,
            caller: caller,
            browser: browser
        )
        let shown = await agent.waitForPairingCode(timeout: 1)
        let typed = try code ?? #require(shown).code
        let client = try PairingExchange(
            role: .extensionSide,
            context: PairingContext(
                code: typed,
                request: offer.request,
                browser: browser,
                caller: caller,
                clientNonce: clientNonce,
                agentNonce: offer.agentNonce
            ),
            scalar: Self.random(32)
        )
        let keys = try client.keys(otherShare: offer.agentShare)
        let (id, agentConfirm) = try await agent.finishPairing(
            request: offer.request,
            clientShare: client.share,
            clientConfirm: keys.clientConfirm
        )
        #expect(agentConfirm == keys.agentConfirm, "the agent's tag shows it holds the same key")
        return (id, keys.pairingKey)
    }
}

extension AutoFillAgentTests.Harness {
    func errorCodeAfterRevoke(_ agent: AutoFillAgent, _ pairing: String) async -> String? {
        await agent.handle(["id": 1, "type": "state"], pairingId: pairing)["error"]?["code"]?.string
    }
}
