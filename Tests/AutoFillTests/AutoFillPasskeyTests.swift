import Foundation
import KeyhavenTesting
import Passkeys
import Testing
import Vault
import _KeyhavenSupport

@testable import AutoFill

/// The agent as a passkey authenticator through the protocol's requests (what the extension sends):
/// every answer checked by the `PasskeyRelyingParty` kit as a site would; py_webauthn checks the same
/// authenticator in PasskeysTests.
@Suite struct AutoFillPasskeyTests {
    typealias Harness = AutoFillAgentTests.Harness

    static let origin = "https://shop.example.com"
    let relyingParty = PasskeyRelyingParty(rpID: "example.com", origins: [origin])

    func creation(challenge: [UInt8], exclude: [[UInt8]] = [], verification: String = "preferred") -> JSONValue {
        [
            "rp": ["id": "example.com", "name": "Example"],
            "user": ["id": .string(Base64URL.encode(Array("user-7".utf8))), "name": "ada", "displayName": "Ada"],
            "challenge": .string(Base64URL.encode(challenge)),
            "pubKeyCredParams": [["type": "public-key", "alg": -7]],
            "excludeCredentials": .array(exclude.map { ["type": "public-key", "id": .string(Base64URL.encode($0))] }),
            "authenticatorSelection": ["residentKey": "required", "userVerification": .string(verification)],
            "attestation": "none",
        ]
    }

    func request(challenge: [UInt8], verification: String = "preferred", rpID: String = "example.com") -> JSONValue {
        [
            "rpId": .string(rpID), "challenge": .string(Base64URL.encode(challenge)),
            "userVerification": .string(verification),
        ]
    }

    func code(_ reply: JSONValue) -> String? { reply["error"]?["code"]?.string }

    @Test func registersOnlyWhenConfirmedThenSignsInAndTheSiteVerifiesBoth() async throws {
        let harness = try Harness()
        try await harness.unlock()
        let pairing = try await harness.pair()
        let challenge = Array("register-challenge".utf8)

        let choices = await harness.ask(
            [
                "id": 1, "type": "passkey.choices", "kind": "create", "options": creation(challenge: challenge),
                "origin": .string(Self.origin),
            ],
            pairing
        )
        #expect(choices["ok"]?["rpId"]?.string == "example.com")
        #expect(choices["ok"]?["user"]?.string == "ada")
        #expect(choices["ok"]?["excluded"]?.bool == false)

        let unconfirmed = await harness.ask(
            [
                "id": 2, "type": "passkey.register", "options": creation(challenge: challenge),
                "origin": .string(Self.origin),
            ],
            pairing
        )
        #expect(code(unconfirmed) == "userCanceled")
        #expect(try harness.testVault.vault.passkeys().isEmpty)

        let registered = await harness.ask(
            [
                "id": 3, "type": "passkey.register", "options": creation(challenge: challenge),
                "origin": .string(Self.origin), "confirmed": true, "userPresent": true,
            ],
            pairing
        )
        let response = try #require(registered["ok"]?["responseJson"], "\(registered)")
        let registration = try relyingParty.verifyRegistration(response, challenge: challenge)
        #expect(registration.userVerified)  // just unlocked
        let stored = try harness.testVault.vault.passkeys(rpID: "example.com")
        #expect(stored.map(\.credentialID) == [registration.credentialID])
        #expect(stored.first?.userHandle == Array("user-7".utf8))

        // The site lists the passkey in excludeCredentials: InvalidStateError in the page.
        let again = await harness.ask(
            [
                "id": 4, "type": "passkey.register",
                "options": creation(challenge: challenge, exclude: [registration.credentialID]),
                "origin": .string(Self.origin), "confirmed": true, "userPresent": true,
            ],
            pairing
        )
        #expect(code(again) == "matchedExcludedCredential")
        #expect(try harness.testVault.vault.passkeys().count == 1)

        let signIn = Array("sign-in-challenge".utf8)
        let offered = await harness.ask(
            [
                "id": 5, "type": "passkey.choices", "kind": "get", "options": request(challenge: signIn),
                "origin": .string(Self.origin),
            ],
            pairing
        )
        let offeredIDs = offered["ok"]?["passkeys"]?.array?.compactMap { $0["credentialId"]?.string } ?? []
        #expect(offeredIDs == [Base64URL.encode(registration.credentialID)])

        for round in 1...2 {
            let asserted = await harness.ask(
                [
                    "id": 6, "type": "passkey.assert", "options": request(challenge: signIn),
                    "origin": .string(Self.origin), "userPresent": true, "credentialId": .string(offeredIDs[0]),
                ],
                pairing
            )
            let assertion = try #require(asserted["ok"]?["responseJson"], "\(asserted)")
            let verified = try relyingParty.verifyAuthentication(
                assertion,
                challenge: signIn,
                publicKey: registration.publicKey,
                storedSignCount: UInt32(round - 1)
            )
            #expect(verified.newSignCount == UInt32(round))
            #expect(verified.userHandle == Array("user-7".utf8))
        }
        #expect(try harness.testVault.vault.passkeys().first?.signCount == 2)
        #expect(try harness.testVault.vault.passkeys().first?.lastUsed != nil)
    }

    @Test func theRelyingPartyMustBeTheCallersSiteOverHTTPS() async throws {
        let harness = try Harness()
        try await harness.unlock()
        let pairing = try await harness.pair()
        for (origin, rpID) in [
            ("https://evil.test", "example.com"),  // another site
            ("http://shop.example.com", "example.com"),  // not https
            ("https://shop.example.com", "com"),  // a public suffix
        ] {
            let reply = await harness.ask(
                [
                    "id": 1, "type": "passkey.choices", "kind": "get", "options": request(challenge: [1], rpID: rpID),
                    "origin": .string(origin),
                ],
                pairing
            )
            #expect(code(reply) == "originNotAllowed", "\(origin) \(rpID)")
        }
        let localhost = await harness.ask(
            [
                "id": 2, "type": "passkey.choices", "kind": "get",
                "options": request(challenge: [1], rpID: "localhost"),
                "origin": "http://localhost:8080",
            ],
            pairing
        )
        #expect(localhost["ok"]?["rpId"]?.string == "localhost")
        // Locked: nothing is answered.
        await harness.agent.lock()
        let locked = await harness.ask(
            [
                "id": 3, "type": "passkey.choices", "kind": "get", "options": request(challenge: [1]),
                "origin": .string(Self.origin),
            ],
            pairing
        )
        #expect(code(locked) == "locked")
    }

    @Test func anOldUnlockNeedsTheMasterPasswordWhenTheSiteRequiresVerification() async throws {
        let harness = try Harness()
        try await harness.unlock()
        let pairing = try await harness.pair()
        let registered = await harness.ask(
            [
                "id": 1, "type": "passkey.register", "options": creation(challenge: [9]),
                "origin": .string(Self.origin),
                "confirmed": true, "userPresent": true,
            ],
            pairing
        )
        let id = try #require(registered["ok"]?["responseJson"]?["id"]?.string)
        harness.clock.advance(by: 6 * 60)
        _ = try await harness.agent.vault()  // not idle

        let choices = await harness.ask(
            [
                "id": 2, "type": "passkey.choices", "kind": "get",
                "options": request(challenge: [2], verification: "required"),
                "origin": .string(Self.origin),
            ],
            pairing
        )
        #expect(choices["ok"]?["verificationRequired"]?.bool == true)
        func assert(_ password: String?) async -> JSONValue {
            var message: [String: JSONValue] = [
                "id": 3, "type": "passkey.assert", "options": request(challenge: [2], verification: "required"),
                "origin": .string(Self.origin), "userPresent": true, "credentialId": .string(id),
            ]
            if let password { message["masterPassword"] = .string(password) }
            return await harness.ask(.object(message), pairing)
        }
        #expect(code(await assert(nil)) == "userVerificationRequired")
        #expect(code(await assert("not it")) == "wrongPassword")
        let verified = await assert(harness.testVault.masterPassword)
        #expect(verified["ok"]?["responseJson"] != nil)
        // Preferred (not required) verification signs without it, reporting UV false.
        harness.clock.advance(by: 6 * 60)
        _ = try await harness.agent.vault()
        let preferred = await harness.ask(
            [
                "id": 4, "type": "passkey.assert", "options": request(challenge: [3]), "origin": .string(Self.origin),
                "userPresent": true,
                "credentialId": .string(id),
            ],
            pairing
        )
        let response = try #require(preferred["ok"]?["responseJson"])
        let data = try AuthenticatorData(
            try #require(response["response"]?["authenticatorData"]?.string.flatMap { Base64URL.decode($0) })
        )
        #expect(!data.flags.contains(.userVerified))
        #expect(data.flags.contains(.userPresent))
    }

    @Test func signalsHideRestoreAndRenameButNeverDelete() async throws {
        let harness = try Harness()
        try await harness.unlock()
        let pairing = try await harness.pair()
        let registered = await harness.ask(
            [
                "id": 1, "type": "passkey.register", "options": creation(challenge: [9]),
                "origin": .string(Self.origin),
                "confirmed": true, "userPresent": true,
            ],
            pairing
        )
        let id = try #require(registered["ok"]?["responseJson"]?["id"]?.string)
        let user = JSONValue.string(Base64URL.encode(Array("user-7".utf8)))
        func offered() async -> [String] {
            await harness.ask(
                [
                    "id": 2, "type": "passkey.choices", "kind": "get", "options": request(challenge: [1]),
                    "origin": .string(Self.origin),
                ],
                pairing
            )["ok"]?["passkeys"]?.array?.compactMap { $0["user"]?.string } ?? []
        }
        func signal(_ fields: [String: JSONValue], origin: String = Self.origin) async -> JSONValue {
            var message: [String: JSONValue] = [
                "id": 3, "type": "passkey.signal", "rpId": "example.com", "origin": .string(origin),
            ]
            message.merge(fields) { $1 }
            return await harness.ask(.object(message), pairing)
        }
        #expect(await offered() == ["ada"])

        #expect(
            await signal(["kind": "unknownCredential", "credentialId": .string(id)])["ok"]?["changed"]?.number == 1
        )
        #expect(await offered() == [])
        #expect(try harness.testVault.vault.passkeys().first?.hidden == true)  // kept
        let hiddenAssert = await harness.ask(
            [
                "id": 4, "type": "passkey.assert", "options": request(challenge: [3]), "origin": .string(Self.origin),
                "userPresent": true,
                "credentialId": .string(id),
            ],
            pairing
        )
        #expect(code(hiddenAssert) == "credentialIdentityNotFound")

        #expect(
            await signal(["kind": "allAcceptedCredentials", "userId": user, "allAcceptedCredentialIds": [.string(id)]])[
                "ok"
            ]?["changed"]?.number == 1
        )
        #expect(await offered() == ["ada"])
        #expect(
            await signal(["kind": "allAcceptedCredentials", "userId": user, "allAcceptedCredentialIds": []])["ok"]?[
                "changed"
            ]?.number == 1
        )
        #expect(await offered() == [])
        _ = await signal(["kind": "allAcceptedCredentials", "userId": user, "allAcceptedCredentialIds": [.string(id)]])

        #expect(
            await signal([
                "kind": "currentUserDetails", "userId": user, "name": "ada@example.com", "displayName": "Ada L.",
            ])[
                "ok"
            ]?["changed"]?.number == 1
        )
        #expect(await offered() == ["ada@example.com"])
        #expect(try harness.testVault.vault.passkeys().first?.userDisplayName == "Ada L.")

        // Another site cannot signal about this one's passkeys.
        #expect(
            code(await signal(["kind": "unknownCredential", "credentialId": .string(id)], origin: "https://evil.test"))
                == "originNotAllowed"
        )
        #expect(await offered() == ["ada@example.com"])
    }

    /// Review 2026-11-27 #2 and #11: an assertion is made only for a choice the person made in
    /// Keyhaven's UI (`userPresent`); the silent conditional create is the one credential without
    /// user presence, and then without verification too (nobody was asked), which a relying party
    /// that requires presence refuses.
    @Test func presenceComesOnlyFromThePersonsChoice() async throws {
        let harness = try Harness()
        try await harness.unlock()
        let pairing = try await harness.pair()
        let challenge = Array("silent-create".utf8)
        let silent = await harness.ask(
            [
                "id": 1, "type": "passkey.register", "options": creation(challenge: challenge),
                "origin": .string(Self.origin), "confirmed": true,
            ],
            pairing
        )
        let response = try #require(silent["ok"]?["responseJson"], "\(silent)")
        let authenticatorData = try #require(
            response["response"]?["authenticatorData"]?.string.flatMap { Base64URL.decode($0) }
        )
        let flags = AuthenticatorData.Flags(rawValue: authenticatorData[32])
        #expect(!flags.contains(.userPresent))
        #expect(!flags.contains(.userVerified))  // unlocked just now, but nobody was asked
        #expect(flags.contains(.attestedCredentialData))
        #expect(throws: PasskeyError.self) { try relyingParty.verifyRegistration(response, challenge: challenge) }
        let id = try #require(response["id"]?.string)

        // No gesture, no assertion: the agent refuses instead of signing without presence.
        let unasked = await harness.ask(
            [
                "id": 2, "type": "passkey.assert", "options": request(challenge: [7]), "origin": .string(Self.origin),
                "credentialId": .string(id),
            ],
            pairing
        )
        #expect(code(unasked) == "userCanceled")
        #expect(try harness.testVault.vault.passkeys(rpID: "example.com").first?.signCount == 0)

        let chosen = await harness.ask(
            [
                "id": 3, "type": "passkey.assert", "options": request(challenge: [7]), "origin": .string(Self.origin),
                "credentialId": .string(id), "userPresent": true,
            ],
            pairing
        )
        let assertion = try #require(chosen["ok"]?["responseJson"], "\(chosen)")
        let signed = try #require(assertion["response"]?["authenticatorData"]?.string.flatMap { Base64URL.decode($0) })
        #expect(AuthenticatorData.Flags(rawValue: signed[32]).contains([.userPresent, .userVerified]))
    }

    /// Review 2026-11-27 #11: a caller in a frame cross-origin with its top page is named in the
    /// client data (`crossOrigin: true`, `topOrigin`), so the site can tell it was framed; a
    /// cross-origin request without its top origin is malformed.
    @Test func aCrossOriginFrameIsNamedInTheClientData() async throws {
        let harness = try Harness()
        try await harness.unlock()
        let pairing = try await harness.pair()
        let framed = await harness.ask(
            [
                "id": 1, "type": "passkey.register", "options": creation(challenge: [1, 2, 3]),
                "origin": .string(Self.origin), "confirmed": true, "userPresent": true,
                "crossOrigin": true, "topOrigin": "https://news.example.org",
            ],
            pairing
        )
        let response = try #require(framed["ok"]?["responseJson"], "\(framed)")
        let clientDataBytes = try #require(
            response["response"]?["clientDataJSON"]?.string.flatMap { Base64URL.decode($0) }
        )
        let clientData = String(decoding: clientDataBytes, as: UTF8.self)
        #expect(clientData.hasSuffix(#","crossOrigin":true,"topOrigin":"https://news.example.org"}"#), "\(clientData)")
        // This site's kit accepts no framed registration.
        #expect(throws: PasskeyError.self) { try relyingParty.verifyRegistration(response, challenge: [1, 2, 3]) }

        let malformed = await harness.ask(
            [
                "id": 2, "type": "passkey.register", "options": creation(challenge: [4]),
                "origin": .string(Self.origin), "confirmed": true, "userPresent": true, "crossOrigin": true,
            ],
            pairing
        )
        #expect(code(malformed) == "badRequest")

        let id = try #require(response["id"]?.string)
        let assertion = await harness.ask(
            [
                "id": 3, "type": "passkey.assert", "options": request(challenge: [5]), "origin": .string(Self.origin),
                "credentialId": .string(id), "userPresent": true, "crossOrigin": true,
                "topOrigin": "https://news.example.org",
            ],
            pairing
        )
        let signedClientData = try #require(
            assertion["ok"]?["responseJson"]?["response"]?["clientDataJSON"]?.string.flatMap { Base64URL.decode($0) }
        )
        #expect(String(decoding: signedClientData, as: UTF8.self).contains(#""crossOrigin":true,"topOrigin":"#))
    }

}
