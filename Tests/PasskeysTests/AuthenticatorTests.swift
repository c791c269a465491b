import Crypto
import Foundation
import KeyhavenTesting
import Passkeys
import Testing
import _KeyhavenSupport

/// Keyhaven's authenticator: RP ID rules, exclusion, user verification, and — independently — PyPI
/// `webauthn` (py_webauthn) verifying every registration and assertion it makes (issue 16).
@Suite struct AuthenticatorTests {
    static let origin = "https://login.shiny.example"

    static func creation(
        _ algorithms: [Int] = [-7],
        exclude: [[UInt8]] = [],
        uv: String = "required"
    )
        -> CreationRequest
    {
        CreationRequest(
            rpID: "shiny.example",
            rpName: "Shiny",
            userID: Array("user-42".utf8),
            userName: "ada@shiny.example",
            userDisplayName: "Ada",
            challenge: Array(0..<32),
            algorithms: algorithms,
            excludeCredentials: exclude,
            userVerification: uv
        )
    }

    @Test func theRPIDMustBeThePagesHostOrARegistrableParent() throws {
        #expect(try Authenticator.rpID(nil, origin: "https://login.shiny.example") == "login.shiny.example")
        #expect(try Authenticator.rpID("shiny.example", origin: "https://login.shiny.example") == "shiny.example")
        #expect(try Authenticator.rpID(nil, origin: "http://localhost:8080") == "localhost")
        for (rpID, origin) in [
            ("shiny.example", "http://shiny.example"),  // not https
            ("other.example", "https://shiny.example"),  // another site
            ("example", "https://shiny.example"),  // a public suffix
            ("github.io", "https://alice.github.io"),  // a private public suffix
            ("hiny.example", "https://shiny.example"),  // a suffix, not a parent
        ] {
            #expect(throws: PasskeyError.self, "\(rpID) from \(origin)") {
                try Authenticator.rpID(rpID, origin: origin)
            }
        }
    }

    @Test func excludedCredentialsAndMissingVerificationAreRefused() throws {
        let authenticator = Authenticator()
        let (first, _) = try authenticator.register(
            Self.creation(),
            origin: Self.origin,
            existing: [],
            userVerified: true
        )
        #expect(throws: PasskeyError.self) {
            try authenticator.register(
                Self.creation(exclude: [first.credentialID]),
                origin: Self.origin,
                existing: [first],
                userVerified: true
            )
        }
        #expect(throws: PasskeyError.self) {
            try authenticator.register(Self.creation(), origin: Self.origin, existing: [], userVerified: false)
        }
        #expect(throws: PasskeyError.self) {
            try authenticator.register(Self.creation([-257]), origin: Self.origin, existing: [], userVerified: true)
        }
        let other = AssertionRequest(rpID: "shiny.example", challenge: [1], allowCredentials: [[9, 9]])
        #expect(throws: PasskeyError.self) {
            try authenticator.authenticate(other, origin: Self.origin, credential: first, userVerified: true)
        }
    }

    @Test func creationOptionsAreReadFromWebAuthnsJSON() throws {
        let json = try JSONValue.parse(
            Data(
                #"""
                {"rp": {"id": "shiny.example", "name": "Shiny"}, "user": {"id": "dXNlci00Mg", "name": "ada", "displayName": "Ada"},
                 "challenge": "AAECAw", "pubKeyCredParams": [{"type": "public-key", "alg": -8}, {"type": "public-key", "alg": -7}],
                 "excludeCredentials": [{"type": "public-key", "id": "AQID"}], "authenticatorSelection": {"userVerification": "required"}}
                """#.utf8
            )
        )
        let request = try CreationRequest(json: json)
        #expect(request.rpID == "shiny.example" && request.userID == Array("user-42".utf8))
        #expect(request.challenge == [0, 1, 2, 3] && request.algorithms == [-8, -7])
        #expect(request.excludeCredentials == [[1, 2, 3]] && request.userVerification == "required")
        #expect(throws: PasskeyError.self) { try CreationRequest(json: ["user": ["id": "AA"]]) }
    }

    @Test(
        .enabled(
            if: ExternalTools.python(importing: ["webauthn"]),
            "needs PyPI webauthn (scripts/install-test-deps.sh)"
        ),
        arguments: [-7, -8]
    )
    func pyWebAuthnVerifiesEveryRegistrationAndAssertion(_ algorithm: Int) async throws {
        let authenticator = Authenticator()
        var (credential, registration) = try authenticator.register(
            Self.creation([algorithm, -7]),
            origin: Self.origin,
            existing: [],
            userVerified: true
        )
        #expect(credential.algorithm == algorithm)
        var authentications: [JSONValue] = []
        for round in 0..<3 {
            let challenge = Array(repeating: UInt8(round), count: 32)
            let request = AssertionRequest(
                rpID: "shiny.example",
                challenge: challenge,
                allowCredentials: round == 0 ? [credential.credentialID] : [],
                userVerification: "required"
            )
            let (updated, response) = try authenticator.authenticate(
                request,
                origin: Self.origin,
                credential: credential,
                userVerified: true
            )
            credential = updated
            authentications.append(["challenge": .string(Base64URL.encode(challenge)), "credential": response])
        }
        #expect(credential.signCount == 3)
        let job: JSONValue = [
            "origin": .string(Self.origin), "rpId": "shiny.example",
            "registration": ["challenge": .string(Base64URL.encode(Array(0..<32))), "credential": registration],
            "authentications": .array(authentications),
        ]
        let result = try await Self.check(job)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("ok registration fmt=none backed_up=True"))
        #expect(result.stdout.contains("ok authentication 2 sign_count=3"))

        // The checker can fail: a signature made for another challenge is refused.
        var tampered = job
        if case .object(var members) = tampered, case .array(var steps) = members["authentications"] {
            steps[1] = [
                "challenge": .string(Base64URL.encode(Array(repeating: 9, count: 32))),
                "credential": steps[1]["credential"]!,
            ]
            members["authentications"] = .array(steps)
            tampered = .object(members)
        }
        let refused = try await Self.check(tampered)
        #expect(refused.status != 0)
        #expect(refused.stdout.contains("authentication 1 refused"))
    }

    static func check(_ job: JSONValue) async throws -> CommandRunner.Result {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "py_webauthn_check.py"
        )
        return try await CommandRunner(executable: URL(fileURLWithPath: "/usr/bin/env"))
            .runDetached(["python3", script.path], stdin: String(decoding: job.encoded(), as: UTF8.self))
    }
}
