public import Foundation
public import Logging
import NIOCore
import PostgresNIO
public import ServiceLifecycle
public import SyncServer
public import VaultSync
import _KeyhavenPostgres
import _KeyhavenSupport

/// The sync server's state in PostgreSQL (postgres-nio), for several `keyhaven sync serve`
/// instances on one database. Answers as ``SyncServer/SQLiteSyncStore`` does: a push locks its
/// account's row (`SELECT … FOR UPDATE`), so pushes to one account are serialized across instances,
/// sequences are handed out in commit order and a reader never sees a later one before an earlier.
///
/// The connection pool works while ``run()`` runs (a swift-service-lifecycle `Service`, as the
/// provider's `PostgresDatabase`); code without a service group uses ``withRunning(_:)``. Nothing
/// blocks: postgres-nio is asynchronous on its event loops.
public final class PostgresSyncStore: SyncStore, Service {
    let client: PostgresClient
    let logger: Logger
    /// Every table's name starts with this (`sync_` by default, so the provider's tables may live
    /// in the same database).
    let prefix: String

    /// Several instances share the database: long polls re-check it.
    public var sharedByInstances: Bool { true }

    /// `postgres://user:password@host:port/database[?sslmode=disable|prefer|require]`; TLS is
    /// required by default off loopback.
    public init(
        url: String,
        tablePrefix: String = "sync_",
        logger: Logger = Logger(label: "keyhaven.sync.postgres")
    )
        throws
    {
        guard !tablePrefix.isEmpty,
            tablePrefix.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "_") })
        else { throw SyncServerError(.invalidRequest, "a table prefix is lowercase letters, digits and _") }
        do {
            client = try PostgresURL.pool(url, logger: logger).client
        } catch {
            throw SyncServerError(.invalidRequest, error.message)
        }
        self.logger = logger
        prefix = tablePrefix
    }

    public func run() async throws {
        await client.runUntilGracefulShutdown()
    }

    /// Runs `body` while the connection pool runs, then stops the pool.
    public func withRunning<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await client.withRunning(body)
    }

    /// Creates the tables that are missing (the pool must run).
    public func prepare() async throws {
        let p = prefix
        try await storage {
            try await client.withTransaction(logger: logger) { connection in
                // One instance creates the tables at a time.
                try await connection.query("SELECT pg_advisory_xact_lock(28028028)", logger: logger)
                for statement in [
                    "CREATE TABLE IF NOT EXISTS \(p)accounts (id TEXT PRIMARY KEY, created BIGINT NOT NULL, sequence BIGINT NOT NULL DEFAULT 0)",
                    """
                    CREATE TABLE IF NOT EXISTS \(p)devices (id TEXT PRIMARY KEY, account TEXT NOT NULL REFERENCES \(p)accounts(id), \
                    public_key BYTEA NOT NULL UNIQUE, name TEXT NOT NULL, created BIGINT NOT NULL, revoked BIGINT)
                    """,
                    "CREATE INDEX IF NOT EXISTS \(p)devices_by_account ON \(p)devices(account)",
                    "ALTER TABLE \(p)devices ADD COLUMN IF NOT EXISTS approved_by TEXT",
                    """
                    CREATE TABLE IF NOT EXISTS \(p)items (account TEXT NOT NULL REFERENCES \(p)accounts(id), item BYTEA NOT NULL, \
                    revision BIGINT NOT NULL, sequence BIGINT NOT NULL, payload BYTEA NOT NULL, PRIMARY KEY (account, item))
                    """,
                    "CREATE UNIQUE INDEX IF NOT EXISTS \(p)items_by_sequence ON \(p)items(account, sequence)",
                    """
                    CREATE TABLE IF NOT EXISTS \(p)applied_mutations (account TEXT NOT NULL, mutation BYTEA NOT NULL, \
                    revision BIGINT NOT NULL, PRIMARY KEY (account, mutation))
                    """,
                    "CREATE TABLE IF NOT EXISTS \(p)challenges (hash BYTEA PRIMARY KEY, device TEXT NOT NULL, expires BIGINT NOT NULL)",
                    """
                    CREATE TABLE IF NOT EXISTS \(p)tokens (hash BYTEA PRIMARY KEY, device TEXT NOT NULL REFERENCES \(p)devices(id), \
                    expires BIGINT NOT NULL)
                    """,
                    "CREATE INDEX IF NOT EXISTS \(p)tokens_by_device ON \(p)tokens(device)",
                    "CREATE INDEX IF NOT EXISTS \(p)challenges_by_expiry ON \(p)challenges(expires)",
                    "CREATE INDEX IF NOT EXISTS \(p)challenges_by_device ON \(p)challenges(device, expires)",
                    "CREATE INDEX IF NOT EXISTS \(p)tokens_by_expiry ON \(p)tokens(expires)",
                    // Join requests (`keyhaven sync join`): kept 10 minutes, the grant beside.
                    """
                    CREATE TABLE IF NOT EXISTS \(p)join_requests (lookup TEXT PRIMARY KEY, public_key BYTEA NOT NULL, \
                    agreement_key BYTEA NOT NULL, name TEXT NOT NULL, tag BYTEA NOT NULL, expires BIGINT NOT NULL, grant_box BYTEA)
                    """,
                    "CREATE INDEX IF NOT EXISTS \(p)join_requests_by_expiry ON \(p)join_requests(expires)",
                ] {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
            }
        }
    }

    /// Drops the tables (tests).
    public func dropTables() async throws {
        let p = prefix
        _ = try await storage {
            try await client.query(
                PostgresQuery(
                    unsafeSQL:
                        "DROP TABLE IF EXISTS \(p)join_requests, \(p)tokens, \(p)challenges, \(p)applied_mutations, \(p)items, \(p)devices, \(p)accounts"
                ),
                logger: logger
            )
        }
    }

    /// Turns postgres-nio's errors into ``SyncServer/SyncServerError``s with the SQLSTATE and
    /// the server's message (never the bound values); a unique violation on a device is
    /// ``SyncServer/SyncServerError/Code/alreadyEnrolled``. An error inside `withTransaction` arrives
    /// wrapped in a `PostgresTransactionError`: the error inside is mapped the same way. (The HTTP
    /// layer logs storage failures at `.error`.)
    private func storage<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch {
            throw Self.map(error)
        }
    }

    static func map(_ error: any Error) -> SyncServerError {
        switch error {
        case let error as SyncServerError:
            return error
        case let error as PostgresTransactionError:
            if let inner = error.closureError ?? error.beginError ?? error.commitError { return map(inner) }
            return SyncServerError(.storage, "PostgreSQL: the transaction failed")
        case let error as PSQLError:
            if let info = error.serverInfo {
                if info[.sqlState] == "23505", info[.tableName]?.hasSuffix("devices") == true {
                    return SyncServerError(.alreadyEnrolled, "the device is already enrolled; make a new key pair")
                }
                return SyncServerError(.storage, "PostgreSQL \(info[.sqlState] ?? "?"): \(info[.message] ?? "error")")
            }
            return SyncServerError(.storage, "PostgreSQL: \(error.code) (is the server reachable and the URL right?)")
        default:
            return SyncServerError(.storage, "PostgreSQL: \(type(of: error))")
        }
    }

    private func bytes(_ value: [UInt8]) -> ByteBuffer { ByteBuffer(bytes: value) }

    // MARK: Accounts and devices

    public func createAccount(_ account: String, firstDevice: EnrolledDevice) async throws {
        let p = prefix
        try await storage {
            try await client.withTransaction(logger: logger) { connection in
                try await connection.query(
                    "INSERT INTO \(unescaped: p)accounts (id, created) VALUES (\(account), \(firstDevice.created.epochMilliseconds))",
                    logger: logger
                )
                try await insert(firstDevice, connection)
            }
        }
    }

    public func addDevice(_ device: EnrolledDevice, approvedBy approver: String) async throws {
        let p = prefix
        try await storage {
            try await client.withTransaction(logger: logger) { connection in
                let rows = try await connection.query(
                    "SELECT 1 FROM \(unescaped: p)accounts WHERE id = \(device.account)",
                    logger: logger
                )
                var exists = false
                for try await _ in rows { exists = true }
                guard exists else { throw SyncServerError(.notFound, "account \(device.account) does not exist") }
                // FOR SHARE: a concurrent revocation of the approver waits for this transaction (or
                // this one sees it revoked).
                var approved = false
                for try await _ in try await connection.query(
                    """
                    SELECT 1 FROM \(unescaped: p)devices
                    WHERE id = \(approver) AND account = \(device.account) AND revoked IS NULL FOR SHARE
                    """,
                    logger: logger
                ) { approved = true }
                guard approved else {
                    throw SyncServerError(.forbidden, "the approving device is revoked or not in this account")
                }
                try await insert(device, connection)
            }
        }
    }

    private func insert(_ device: EnrolledDevice, _ connection: PostgresConnection) async throws {
        try await connection.query(
            """
            INSERT INTO \(unescaped: prefix)devices (id, account, public_key, name, created, revoked, approved_by)
            VALUES (\(device.id), \(device.account), \(bytes(device.publicKey)), \(device.name), \
            \(device.created.epochMilliseconds), \(device.revoked?.epochMilliseconds), \(device.approvedBy))
            """,
            logger: logger
        )
    }

    private static let deviceColumns = "id, account, public_key, name, created, revoked, approved_by"

    private func devices(_ rows: PostgresRowSequence) async throws -> [EnrolledDevice] {
        var devices: [EnrolledDevice] = []
        for try await (id, account, key, name, created, revoked, approvedBy) in rows.decode(
            (String, String, ByteBuffer, String, Int64, Int64?, String?).self
        ) {
            devices.append(Self.device(id, account, key, name, created, revoked, approvedBy))
        }
        return devices
    }

    /// A device from its columns (``deviceColumns``, in order).
    private static func device(
        _ id: String,
        _ account: String,
        _ key: ByteBuffer,
        _ name: String,
        _ created: Int64,
        _ revoked: Int64?,
        _ approvedBy: String?
    ) -> EnrolledDevice {
        EnrolledDevice(
            id: id,
            account: account,
            publicKey: Array(key.readableBytesView),
            name: name,
            created: Date(epochMilliseconds: created),
            revoked: revoked.map(Date.init(epochMilliseconds:)),
            approvedBy: approvedBy
        )
    }

    public func device(_ id: String) async throws -> EnrolledDevice? {
        try await storage {
            try await devices(
                client.query(
                    "SELECT \(unescaped: Self.deviceColumns) FROM \(unescaped: prefix)devices WHERE id = \(id)",
                    logger: logger
                )
            ).first
        }
    }

    public func devices(of account: String) async throws -> [EnrolledDevice] {
        try await storage {
            try await devices(
                client.query(
                    """
                    SELECT \(unescaped: Self.deviceColumns) FROM \(unescaped: prefix)devices WHERE account = \(account)
                    ORDER BY created, id
                    """,
                    logger: logger
                )
            )
        }
    }

    public func revoke(_ device: String, of account: String, at date: Date) async throws -> Bool {
        let p = prefix
        return try await storage {
            try await client.withTransaction(logger: logger) { connection in
                var revoked = false
                for try await _ in try await connection.query(
                    """
                    UPDATE \(unescaped: p)devices SET revoked = \(date.epochMilliseconds)
                    WHERE id = \(device) AND account = \(account) AND revoked IS NULL RETURNING id
                    """,
                    logger: logger
                ) { revoked = true }
                if revoked {
                    try await connection.query(
                        "DELETE FROM \(unescaped: p)tokens WHERE device = \(device)",
                        logger: logger
                    )
                }
                return revoked
            }
        }
    }

    // MARK: Join requests

    public func saveJoinRequest(_ request: JoinRequest, now: Date, maxPending: Int) async throws {
        let p = prefix
        try await storage {
            try await client.withTransaction(logger: logger) { connection in
                // One writer of join requests at a time across instances: the count and the
                // duplicate check hold until the insert commits.
                try await connection.query("SELECT pg_advisory_xact_lock(28028029)", logger: logger)
                try await connection.query(
                    "DELETE FROM \(unescaped: p)join_requests WHERE expires <= \(now.epochMilliseconds)",
                    logger: logger
                )
                var exists = false
                for try await _ in try await connection.query(
                    "SELECT 1 FROM \(unescaped: p)join_requests WHERE lookup = \(request.lookup)",
                    logger: logger
                ) { exists = true }
                guard !exists else {
                    throw SyncServerError(.alreadyExists, "a join request for this code is pending already")
                }
                var pending: Int64 = 0
                for try await count in try await connection.query(
                    "SELECT COUNT(*) FROM \(unescaped: p)join_requests",
                    logger: logger
                ).decode(Int64.self) { pending = count }
                guard pending < maxPending else {
                    throw SyncServerError(.busy, "too many join requests are pending on this server; retry later")
                }
                try await connection.query(
                    """
                    INSERT INTO \(unescaped: p)join_requests (lookup, public_key, agreement_key, name, tag, expires)
                    VALUES (\(request.lookup), \(bytes(request.publicKey)), \(bytes(request.agreementKey)), \
                    \(request.name), \(bytes(request.tag)), \(request.expires.epochMilliseconds))
                    """,
                    logger: logger
                )
            }
        }
    }

    public func joinRequest(lookup: String, now: Date) async throws -> JoinRequest? {
        try await storage {
            let rows = try await client.query(
                """
                SELECT lookup, public_key, agreement_key, name, tag, expires, grant_box FROM \(unescaped: prefix)join_requests
                WHERE lookup = \(lookup) AND expires > \(now.epochMilliseconds)
                """,
                logger: logger
            )
            for try await (lookup, key, agreement, name, tag, expires, grant) in rows.decode(
                (String, ByteBuffer, ByteBuffer, String, ByteBuffer, Int64, ByteBuffer?).self
            ) {
                return JoinRequest(
                    lookup: lookup,
                    publicKey: Array(key.readableBytesView),
                    agreementKey: Array(agreement.readableBytesView),
                    name: name,
                    tag: Array(tag.readableBytesView),
                    expires: Date(epochMilliseconds: expires),
                    grant: grant.map { Array($0.readableBytesView) }
                )
            }
            return nil
        }
    }

    public func saveJoinGrant(_ grant: [UInt8], lookup: String, now: Date) async throws {
        let p = prefix
        try await storage {
            try await client.withTransaction(logger: logger) { connection in
                var stored = false
                for try await _ in try await connection.query(
                    """
                    UPDATE \(unescaped: p)join_requests SET grant_box = \(bytes(grant))
                    WHERE lookup = \(lookup) AND expires > \(now.epochMilliseconds) AND grant_box IS NULL RETURNING lookup
                    """,
                    logger: logger
                ) { stored = true }
                guard !stored else { return }
                var exists = false
                for try await _ in try await connection.query(
                    """
                    SELECT 1 FROM \(unescaped: p)join_requests
                    WHERE lookup = \(lookup) AND expires > \(now.epochMilliseconds)
                    """,
                    logger: logger
                ) { exists = true }
                guard exists else {
                    throw SyncServerError(.notFound, "no join request for this code (or it expired)")
                }
                throw SyncServerError(.alreadyExists, "this join request was approved already")
            }
        }
    }

    // MARK: Challenges and tokens (hashes only)

    public func saveChallenge(
        hash: [UInt8],
        device: String,
        expires: Date,
        keepAtMost: Int,
        purgeBefore: Date?
    ) async throws {
        try await save("challenges", hash: hash, device: device, expires: expires, purgeBefore: purgeBefore) {
            connection,
            name in
            // The device's newest `keepAtMost - 1` stay; the one inserted next makes `keepAtMost`.
            try await connection.query(
                """
                DELETE FROM \(unescaped: name) WHERE device = \(device) AND hash NOT IN
                (SELECT hash FROM \(unescaped: name) WHERE device = \(device) ORDER BY expires DESC, hash \
                LIMIT \(max(keepAtMost - 1, 0)))
                """,
                logger: self.logger
            )
        }
    }

    public func saveToken(hash: [UInt8], device: String, expires: Date, purgeBefore: Date?) async throws {
        try await save("tokens", hash: hash, device: device, expires: expires, purgeBefore: purgeBefore) { _, _ in }
    }

    /// In one transaction: deletes the table's expired rows (when `purgeBefore` is given), runs
    /// `before`, and inserts the hash.
    private func save(
        _ table: String,
        hash: [UInt8],
        device: String,
        expires: Date,
        purgeBefore: Date?,
        before: @escaping (PostgresConnection, String) async throws -> Void
    ) async throws {
        let name = prefix + table
        try await storage {
            try await client.withTransaction(logger: logger) { connection in
                if let purgeBefore {
                    try await connection.query(
                        "DELETE FROM \(unescaped: name) WHERE expires <= \(purgeBefore.epochMilliseconds)",
                        logger: logger
                    )
                }
                try await before(connection, name)
                try await connection.query(
                    "INSERT INTO \(unescaped: name) (hash, device, expires) VALUES (\(bytes(hash)), \(device), \(expires.epochMilliseconds))",
                    logger: logger
                )
            }
        }
    }

    public func takeChallenge(hash: [UInt8]) async throws -> (device: String, expires: Date)? {
        try await storage {
            let rows = try await client.query(
                "DELETE FROM \(unescaped: prefix)challenges WHERE hash = \(bytes(hash)) RETURNING device, expires",
                logger: logger
            )
            for try await (device, expires) in rows.decode((String, Int64).self) {
                return (device, Date(epochMilliseconds: expires))
            }
            return nil
        }
    }

    public func tokenHolder(hash: [UInt8], now: Date) async throws -> EnrolledDevice? {
        let p = prefix
        return try await storage {
            let rows = try await client.query(
                """
                SELECT t.hash, d.id, d.account, d.public_key, d.name, d.created, d.revoked, d.approved_by
                FROM \(unescaped: p)tokens t JOIN \(unescaped: p)devices d ON d.id = t.device
                WHERE t.hash = \(bytes(hash)) AND t.expires > \(now.epochMilliseconds) AND d.revoked IS NULL
                """,
                logger: logger
            )
            for try await (stored, id, account, key, name, created, revoked, approvedBy) in rows.decode(
                (ByteBuffer, String, String, ByteBuffer, String, Int64, Int64?, String?).self
            ) {
                guard constantTimeEqual(Array(stored.readableBytesView), hash) else { return nil }
                return Self.device(id, account, key, name, created, revoked, approvedBy)
            }
            return nil
        }
    }

    // MARK: Items

    public func push(_ mutation: Mutation, account: String) async throws -> PushResponse {
        let p = prefix
        return try await storage {
            try await client.withTransaction(logger: logger) { connection in
                var locked = false
                for try await _ in try await connection.query(
                    "SELECT sequence FROM \(unescaped: p)accounts WHERE id = \(account) FOR UPDATE",
                    logger: logger
                ) { locked = true }
                guard locked else { throw SyncServerError(.notFound, "account \(account) does not exist") }
                for try await revision in try await connection.query(
                    """
                    SELECT revision FROM \(unescaped: p)applied_mutations
                    WHERE account = \(account) AND mutation = \(bytes(mutation.id.bytes))
                    """,
                    logger: logger
                ).decode(Int64.self) {
                    return PushResponse.accepted(revision: UInt64(revision))
                }
                var current: ServerItem?
                for try await (revision, sequence, payload) in try await connection.query(
                    """
                    SELECT revision, sequence, payload FROM \(unescaped: p)items
                    WHERE account = \(account) AND item = \(bytes(mutation.item.bytes))
                    """,
                    logger: logger
                ).decode((Int64, Int64, ByteBuffer).self) {
                    current = ServerItem(
                        item: mutation.item,
                        revision: UInt64(revision),
                        payload: Array(payload.readableBytesView),
                        sequence: UInt64(sequence)
                    )
                }
                guard mutation.baseRevision == (current?.revision ?? 0) else {
                    guard let current else {
                        return .rejected(
                            reason:
                                "item \(mutation.item) is not on the server (base revision \(mutation.baseRevision))"
                        )
                    }
                    return .stale(current: current)
                }
                var sequence: Int64 = 0
                for try await next in try await connection.query(
                    "UPDATE \(unescaped: p)accounts SET sequence = sequence + 1 WHERE id = \(account) RETURNING sequence",
                    logger: logger
                ).decode(Int64.self) { sequence = next }
                let revision = Int64(mutation.baseRevision + 1)
                try await connection.query(
                    """
                    INSERT INTO \(unescaped: p)items (account, item, revision, sequence, payload)
                    VALUES (\(account), \(bytes(mutation.item.bytes)), \(revision), \(sequence), \(bytes(mutation.payload)))
                    ON CONFLICT (account, item) DO UPDATE
                    SET revision = excluded.revision, sequence = excluded.sequence, payload = excluded.payload
                    """,
                    logger: logger
                )
                try await connection.query(
                    """
                    INSERT INTO \(unescaped: p)applied_mutations (account, mutation, revision)
                    VALUES (\(account), \(bytes(mutation.id.bytes)), \(revision))
                    """,
                    logger: logger
                )
                return .accepted(revision: UInt64(revision))
            }
        }
    }

    public func changes(account: String, since cursor: UInt64, limit: Int, maxBytes: Int) async throws -> ChangeBatch {
        let p = prefix
        return try await storage {
            // One statement, so one snapshot: the latest sequence matches the items (no transaction
            // held open on a pooled connection). No account: no row; no items: one row of NULLs.
            let rows = try await client.query(
                """
                SELECT a.sequence, i.item, i.revision, i.sequence, i.payload FROM \(unescaped: p)accounts a
                LEFT JOIN LATERAL (
                    SELECT item, revision, sequence, payload FROM \(unescaped: p)items
                    WHERE account = a.id AND sequence > \(Int64(clamping: cursor)) ORDER BY sequence LIMIT \(limit + 1)
                ) i ON true
                WHERE a.id = \(account) ORDER BY i.sequence
                """,
                logger: logger
            )
            var latest: Int64?
            var page = ChangePage(limit: limit, maxBytes: maxBytes)
            for try await (accountSequence, item, revision, sequence, payload) in rows.decode(
                (Int64, ByteBuffer?, Int64?, Int64?, ByteBuffer?).self
            ) {
                latest = accountSequence
                // Rows past the page are read and dropped.
                guard !page.full, let item, let revision, let sequence, let payload,
                    let id = ItemID(bytes: Array(item.readableBytesView))
                else { continue }
                _ = page.add(
                    ServerItem(
                        item: id,
                        revision: UInt64(revision),
                        payload: Array(payload.readableBytesView),
                        sequence: UInt64(sequence)
                    )
                )
            }
            guard let latest else { throw SyncServerError(.notFound, "account \(account) does not exist") }
            return page.batch(cursor: cursor, latest: UInt64(latest))
        }
    }
}

extension Date {
    fileprivate var epochMilliseconds: Int64 { Int64((timeIntervalSince1970 * 1000).rounded(.down)) }
    fileprivate init(epochMilliseconds: Int64) { self.init(timeIntervalSince1970: Double(epochMilliseconds) / 1000) }
}
