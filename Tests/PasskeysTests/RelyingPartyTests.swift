import Crypto
import Foundation
import KeyhavenTesting
import Passkeys
import Testing
import _KeyhavenSupport

/// The PasskeyRelyingParty kit against two authenticators: an independent one built on PyPI `fido2`
/// (attestation none and packed self, ES256 and Ed25519), and Keyhaven's own — plus every refusal a
/// relying party owes its users.
@Suite struct RelyingPartyTests {
    static let origin = "https://shiny.example"
    static let kit = PasskeyRelyingParty(rpID: "shiny.example", origins: [origin])
    static let challenge = Array(repeating: UInt8(7), count: 32)

    static func fido2(_ job: JSONValue) async throws -> JSONValue {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "fido2_authenticator.py"
        )
        let result = try await CommandRunner(executable: URL(fileURLWithPath: "/usr/bin/env"))
            .runDetached(["python3", script.path], stdin: String(decoding: job.encoded(), as: UTF8.self))
        try #require(result.status == 0, "\(result.stderr)")
        return try JSONValue.parse(Data(result.stdout.utf8))
    }

    @Test(
        .enabled(if: ExternalTools.python(importing: ["fido2"]), "needs PyPI fido2 (scripts/install-test-deps.sh)"),
        arguments: [(-7, "none"), (-7, "packed"), (-8, "none"), (-8, "packed")]
    )
    func anIndependentAuthenticatorRegistersAndSignsIn(_ algorithm: Int, _ fmt: String) async throws {
        let job: JSONValue = [
            "origin": .string(Self.origin), "rpId": "shiny.example", "algorithm": .number(Double(algorithm)),
            "fmt": .string(fmt), "userId": .string(Base64URL.encode(Array("user-1".utf8))),
            "challenge": .string(Base64URL.encode(Self.challenge)),
            "assertions": [
                ["challenge": .string(Base64URL.encode([1, 1])), "counter": 1],
                ["challenge": .string(Base64URL.encode([2, 2])), "counter": 5],
                ["challenge": .string(Base64URL.encode([3, 3])), "counter": 5],  // did not grow
            ],
        ]
        let made = try await Self.fido2(job)
        let registration = try Self.kit.verifyRegistration(
            try #require(made["registration"]),
            challenge: Self.challenge,
            requireUserVerification: true
        )
        #expect(registration.attestation == fmt)
        #expect(registration.publicKey.algorithm.rawValue == algorithm)
        #expect(registration.backupEligible && !registration.backedUp)
        let assertions = try #require(made["assertions"]?.array)
        let first = try Self.kit.verifyAuthentication(
            assertions[0],
            challenge: [1, 1],
            publicKey: registration.publicKey,
            storedSignCount: registration.signCount
        )
        #expect(first.newSignCount == 1 && first.userHandle == Array("user-1".utf8))
        #expect(first.credentialID == registration.credentialID)
        let second = try Self.kit.verifyAuthentication(
            assertions[1],
            challenge: [2, 2],
            publicKey: registration.publicKey,
            storedSignCount: first.newSignCount
        )
        #expect(second.newSignCount == 5)
        #expect(
            throws: PasskeyError(
                .counterRegressed,
                "the signature counter did not grow: the passkey may have been cloned"
            )
        ) {
            try Self.kit.verifyAuthentication(
                assertions[2],
                challenge: [3, 3],
                publicKey: registration.publicKey,
                storedSignCount: second.newSignCount
            )
        }
        // The assertion of one challenge does not pass for another.
        #expect(throws: PasskeyError.self) {
            try Self.kit.verifyAuthentication(
                assertions[1],
                challenge: [9],
                publicKey: registration.publicKey,
                storedSignCount: 1
            )
        }
    }

    @Test func keyhavensOwnAuthenticatorPassesTheKit() throws {
        let authenticator = Authenticator()
        let request = CreationRequest(
            rpID: "shiny.example",
            rpName: "Shiny",
            userID: [1, 2, 3],
            userName: "ada",
            userDisplayName: "Ada",
            challenge: Self.challenge,
            algorithms: [-8, -7]
        )
        var (credential, response) = try authenticator.register(
            request,
            origin: Self.origin,
            existing: [],
            userVerified: true
        )
        let registration = try Self.kit.verifyRegistration(
            response,
            challenge: Self.challenge,
            requireUserVerification: true
        )
        #expect(registration.attestation == "none" && registration.backedUp)
        #expect(registration.publicKey == (try credential.publicKey()))
        var count = registration.signCount
        for round in 1...3 {
            let challenge = [UInt8(round)]
            let (updated, assertion) = try authenticator.authenticate(
                AssertionRequest(rpID: "shiny.example", challenge: challenge),
                origin: Self.origin,
                credential: credential,
                userVerified: true
            )
            credential = updated
            let verified = try Self.kit.verifyAuthentication(
                assertion,
                challenge: challenge,
                publicKey: registration.publicKey,
                storedSignCount: count,
                requireUserVerification: true
            )
            count = verified.newSignCount
            #expect(verified.userHandle == [1, 2, 3])
        }
        #expect(count == 3)
    }

    @Test func registrationsFromElsewhereAreRefused() throws {
        let authenticator = Authenticator()
        func register(origin: String, rpID: String = "shiny.example", uv: Bool = true) throws -> JSONValue {
            try authenticator.register(
                CreationRequest(
                    rpID: rpID,
                    rpName: "",
                    userID: [1],
                    userName: "",
                    userDisplayName: "",
                    challenge: Self.challenge
                ),
                origin: origin,
                existing: [],
                userVerified: uv
            ).response
        }
        // Another origin of the same site that the service did not list.
        #expect(throws: PasskeyError.self) {
            try Self.kit.verifyRegistration(
                try register(origin: "https://evil.shiny.example"),
                challenge: Self.challenge
            )
        }
        // Another RP ID.
        let other = PasskeyRelyingParty(rpID: "other.example", origins: [Self.origin])
        #expect(throws: PasskeyError.self) {
            try other.verifyRegistration(try register(origin: Self.origin), challenge: Self.challenge)
        }
        // A stale challenge, and user verification the service asked for but did not get.
        #expect(throws: PasskeyError.self) {
            try Self.kit.verifyRegistration(try register(origin: Self.origin), challenge: [0])
        }
        #expect(throws: PasskeyError.self) {
            try Self.kit.verifyRegistration(
                try register(origin: Self.origin, uv: false),
                challenge: Self.challenge,
                requireUserVerification: true
            )
        }
        // An algorithm the service does not accept.
        let es256Only = PasskeyRelyingParty(rpID: "shiny.example", origins: [Self.origin], algorithms: [-7])
        let eddsa = try authenticator.register(
            CreationRequest(
                rpID: "shiny.example",
                rpName: "",
                userID: [1],
                userName: "",
                userDisplayName: "",
                challenge: Self.challenge,
                algorithms: [-8]
            ),
            origin: Self.origin,
            existing: [],
            userVerified: true
        ).response
        #expect(throws: PasskeyError.self) { try es256Only.verifyRegistration(eddsa, challenge: Self.challenge) }
        #expect(throws: PasskeyError.self) {
            try Self.kit.verifyRegistration(["type": "public-key"], challenge: Self.challenge)
        }
    }
}
