import Foundation
import GRDB

/// What an attacker with write access to a vault file does: copy it, and edit it with plain SQLite.
enum VaultFileEdits {
    /// Copies a vault (the database and its write-ahead log, if any) to `destination`.
    static func copy(_ source: URL, to destination: URL) throws {
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: source.path + suffix) {
            try? FileManager.default.removeItem(atPath: destination.path + suffix)
            try FileManager.default.copyItem(atPath: source.path + suffix, toPath: destination.path + suffix)
        }
    }

    /// Runs `edit` on the file through a plain SQLite connection, outside Keyhaven.
    static func edit(_ url: URL, _ edit: (Database) throws -> Void) throws {
        let database = try DatabaseQueue(path: url.path)
        try database.writeWithoutTransaction(edit)
        try database.close()
    }

    /// Reads the file through a plain SQLite connection.
    static func read<T>(_ url: URL, _ read: (Database) throws -> T) throws -> T {
        let database = try DatabaseQueue(path: url.path)
        defer { try? database.close() }
        return try database.read(read)
    }

    /// Every byte string a vault keeps under its key: sealed rows and keyed tags.
    static func keyedBytes(_ url: URL) throws -> [Data] {
        try read(url) { db in
            try Data.fetchAll(db, sql: "SELECT sealed FROM credential")
                + Data.fetchAll(db, sql: "SELECT contentTag FROM credential")
                + Data.fetchAll(db, sql: "SELECT tag FROM credentialService")
                + Data.fetchAll(db, sql: "SELECT sealed FROM passwordHistory")
                + Data.fetchAll(db, sql: "SELECT sealed FROM upgradeJournal")
                + Data.fetchAll(db, sql: "SELECT tag FROM providerSession")
                + Data.fetchAll(db, sql: "SELECT sealed FROM providerSession")
                + Data.fetchAll(db, sql: "SELECT keyCheck FROM vault")
        }
    }
}

extension VaultFileEdits {
    /// The database and its write-ahead log (absent = empty): what "nothing was written" compares.
    /// (SQLite's shared-memory index `-shm` changes on any read, and a read-only connection creates an
    /// empty log.)
    static func contents(_ url: URL) -> [Data] {
        ["", "-wal"].map { FileManager.default.contents(atPath: url.path + $0) ?? Data() }
    }
}
