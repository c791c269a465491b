import Crypto
import Foundation
import IdentityProvider
import IdentityProviderTestSupport
import KeyhavenTesting
import OneTimeCodes
import Testing

/// One-time-code secrets sealed at rest with a key kept outside the database.
@Suite(.offCooperativePool)
struct SealedSecretsTests {
    static let password = "correct horse battery"

    static func open(_ path: String, key: SymmetricKey?) async throws -> IdentityProvider {
        var configuration = ProviderHarness.configuration()
        configuration.secretsKey = key
        return try await IdentityProvider(configuration: configuration, database: try SQLiteDatabase(path: path))
    }

    static func stored(_ provider: IdentityProvider, _ email: String) async throws -> String? {
        try await provider.database.read {
            try await $0.fetchOne(String?.self, "SELECT totp_secret FROM users WHERE email = ?", .text(email)) ?? nil
        }
    }

    static func path() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("kh-sealed-\(UUID().uuidString).sqlite").path
    }

    static func signIn(_ provider: IdentityProvider, _ email: String, _ secret: String) async throws -> Authentication {
        try await provider.authenticate(
            email: email,
            password: password,
            code: try TOTP(secret: secret).code(at: Date())
        )
    }

    @Test func withAKeySecretsAreStoredSealedAndStillWork() async throws {
        let key = SymmetricKey(size: .bits256)
        let path = Self.path()
        let provider = try await Self.open(path, key: key)
        let (_, secret) = try await provider.createUser(email: "grace@example.com", password: Self.password, totp: true)
        let plain = try #require(secret)
        let stored = try #require(try await Self.stored(provider, "grace@example.com"))
        #expect(stored.hasPrefix("sealed:v1:"))
        #expect(!stored.contains(plain))
        _ = try await Self.signIn(provider, "grace@example.com", plain)

        // The same database without the key, or with another one, does not even open: its signing
        // keys are sealed too. The message names no secret.
        for (other, code) in [
            (nil, StorageError.Code.secretsKeyRequired), (SymmetricKey(size: .bits256), .wrongSecretsKey),
        ] {
            await #expect {
                _ = try await Self.open(path, key: other)
            } throws: { error in
                let error = error as? StorageError
                return error?.code == code && error?.message.contains(plain) == false
            }
        }
    }

    @Test func aSealedSecretCannotBeMovedToAnotherAccount() async throws {
        let provider = try await Self.open(Self.path(), key: SymmetricKey(size: .bits256))
        let (_, secret) = try await provider.createUser(email: "grace@example.com", password: Self.password, totp: true)
        _ = try await provider.createUser(email: "mallory@example.com", password: Self.password, totp: true)
        let graces = try #require(try await Self.stored(provider, "grace@example.com"))
        _ = try await provider.database.transaction {
            try await $0.query(
                "UPDATE users SET totp_secret = ? WHERE email = ?",
                .text(graces),
                .text("mallory@example.com")
            )
        }
        await #expect(throws: ProviderError.self) {
            _ = try await Self.signIn(provider, "mallory@example.com", try #require(secret))
        }
    }

    @Test func addingAKeySealsWhatWasStoredInTheClear() async throws {
        let path = Self.path()
        let before = try await Self.open(path, key: nil)
        let (_, secret) = try await before.createUser(email: "grace@example.com", password: Self.password, totp: true)
        let plain = try #require(secret)
        #expect(try await Self.stored(before, "grace@example.com") == plain)

        let after = try await Self.open(path, key: SymmetricKey(size: .bits256))
        #expect(try await Self.stored(after, "grace@example.com")?.hasPrefix("sealed:v1:") == true)
        _ = try await Self.signIn(after, "grace@example.com", plain)
        #expect(try await after.sealStoredSecrets() == 0)
    }
}
