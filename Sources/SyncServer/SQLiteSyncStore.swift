public import Foundation
import GRDB
public import VaultSync
import _KeyhavenSQLite
import _KeyhavenSupport

/// The sync server's state in SQLite (GRDB): a WAL `DatabasePool` for a file, created private
/// (0600), or a queue in memory (tests).
///
/// **Blocking work:** GRDB's calls are synchronous, so this actor's serial executor is a
/// ``_KeyhavenSupport/DedicatedThreadExecutor`` (Keyhaven's one rule for blocking work): every
/// statement runs on that thread, never on Swift's cooperative pool or a NIO event loop; callers only
/// `await`. One thread serializes reads and writes too; the statements are single indexed lookups
/// and one short transaction per push.
public actor SQLiteSyncStore: SyncStore {
    private let executor: DedicatedThreadExecutor
    private let database: any DatabaseWriter
    /// What opening found wrong with the file's permissions and did about it.
    public nonisolated let fileWarnings: [String]

    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    /// The database at `path` (created 0600 when missing, migrated), or in memory when nil.
    public init(path: String?) throws {
        let database: any DatabaseWriter
        if let path {
            let (pool, warnings) = try KeyhavenSQLite.openPool(path: path)
            database = pool
            fileWarnings = warnings
        } else {
            fileWarnings = []
            database = try DatabaseQueue()
        }
        try Self.migrator.migrate(database)
        self.database = database
        executor = DedicatedThreadExecutor(name: "keyhaven.sync.sqlite")
    }

    deinit { executor.finish() }

    private static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE accounts (
                        id TEXT PRIMARY KEY NOT NULL,
                        created INTEGER NOT NULL,
                        sequence INTEGER NOT NULL DEFAULT 0
                    );
                    CREATE TABLE devices (
                        id TEXT PRIMARY KEY NOT NULL,
                        account TEXT NOT NULL REFERENCES accounts(id),
                        public_key BLOB NOT NULL UNIQUE,
                        name TEXT NOT NULL,
                        created INTEGER NOT NULL,
                        revoked INTEGER
                    );
                    CREATE INDEX devices_by_account ON devices(account);
                    CREATE TABLE items (
                        account TEXT NOT NULL REFERENCES accounts(id),
                        item BLOB NOT NULL,
                        revision INTEGER NOT NULL,
                        sequence INTEGER NOT NULL,
                        payload BLOB NOT NULL,
                        PRIMARY KEY (account, item)
                    ) WITHOUT ROWID;
                    CREATE UNIQUE INDEX items_by_sequence ON items(account, sequence);
                    CREATE TABLE applied_mutations (
                        account TEXT NOT NULL,
                        mutation BLOB NOT NULL,
                        revision INTEGER NOT NULL,
                        PRIMARY KEY (account, mutation)
                    ) WITHOUT ROWID;
                    CREATE TABLE challenges (
                        hash BLOB PRIMARY KEY NOT NULL,
                        device TEXT NOT NULL,
                        expires INTEGER NOT NULL
                    );
                    CREATE TABLE tokens (
                        hash BLOB PRIMARY KEY NOT NULL,
                        device TEXT NOT NULL REFERENCES devices(id),
                        expires INTEGER NOT NULL
                    );
                    CREATE INDEX tokens_by_device ON tokens(device);
                    """
            )
        }
        migrator.registerMigration("v2: expiry and per-device indexes") { db in
            try db.execute(
                sql: """
                    CREATE INDEX challenges_by_expiry ON challenges(expires);
                    CREATE INDEX challenges_by_device ON challenges(device, expires);
                    CREATE INDEX tokens_by_expiry ON tokens(expires);
                    """
            )
        }
        migrator.registerMigration("v3: approved_by") { db in
            try db.execute(sql: "ALTER TABLE devices ADD COLUMN approved_by TEXT")
        }
        migrator.registerMigration("v4: join requests") { db in
            try db.execute(
                sql: """
                    CREATE TABLE join_requests (
                        lookup TEXT PRIMARY KEY NOT NULL,
                        public_key BLOB NOT NULL,
                        agreement_key BLOB NOT NULL,
                        name TEXT NOT NULL,
                        tag BLOB NOT NULL,
                        expires INTEGER NOT NULL,
                        grant_box BLOB
                    );
                    CREATE INDEX join_requests_by_expiry ON join_requests(expires);
                    """
            )
        }
        return migrator
    }

    private func write<T>(_ body: (Database) throws -> T) throws -> T {
        do {
            return try database.write(body)
        } catch let error as SyncServerError {
            throw error
        } catch {
            throw SyncServerError(.storage, "the sync database failed: \(error)")
        }
    }

    private func read<T>(_ body: (Database) throws -> T) throws -> T {
        do {
            return try database.read(body)
        } catch {
            throw SyncServerError(.storage, "the sync database failed: \(error)")
        }
    }

    // MARK: Accounts and devices

    public func createAccount(_ account: String, firstDevice: EnrolledDevice) throws {
        try write { db in
            try db.execute(
                sql: "INSERT INTO accounts (id, created) VALUES (?, ?)",
                arguments: [account, firstDevice.created.milliseconds]
            )
            try Self.insert(firstDevice, db)
        }
    }

    public func addDevice(_ device: EnrolledDevice, approvedBy approver: String) throws {
        try write { db in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM accounts WHERE id = ?", arguments: [device.account]) != nil
            else { throw SyncServerError(.notFound, "account \(device.account) does not exist") }
            guard
                try Bool.fetchOne(
                    db,
                    sql: "SELECT 1 FROM devices WHERE id = ? AND account = ? AND revoked IS NULL",
                    arguments: [approver, device.account]
                ) != nil
            else { throw SyncServerError(.forbidden, "the approving device is revoked or not in this account") }
            try Self.insert(device, db)
        }
    }

    private static func insert(_ device: EnrolledDevice, _ db: Database) throws {
        let known = try Bool.fetchOne(
            db,
            sql: "SELECT 1 FROM devices WHERE id = ? OR public_key = ?",
            arguments: [device.id, Data(device.publicKey)]
        )
        guard known == nil else {
            throw SyncServerError(.alreadyEnrolled, "device \(device.id) is already enrolled; make a new key pair")
        }
        try db.execute(
            sql: """
                INSERT INTO devices (id, account, public_key, name, created, revoked, approved_by)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                device.id, device.account, Data(device.publicKey), device.name, device.created.milliseconds,
                device.revoked?.milliseconds, device.approvedBy,
            ]
        )
    }

    public func device(_ id: String) throws -> EnrolledDevice? {
        try read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM devices WHERE id = ?", arguments: [id]).map(Self.device)
        }
    }

    public func devices(of account: String) throws -> [EnrolledDevice] {
        try read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT * FROM devices WHERE account = ? ORDER BY created, id",
                arguments: [account]
            )
            .map(Self.device)
        }
    }

    private static func device(_ row: Row) -> EnrolledDevice {
        EnrolledDevice(
            id: row["id"],
            account: row["account"],
            publicKey: Array(row["public_key"] as Data),
            name: row["name"],
            created: Date(milliseconds: row["created"]),
            revoked: (row["revoked"] as Int64?).map(Date.init(milliseconds:)),
            approvedBy: row["approved_by"]
        )
    }

    public func revoke(_ device: String, of account: String, at date: Date) throws -> Bool {
        try write { db in
            try db.execute(
                sql: "UPDATE devices SET revoked = ? WHERE id = ? AND account = ? AND revoked IS NULL",
                arguments: [date.milliseconds, device, account]
            )
            guard db.changesCount == 1 else { return false }
            try db.execute(sql: "DELETE FROM tokens WHERE device = ?", arguments: [device])
            return true
        }
    }

    // MARK: Challenges and tokens (hashes only)

    public func saveChallenge(
        hash: [UInt8],
        device: String,
        expires: Date,
        keepAtMost: Int,
        purgeBefore: Date?
    ) throws {
        try save("challenges", hash: hash, device: device, expires: expires, purgeBefore: purgeBefore) { db in
            // The device's newest `keepAtMost - 1` stay; the one inserted next makes `keepAtMost`.
            try db.execute(
                sql: """
                    DELETE FROM challenges WHERE device = ? AND hash NOT IN
                    (SELECT hash FROM challenges WHERE device = ? ORDER BY expires DESC, hash LIMIT ?)
                    """,
                arguments: [device, device, max(keepAtMost - 1, 0)]
            )
        }
    }

    public func takeChallenge(hash: [UInt8]) throws -> (device: String, expires: Date)? {
        try write { db in
            guard
                let row = try Row.fetchOne(
                    db,
                    sql: "DELETE FROM challenges WHERE hash = ? RETURNING device, expires",
                    arguments: [Data(hash)]
                )
            else { return nil }
            return (row["device"], Date(milliseconds: row["expires"]))
        }
    }

    public func saveToken(hash: [UInt8], device: String, expires: Date, purgeBefore: Date?) throws {
        try save("tokens", hash: hash, device: device, expires: expires, purgeBefore: purgeBefore) { _ in }
    }

    /// In one transaction: deletes the table's expired rows (when `purgeBefore` is given), runs
    /// `before`, and inserts the hash (as `PostgresSyncStore` does).
    private func save(
        _ table: String,
        hash: [UInt8],
        device: String,
        expires: Date,
        purgeBefore: Date?,
        before: (Database) throws -> Void
    ) throws {
        try write { db in
            if let purgeBefore {
                try db.execute(sql: "DELETE FROM \(table) WHERE expires <= ?", arguments: [purgeBefore.milliseconds])
            }
            try before(db)
            try db.execute(
                sql: "INSERT INTO \(table) (hash, device, expires) VALUES (?, ?, ?)",
                arguments: [Data(hash), device, expires.milliseconds]
            )
        }
    }

    public func tokenHolder(hash: [UInt8], now: Date) throws -> EnrolledDevice? {
        try read { db in
            guard
                let row = try Row.fetchOne(
                    db,
                    sql: """
                        SELECT tokens.hash AS token_hash, devices.* FROM tokens JOIN devices ON devices.id = tokens.device
                        WHERE tokens.hash = ? AND tokens.expires > ? AND devices.revoked IS NULL
                        """,
                    arguments: [Data(hash), now.milliseconds]
                ),
                constantTimeEqual(Array(row["token_hash"] as Data), hash)
            else { return nil }
            return Self.device(row)
        }
    }

    /// How many challenges `device` has outstanding (tests).
    public func challengeCount(device: String) throws -> Int {
        try read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM challenges WHERE device = ?", arguments: [device]) ?? 0
        }
    }

    // MARK: Join requests

    public func saveJoinRequest(_ request: JoinRequest, now: Date, maxPending: Int) throws {
        try write { db in
            try db.execute(sql: "DELETE FROM join_requests WHERE expires <= ?", arguments: [now.milliseconds])
            guard
                try Bool.fetchOne(db, sql: "SELECT 1 FROM join_requests WHERE lookup = ?", arguments: [request.lookup])
                    == nil
            else {
                throw SyncServerError(.alreadyExists, "a join request for this code is pending already")
            }
            let pending = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM join_requests") ?? 0
            guard pending < maxPending else {
                throw SyncServerError(.busy, "too many join requests are pending on this server; retry later")
            }
            try db.execute(
                sql: """
                    INSERT INTO join_requests (lookup, public_key, agreement_key, name, tag, expires)
                    VALUES (?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    request.lookup, Data(request.publicKey), Data(request.agreementKey), request.name,
                    Data(request.tag), request.expires.milliseconds,
                ]
            )
        }
    }

    public func joinRequest(lookup: String, now: Date) throws -> JoinRequest? {
        try read { db in
            try Row.fetchOne(
                db,
                sql: "SELECT * FROM join_requests WHERE lookup = ? AND expires > ?",
                arguments: [lookup, now.milliseconds]
            ).map { row in
                JoinRequest(
                    lookup: row["lookup"],
                    publicKey: Array(row["public_key"] as Data),
                    agreementKey: Array(row["agreement_key"] as Data),
                    name: row["name"],
                    tag: Array(row["tag"] as Data),
                    expires: Date(milliseconds: row["expires"]),
                    grant: (row["grant_box"] as Data?).map { Array($0) }
                )
            }
        }
    }

    public func saveJoinGrant(_ grant: [UInt8], lookup: String, now: Date) throws {
        try write { db in
            try db.execute(
                sql: "UPDATE join_requests SET grant_box = ? WHERE lookup = ? AND expires > ? AND grant_box IS NULL",
                arguments: [Data(grant), lookup, now.milliseconds]
            )
            guard db.changesCount == 0 else { return }
            guard
                try Bool.fetchOne(
                    db,
                    sql: "SELECT 1 FROM join_requests WHERE lookup = ? AND expires > ?",
                    arguments: [lookup, now.milliseconds]
                ) != nil
            else { throw SyncServerError(.notFound, "no join request for this code (or it expired)") }
            throw SyncServerError(.alreadyExists, "this join request was approved already")
        }
    }

    // MARK: Items

    public func push(_ mutation: Mutation, account: String) throws -> PushResponse {
        try write { db in
            if let revision = try Int64.fetchOne(
                db,
                sql: "SELECT revision FROM applied_mutations WHERE account = ? AND mutation = ?",
                arguments: [account, Data(mutation.id.bytes)]
            ) {
                return .accepted(revision: UInt64(revision))
            }
            let current = try Row.fetchOne(
                db,
                sql: "SELECT revision, sequence, payload FROM items WHERE account = ? AND item = ?",
                arguments: [account, Data(mutation.item.bytes)]
            ).map { Self.serverItem($0, item: mutation.item) }
            guard mutation.baseRevision == (current?.revision ?? 0) else {
                guard let current else {
                    return .rejected(
                        reason: "item \(mutation.item) is not on the server (base revision \(mutation.baseRevision))"
                    )
                }
                return .stale(current: current)
            }
            guard
                let sequence = try Int64.fetchOne(
                    db,
                    sql: "UPDATE accounts SET sequence = sequence + 1 WHERE id = ? RETURNING sequence",
                    arguments: [account]
                )
            else { throw SyncServerError(.notFound, "account \(account) does not exist") }
            let revision = mutation.baseRevision + 1
            try db.execute(
                sql: """
                    INSERT INTO items (account, item, revision, sequence, payload) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (account, item) DO UPDATE
                    SET revision = excluded.revision, sequence = excluded.sequence, payload = excluded.payload
                    """,
                arguments: [
                    account, Data(mutation.item.bytes), Int64(revision), sequence, Data(mutation.payload),
                ]
            )
            try db.execute(
                sql: "INSERT INTO applied_mutations (account, mutation, revision) VALUES (?, ?, ?)",
                arguments: [account, Data(mutation.id.bytes), Int64(revision)]
            )
            return .accepted(revision: revision)
        }
    }

    public func changes(account: String, since cursor: UInt64, limit: Int, maxBytes: Int) throws -> ChangeBatch {
        try read { db in
            let latest = try Int64.fetchOne(db, sql: "SELECT sequence FROM accounts WHERE id = ?", arguments: [account])
            guard let latest else { throw SyncServerError(.notFound, "account \(account) does not exist") }
            let rows = try Row.fetchCursor(
                db,
                sql: """
                    SELECT item, revision, sequence, payload FROM items
                    WHERE account = ? AND sequence > ? ORDER BY sequence LIMIT ?
                    """,
                arguments: [account, Int64(clamping: cursor), limit + 1]
            )
            var page = ChangePage(limit: limit, maxBytes: maxBytes)
            while let row = try rows.next() {
                guard let item = ItemID(bytes: Array(row["item"] as Data)) else { continue }
                guard page.add(Self.serverItem(row, item: item)) else { break }
            }
            return page.batch(cursor: cursor, latest: UInt64(latest))
        }
    }

    private static func serverItem(_ row: Row, item: ItemID) -> ServerItem {
        ServerItem(
            item: item,
            revision: UInt64(row["revision"] as Int64),
            payload: Array(row["payload"] as Data),
            sequence: UInt64(row["sequence"] as Int64)
        )
    }
}

extension Date {
    var milliseconds: Int64 { Int64((timeIntervalSince1970 * 1000).rounded(.down)) }

    init(milliseconds: Int64) { self.init(timeIntervalSince1970: Double(milliseconds) / 1000) }
}
