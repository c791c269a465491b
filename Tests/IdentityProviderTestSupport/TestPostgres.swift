import Foundation
import IdentityProvider
public import IdentityProviderPostgres
public import Logging
public import Testing

/// The PostgreSQL server the provider's tests run against (`KEYHAVEN_TEST_POSTGRES_URL`, set by
/// scripts/test.sh after scripts/start-test-postgres.sh starts one; CI always has it). Suites that
/// need it are enabled only when it is set, with that reason.
public enum TestPostgres {
    /// The server's URL, or nil when no server was given.
    public static let baseURL = ProcessInfo.processInfo.environment["KEYHAVEN_TEST_POSTGRES_URL"]

    /// Why a test is skipped without a server.
    public static let reason: Comment = "set KEYHAVEN_TEST_POSTGRES_URL (scripts/test.sh does)"

    /// A fresh, empty database on the server; its URL.
    public static func freshDatabase() async throws -> String {
        let base = try #require(baseURL)
        let admin = try PostgresDatabase(url: base)
        let name = "kh_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
        try await admin.withRunning {
            _ = try await admin.read { try await $0.query("CREATE DATABASE \(name)") }
        }
        var components = try #require(URLComponents(string: base))
        components.path = "/" + name
        return try #require(components.string)
    }

    /// A database whose pool runs for the rest of the test process: tests keep providers beyond
    /// any one scope (`keyhaven idp serve` runs the pool in its service group instead).
    public static func database(
        url: String,
        logger: Logger = Logger(label: "test.idp.postgres")
    ) throws -> PostgresDatabase {
        let database = try PostgresDatabase(url: url, logger: logger)
        Task { try? await database.run() }
        return database
    }
}
