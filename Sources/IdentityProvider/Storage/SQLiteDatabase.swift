import Foundation
import GRDB

/// SQLite through GRDB: a WAL database pool. Reads run on reader connections in parallel; write
/// transactions are serialized by an async lock (and by `BEGIN IMMEDIATE` against other
/// processes on the same file, with a busy timeout).
public final class SQLiteDatabase: SQLDatabase {
    let pool: DatabasePool?
    let queue: DatabaseQueue?
    let lock = AsyncLock()
    public var dialect: SQLDialect { .sqlite }

    /// A database file (created when missing).
    public init(path: String) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        // Transactions span several accesses (the store's SQL is async); the async lock keeps
        // every other access out while one is open.
        configuration.allowsUnsafeTransactions = true
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
        }
        pool = try DatabasePool(path: path, configuration: configuration)
        queue = nil
    }

    /// An in-memory database (tests, `keyhaven demo`).
    public init() throws {
        pool = nil
        var configuration = Configuration()
        configuration.allowsUnsafeTransactions = true
        queue = try DatabaseQueue(configuration: configuration)
    }

    var writer: any DatabaseWriter { pool ?? queue! }

    struct Connection: SQLConnection {
        let run: @Sendable (String, [SQLValue]) throws -> [SQLRow]
        func query(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] { try run(sql, binds) }
    }

    public func transaction<T: Sendable>(_ body: @Sendable (any SQLConnection) async throws -> T) async throws -> T {
        await lock.acquire()
        let writer = self.writer
        do {
            try Self.execute(writer, "BEGIN IMMEDIATE")
            let connection = Connection { sql, binds in
                try writer.writeWithoutTransaction { try Self.run($0, sql, binds) }
            }
            let result: T
            do {
                result = try await body(connection)
                try Self.execute(writer, "COMMIT")
            } catch {
                try? Self.execute(writer, "ROLLBACK")
                throw error
            }
            await lock.release()
            return result
        } catch {
            await lock.release()
            throw error
        }
    }

    public func read<T: Sendable>(_ body: @Sendable (any SQLConnection) async throws -> T) async throws -> T {
        if let pool {
            return try await body(Connection { sql, binds in try pool.read { try Self.run($0, sql, binds) } })
        }
        // A single in-memory connection: share the writers' lock.
        await lock.acquire()
        do {
            let queue = queue!
            let result = try await body(Connection { sql, binds in try queue.read { try Self.run($0, sql, binds) } })
            await lock.release()
            return result
        } catch {
            await lock.release()
            throw error
        }
    }

    public func shutdown() async {}

    static func execute(_ writer: any DatabaseWriter, _ sql: String) throws {
        try writer.writeWithoutTransaction { try $0.execute(sql: sql) }
    }

    static func run(_ db: Database, _ sql: String, _ binds: [SQLValue]) throws -> [SQLRow] {
        let arguments = StatementArguments(
            binds.map { value -> (any DatabaseValueConvertible)? in
                switch value {
                case .text(let text): text
                case .integer(let integer): integer
                case .null: nil
                }
            }
        )
        let statement = try db.cachedStatement(sql: sql)
        try statement.setArguments(arguments)
        return try Row.fetchAll(statement).map { row in
            var values: [String: SQLValue] = [:]
            for (column, value) in row {
                switch value.storage {
                case .int64(let integer): values[column] = .integer(integer)
                case .string(let text): values[column] = .text(text)
                case .double(let double): values[column] = .integer(Int64(double))
                case .blob(let data): values[column] = .text(String(decoding: data, as: UTF8.self))
                case .null: values[column] = .null
                }
            }
            return SQLRow(values: values)
        }
    }
}

/// A first-come, first-served lock for async code.
actor AsyncLock {
    private var locked = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func acquire() async {
        guard locked else {
            locked = true
            return
        }
        await withCheckedContinuation { waiters.append($0) }
    }

    func release() {
        if waiters.isEmpty { locked = false } else { waiters.removeFirst().resume() }
    }
}
