public import Foundation
import GRDB
import Synchronization
import _KeyhavenSQLite
import _KeyhavenSupport

/// An unlocked vault: an encrypted SQLite file (WAL) holding credentials and their password history.
///
/// ```swift
/// let vault = try Vault.create(at: url, masterPassword: "correct horse")
/// let id = try vault.add(CredentialContent(services: [.init("example.com")], user: "alice", password: "hunter2"))
/// let again = try Vault.open(at: url, masterPassword: "correct horse")
/// let credential = try again.credential(id)
/// ```
///
/// Several processes may use one vault at once: writes are serialized by SQLite (immediate
/// transactions, waiting up to a minute for the lock), reads see consistent snapshots.
///
/// Integrity: each record is sealed with its id and a per-record version as associated data, and
/// the header keeps an HMAC over the clear state (``VaultIntegrity``), checked on open and at the
/// start of every write: rolled-back, resurrected or edited rows are refused as `tampered`.
public final class Vault: Sendable {
    public let url: URL
    let database: DatabasePool
    /// The keys; replaced (under the lock) when ``changeMasterPassword(to:kdf:allowInsecureKDF:)``
    /// re-keys the vault.
    private let keyBox: Mutex<VaultKeys>
    let now: @Sendable () -> Date
    /// What opening found wrong with the files' permissions and did about it (a vault made readable
    /// by other users before Keyhaven created it private is made private), for the person to read.
    public let fileWarnings: [String]

    var keys: VaultKeys { keyBox.withLock { $0 } }

    func replaceKeys(_ keys: VaultKeys) { keyBox.withLock { $0 = keys } }

    /// Deleted credentials stay in "recently deleted" this long, as in Apple's Passwords.
    public static let recentlyDeletedPeriod: TimeInterval = 30 * 24 * 3600

    private init(
        url: URL,
        database: DatabasePool,
        keys: VaultKeys,
        now: @escaping @Sendable () -> Date,
        fileWarnings: [String] = []
    ) {
        self.url = url
        self.database = database
        keyBox = Mutex(keys)
        self.now = now
        self.fileWarnings = fileWarnings
    }

    /// Every commit reaches the disk before it returns (the upgrade journal depends on it), and
    /// what SQLite frees is zeroed (``KeyhavenSQLite/configuration(busyTimeout:label:)``).
    static func configuration() -> Configuration {
        KeyhavenSQLite.configuration(busyTimeout: busyTimeout, label: label)
    }
    private static let busyTimeout: TimeInterval = 60
    private static let label = "keyhaven.vault"

    // MARK: Create and open

    /// Creates a vault at `url` protected by `masterPassword`. The file must not exist.
    ///
    /// The vault is built under a temporary name in the same folder and moved into place, so a
    /// crash never leaves a half-made vault at `url`. Every file is private from its first byte
    /// (0600, created by ``PrivateFile`` before SQLite opens it; SQLite gives its WAL and
    /// shared-memory files the same mode) and a folder it creates is 0700. The move refuses
    /// anything that appeared at `url` meanwhile, a symbolic link included.
    ///
    /// - Parameters:
    ///   - kdf: scrypt parameters; calibrated on this machine by default, never below the floor
    ///     (``KDFParameters/minimumLogN``) unless `allowInsecureKDF`.
    ///   - allowInsecureKDF: accept parameters below the floor (tests; the CLI's `--insecure-kdf`).
    ///     Opening such a vault needs the same permission.
    /// - Throws: ``VaultError`` `insecureKDF`, `invalidInput` (empty password), `alreadyExists`.
    public static func create(
        at url: URL,
        masterPassword: String,
        kdf: KDFParameters = .calibrated(),
        allowInsecureKDF: Bool = false,
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws(VaultError) -> Vault {
        guard !masterPassword.isEmpty else {
            throw VaultError(.invalidInput, "the master password must not be empty")
        }
        guard !FileManager.default.fileExists(atPath: url.path) else {
            throw VaultError(.alreadyExists, "\(url.path) already exists; Keyhaven never overwrites a file")
        }
        try kdf.checkFloor(allowInsecure: allowInsecureKDF, "the requested key derivation")
        let folder = url.deletingLastPathComponent()
        let temporary = folder.appendingPathComponent(".\(url.lastPathComponent).creating-\(UUID().uuidString)")
        do {
            try PrivateFile.createDirectory(at: folder)
            try PrivateFile.create(at: temporary, contents: [])
            let keys = VaultKeys.generate()
            let wrapped = try keys.wrap(password: masterPassword, kdf: kdf)
            let kdfJSON = String(decoding: try JSONEncoder().encode(kdf), as: UTF8.self)
            do {
                // One connection, so that closing it checkpoints the WAL into the file and removes it.
                var setup = configuration()
                setup.journalMode = .wal
                let database = try DatabaseQueue(path: temporary.path, configuration: setup)
                try database.writeWithoutTransaction { db in
                    try db.execute(sql: "PRAGMA application_id = \(VaultSchema.applicationID)")
                }
                try VaultSchema.migrator.migrate(database)
                try database.write { db in
                    try db.execute(
                        sql: "INSERT INTO vault (id, format, kdf, wrappedKey, created) VALUES (1, ?, ?, ?, ?)",
                        arguments: [VaultSchema.formatVersion, kdfJSON, wrapped, now().timeIntervalSince1970]
                    )
                    try VaultIntegrity.seal(db, keys: keys)
                }
                try database.close()
            }
            if FileManager.default.fileExists(atPath: temporary.path + "-wal") {
                throw VaultError(.storage, "the new vault could not be completed (its write-ahead log was not merged)")
            }
            let moved = Result { () throws(PrivateFileError) in try PrivateFile.move(temporary, to: url) }
            if case .failure(let error) = moved {
                throw error.code == .exists
                    ? VaultError(.alreadyExists, "\(url.path) appeared while the vault was being created")
                    : VaultError(.storage, error.message)
            }
        } catch {
            for suffix in ["", "-wal", "-shm"] {
                try? FileManager.default.removeItem(atPath: temporary.path + suffix)
            }
            throw Self.mapped(error)
        }
        return try open(at: url, masterPassword: masterPassword, allowInsecureKDF: allowInsecureKDF, now: now)
    }

    /// Opens the vault at `url`.
    ///
    /// The header is checked before SQLite opens the file; the password, the key check and the
    /// integrity of the clear state (``VaultIntegrity``) are checked through a read-only connection,
    /// so nothing is written unless all of them hold. A format-1 vault is then upgraded
    /// (``upgradeFormat(_:masterPassword:kdf:)``) and recently deleted records past 30 days are purged, by the
    /// authenticated deletion state.
    ///
    /// - Parameter allowInsecureKDF: open a vault whose scrypt parameters are below the floor (tests;
    ///   the CLI's `--insecure-kdf`); re-key it with ``changeMasterPassword(to:kdf:allowInsecureKDF:)``.
    /// - Throws: ``VaultError`` `wrongPassword` (the file is not modified), `insecureKDF`,
    ///   `keyChanged`, `tampered`, `notAVault` / `damaged` / `noVault` (checked before SQLite opens the
    ///   file, so nothing is ever written to it).
    public static func open(
        at url: URL,
        masterPassword: String,
        allowInsecureKDF: Bool = false,
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws(VaultError) -> Vault {
        do {
            try VaultFile.check(url)
            // Read the header through a read-only connection: nothing can touch the file until the
            // password is known to be right and the rows are known to be the ones it sealed.
            var readOnly = configuration()
            readOnly.readonly = true
            let reader = try DatabaseQueue(path: url.path, configuration: readOnly)
            let header = try reader.read { db -> (Int, String, Data)? in
                guard try db.tableExists("vault"),
                    let row = try Row.fetchOne(db, sql: "SELECT format, kdf, wrappedKey FROM vault WHERE id = 1")
                else { return nil }
                return (row["format"], row["kdf"], row["wrappedKey"])
            }
            guard let (format, kdfJSON, wrapped) = header else {
                throw VaultError(.notAVault, "\(url.path) has no vault header; it is not a Keyhaven vault")
            }
            guard format <= VaultSchema.formatVersion else {
                throw VaultError(
                    .unsupportedVersion,
                    "\(url.path) was written by a newer Keyhaven (format \(format)); upgrade Keyhaven"
                )
            }
            let kdf = try JSONDecoder().decode(KDFParameters.self, from: Data(kdfJSON.utf8))
            try kdf.checkFloor(allowInsecure: allowInsecureKDF, url.path)
            let keys = try VaultKeys.unwrap(wrapped, password: masterPassword, kdf: kdf)
            try reader.read { db in
                if format >= 2 {
                    try VaultIntegrity.verify(db, keys: keys)
                    try VaultIntegrity.verifyRecords(db, keys: keys)
                } else {
                    try Vault.refuseFormatTwoTraces(db)
                }
            }
            try reader.close()
            // Only now, with the right password and untouched rows, may the file change. A vault that
            // others can read (made by a Keyhaven before files were created private) is made
            // private, with a warning.
            let (database, fileWarnings) = try KeyhavenSQLite.openPool(
                path: url.path,
                busyTimeout: busyTimeout,
                label: label
            )
            try VaultSchema.migrator.migrate(database)
            let vault = Vault(url: url, database: database, keys: keys, now: now, fileWarnings: fileWarnings)
            if format < 2 {
                try vault.upgradeFormat(format, masterPassword: masterPassword, kdf: kdf)
            }
            try vault.purgeExpired()
            return vault
        } catch {
            throw mapped(error)
        }
    }

    /// The key-derivation parameters in use.
    public func kdfParameters() throws(VaultError) -> KDFParameters {
        try guarded {
            let json = try database.read { db in try String.fetchOne(db, sql: "SELECT kdf FROM vault WHERE id = 1") }
            return try JSONDecoder().decode(KDFParameters.self, from: Data((json ?? "").utf8))
        }
    }

    /// A write transaction that checks the vault's integrity (and that its key is still ours)
    /// first and re-computes it last, so a write never re-authenticates rows altered behind its
    /// back. Every write to the vault goes through here.
    func authenticatedWrite<T>(_ updates: (Database) throws -> T) throws -> T {
        try database.write { db in
            let keys = self.keys
            try VaultIntegrity.verify(db, keys: keys)
            let result = try updates(db)
            try VaultIntegrity.seal(db, keys: keys)
            return result
        }
    }

    /// Runs one `DELETE` in an ``authenticatedWrite(_:)``; true when it removed a row (the `remove…`
    /// calls' answer).
    func deleteRows(_ sql: String, arguments: StatementArguments = []) throws(VaultError) -> Bool {
        try guarded {
            try authenticatedWrite { db in
                try db.execute(sql: sql, arguments: arguments)
                return db.changesCount > 0
            }
        }
    }

    /// Closes the database (also done when the vault is released).
    public func close() throws(VaultError) {
        try guarded { try database.close() }
    }

    // MARK: Errors

    func guarded<T>(_ body: () throws -> T) throws(VaultError) -> T {
        do {
            return try body()
        } catch {
            throw Self.mapped(error)
        }
    }

    static func mapped(_ error: any Error) -> VaultError {
        if let error = error as? VaultError { return error }
        if let error = error as? PrivateFileError {
            return VaultError(error.code == .exists ? .alreadyExists : .storage, error.message)
        }
        if let error = error as? DatabaseError {
            switch error.resultCode {
            case .SQLITE_NOTADB:
                return VaultError(.notAVault, "the file is not a Keyhaven vault")
            case .SQLITE_CORRUPT:
                return VaultError(.damaged, "the vault file is damaged; restore it from a backup")
            case .SQLITE_BUSY, .SQLITE_LOCKED:
                return VaultError(.storage, "the vault is locked by another process for too long; try again")
            default:
                return VaultError(.storage, "database error: \(error.message ?? "\(error.resultCode)")")
            }
        }
        return VaultError(.storage, "\(error)")
    }
}
