import Crypto
import Foundation
import IdentityProviderTestSupport
import KeyhavenJOSE
import KeyhavenTesting
import OneTimeCodes
import Testing
import _KeyhavenSupport

@testable import IdentityProvider

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Security review M4: someone with a copy of the provider's database (another local user, a
/// backup, a dump) finds no signing key, access-token key or one-time-code secret in it, and the
/// database file is private from its first byte.
@Suite(.offCooperativePool)
struct KeysAtRestTests {
    static let password = "correct horse battery"

    static func path() throws -> String {
        try TemporaryDirectory.make().appendingPathComponent("idp.sqlite").path
    }

    static func open(_ path: String, key: SymmetricKey?) async throws -> IdentityProvider {
        var configuration = ProviderHarness.configuration()
        configuration.secretsKey = key
        return try await IdentityProvider(configuration: configuration, database: try SQLiteDatabase(path: path))
    }

    /// Everything on disk: the database and the files SQLite keeps beside it.
    static func onDisk(_ path: String) -> Data {
        ["", "-wal", "-shm", "-journal"].reduce(into: Data()) { all, suffix in
            all += FileManager.default.contents(atPath: path + suffix) ?? Data()
        }
    }

    /// What an attacker reading the files looks for: PEM private keys, the access-token key (as
    /// stored in the clear), one-time-code secrets.
    static func clearKeyMaterial(
        _ path: String,
        _ provider: IdentityProvider,
        totp: [String] = []
    ) async throws
        -> [String]
    {
        let accessKey = try await provider.accessTokenKey().withUnsafeBytes { Base64URL.encode(Array($0)) }
        let bytes = onDisk(path)
        return (["PRIVATE KEY", accessKey] + totp).filter { bytes.range(of: Data($0.utf8)) != nil }
    }

    static func stored(_ provider: IdentityProvider) async throws -> [String] {
        try await provider.database.read { connection in
            let pems = try await connection.fetchAll(String.self, "SELECT private_pem FROM signing_keys ORDER BY kid")
            let meta = try await connection.fetchAll(
                String.self,
                "SELECT value FROM idp_meta WHERE name IN ('access-token-key', 'secrets-key-check') ORDER BY name"
            )
            let totp = try await connection.fetchAll(
                String.self,
                "SELECT totp_secret FROM users WHERE totp_secret IS NOT NULL ORDER BY id"
            )
            return pems + meta + totp
        }
    }

    @Test func signingAndAccessTokenKeysAreSealedAtRest() async throws {
        let path = try Self.path()
        let provider = try await Self.open(path, key: SymmetricKey(size: .bits256))
        let (_, secret) = try await provider.createUser(email: "grace@example.com", password: Self.password, totp: true)
        _ = try await provider.rotateSigningKey()
        #expect(try await provider.jwks().keys.count == 2)
        let stored = try await Self.stored(provider)
        #expect(stored.count == 5)  // two signing keys, the access-token key, the check, one secret
        #expect(stored.allSatisfy { $0.hasPrefix("sealed:v1:") })
        #expect(try await Self.clearKeyMaterial(path, provider, totp: [try #require(secret)]).isEmpty)
    }

    /// A database an earlier Keyhaven wrote (keys in the clear) is sealed on the first start with
    /// a key, keeping the same keys: tokens issued before still verify. No clear copy is left in
    /// the database file or its WAL.
    @Test func clearKeysAreSealedOnTheFirstStartWithAKey() async throws {
        let path = try Self.path()
        let before = try await Self.open(path, key: nil)
        let (_, secret) = try await before.createUser(email: "grace@example.com", password: Self.password, totp: true)
        let totp = try #require(secret)
        _ = try await before.rotateSigningKey()
        let kids = try await before.signingKeyIDs()
        let accessKey = try await before.accessTokenKey()
        // The attack this defends against works on such a database.
        #expect(try await Self.clearKeyMaterial(path, before, totp: [totp]).count == 3)

        let after = try await Self.open(path, key: SymmetricKey(size: .bits256))
        #expect(try await Self.stored(after).allSatisfy { $0.hasPrefix("sealed:v1:") })
        #expect(try await after.signingKeyIDs() == kids)
        #expect(try await after.accessTokenKey() == accessKey)
        #expect(try await Self.clearKeyMaterial(path, after, totp: [totp]).isEmpty)
        _ = try await after.authenticate(
            email: "grace@example.com",
            password: Self.password,
            code: try TOTP(secret: totp).code(at: Date())
        )
    }

    /// `resealSecrets` moves every secret to the new key in one transaction: afterwards only the
    /// new key opens the database and nothing sealed with the old one is left on disk; when one
    /// value cannot be opened, nothing changes at all.
    @Test func resealingMovesEverySecretToTheNewKeyAtOnce() async throws {
        let path = try Self.path()
        let old = SymmetricKey(size: .bits256)
        let provider = try await Self.open(path, key: old)
        let (_, secret) = try await provider.createUser(email: "grace@example.com", password: Self.password, totp: true)
        let totp = try #require(secret)
        _ = try await provider.rotateSigningKey()
        let kids = try await provider.signingKeyIDs()
        let accessKey = try await provider.accessTokenKey()
        let sealedBefore = try await Self.stored(provider)

        let new = SymmetricKey(size: .bits256)
        #expect(try await provider.resealSecrets(under: new) == 4)
        let reopened = try await Self.open(path, key: new)
        #expect(try await reopened.signingKeyIDs() == kids)
        #expect(try await reopened.accessTokenKey() == accessKey)
        _ = try await reopened.authenticate(
            email: "grace@example.com",
            password: Self.password,
            code: try TOTP(secret: totp).code(at: Date())
        )
        await #expect(throws: StorageError(.wrongSecretsKey, "")) { _ = try await Self.open(path, key: old) }
        let bytes = Self.onDisk(path)
        #expect(sealedBefore.allSatisfy { bytes.range(of: Data($0.utf8)) == nil }, "old sealed values left on disk")
        #expect(try await Self.clearKeyMaterial(path, reopened, totp: [totp]).isEmpty)

        // One value that does not open (a signing key moved to another key's row): nothing changes.
        _ = try await reopened.database.transaction { connection in
            let ordered = kids.sorted()
            let pems = try await connection.fetchAll(String.self, "SELECT private_pem FROM signing_keys ORDER BY kid")
            // Each key's sealed PEM in the other's row.
            try await connection.query(
                "UPDATE signing_keys SET private_pem = ? WHERE kid = ?",
                .text(pems[1]),
                .text(ordered[0])
            )
            try await connection.query(
                "UPDATE signing_keys SET private_pem = ? WHERE kid = ?",
                .text(pems[0]),
                .text(ordered[1])
            )
        }
        let tampered = try await Self.stored(reopened)
        await #expect(throws: StorageError(.wrongSecretsKey, "")) {
            _ = try await reopened.resealSecrets(under: SymmetricKey(size: .bits256))
        }
        #expect(try await Self.stored(reopened) == tampered)
        #expect(try await reopened.secretsKeyMatches(new))
    }

    /// The database SQLite makes, its WAL and shared-memory files are never readable by others,
    /// watched while they are created and written under umask 022; an existing database others
    /// can read is made private with a warning.
    @Test func theDatabaseIsPrivateFromItsFirstByte() async throws {
        useUsualUmask()
        let folder = try TemporaryDirectory.make()
        let watcher = FolderWatcher(folder)
        let path = folder.appendingPathComponent("idp.sqlite").path
        let provider = try await Self.open(path, key: SymmetricKey(size: .bits256))
        _ = try await provider.createUser(email: "grace@example.com", password: Self.password, totp: true)
        _ = try await provider.rotateSigningKey()
        for suffix in ["", "-wal", "-shm"] {
            let mode = try FileManager.default.attributesOfItem(atPath: path + suffix)[.posixPermissions] as? NSNumber
            #expect(mode?.intValue == 0o600, "idp.sqlite\(suffix)")
        }
        let exposed = watcher.stop()
        #expect(exposed.isEmpty, "readable by others at some moment: \(exposed)")
        #expect(watcher.seenPaths.isSuperset(of: ["idp.sqlite", "idp.sqlite-wal", "idp.sqlite-shm"]))

        let older = folder.appendingPathComponent("older.sqlite").path
        _ = try SQLiteDatabase(path: older)
        chmod(older, 0o644)
        let reopened = try SQLiteDatabase(path: older)
        #expect(reopened.fileWarnings.count == 1 && reopened.fileWarnings[0].contains(older))
    }
}
