public import Foundation
public import GRDB
import _KeyhavenSupport

/// How Keyhaven opens its SQLite files (the vault, the identity provider's database, the sync
/// server's): one place for the settings they all need.
public enum KeyhavenSQLite {
    /// GRDB's configuration for a Keyhaven database: wait up to `busyTimeout` seconds for another
    /// process's lock; every commit reaches the disk before it returns (`synchronous = FULL`: the
    /// vault's upgrade journal and a server's acknowledged writes depend on it); what SQLite frees
    /// is zeroed (`secure_delete`), so a secret that was replaced (sealed after being in the clear,
    /// or re-sealed under a new key) does not stay in free pages.
    public static func configuration(busyTimeout: TimeInterval = 10, label: String? = nil) -> Configuration {
        var configuration = Configuration()
        configuration.busyMode = .timeout(busyTimeout)
        configuration.label = label
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
            try db.execute(sql: "PRAGMA secure_delete = ON")
        }
        return configuration
    }

    /// The database file at `path` as a WAL `DatabasePool` with ``configuration(busyTimeout:label:)``,
    /// created private (0600, its WAL and shared-memory files too) when missing; an existing one that
    /// others can read is made private first (``PrivateFile/prepareDatabase(at:)``), and what was
    /// done is returned as `fileWarnings` for the operator to read.
    public static func openPool(
        path: String,
        busyTimeout: TimeInterval = 10,
        label: String? = nil
    ) throws -> (pool: DatabasePool, fileWarnings: [String]) {
        let fileWarnings = try PrivateFile.prepareDatabase(at: path)
        let pool = try DatabasePool(path: path, configuration: configuration(busyTimeout: busyTimeout, label: label))
        return (pool, fileWarnings)
    }
}
