public import Foundation
public import Vault
import _KeyhavenSupport

/// Throwaway vaults for tests: a fresh folder, a cheap key derivation (scrypt N = 2^10 — far below
/// Keyhaven's floor, for speed, so created and opened with an explicit `allowInsecureKDF`), and an
/// injectable clock.
public struct TestVault: Sendable {
    public let directory: URL
    public let url: URL
    public let masterPassword: String
    public let vault: Vault

    public static let fastKDFLogN = 10

    public init(
        masterPassword: String = "test master password",
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        directory = try TemporaryDirectory.make()
        url = directory.appendingPathComponent("vault.sqlite")
        self.masterPassword = masterPassword
        vault = try Vault.create(
            at: url,
            masterPassword: masterPassword,
            kdf: .random(logN: Self.fastKDFLogN),
            allowInsecureKDF: true,
            now: now
        )
    }

    /// Opens the same file again (another connection, as another process would).
    public func reopen(now: @escaping @Sendable () -> Date = { Date() }) throws -> Vault {
        try Vault.open(at: url, masterPassword: masterPassword, allowInsecureKDF: true, now: now)
    }
}

/// Fresh private folders (0700) under the system's temporary directory.
public enum TemporaryDirectory {
    public static func make() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("keyhaven-test-\(UUID().uuidString)")
        try PrivateFile.createDirectory(at: url)
        return url
    }
}
