import Dispatch
import Foundation
import GRDB
import Synchronization
import _KeyhavenSQLite
import _KeyhavenSupport

/// SQLite through GRDB: a WAL `DatabasePool` for a file, a `DatabaseQueue` in memory. Nothing runs
/// on Swift's cooperative pool or NIO's event loops: writes go through GRDB's async `write` (its
/// writer queue), reads through a few serial dispatch queues of this type (``readQueues``). GRDB
/// serializes the writers and opens each write transaction itself (`BEGIN IMMEDIATE`, with a busy timeout against other processes).
public final class SQLiteDatabase: SQLDatabase {
    let writer: any DatabaseWriter
    public var dialect: SQLDialect { .sqlite }
    /// What opening found wrong with the file's permissions and did about it (see
    /// ``PrivateFile/prepareDatabase(at:)``), for the operator to read.
    public let fileWarnings: [String]

    /// A database file, created private (0600, its WAL and shared-memory files too) when missing;
    /// an existing one that others can read is made private, with a warning in ``fileWarnings``.
    /// Sealing replaces values that were in the clear (or sealed with an old key): what SQLite frees
    /// is zeroed instead of staying in free pages (``KeyhavenSQLite/configuration(busyTimeout:label:)``).
    public init(path: String) throws {
        let (pool, warnings) = try KeyhavenSQLite.openPool(path: path)
        writer = pool
        fileWarnings = warnings
    }

    /// Copies the write-ahead log into the database and truncates it to nothing, so values just
    /// replaced (secrets sealed after being in the clear, or re-sealed under a new key) leave no
    /// copy in the WAL file's old frames.
    func truncateWriteAheadLog() async throws {
        guard let pool = writer as? DatabasePool else { return }
        try await pool.writeWithoutTransaction { db in _ = try db.checkpoint(.truncate) }
    }

    /// An in-memory database (tests, `keyhaven demo`).
    public init() throws {
        fileWarnings = []
        writer = try DatabaseQueue()
    }

    /// The store's transaction bodies are async (they are shared with PostgreSQL), while GRDB's
    /// `write` takes a synchronous closure. So that closure, on GRDB's writer queue, runs the
    /// statements `body` sends it one at a time until `body` returns (commit) or throws (rollback).
    /// GRDB's writer thread waits between statements, as it would inside any long transaction.
    public func transaction<T: Sendable>(_ body: @Sendable (any SQLConnection) async throws -> T) async throws -> T {
        let channel = StatementChannel()
        let writer = self.writer
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                do {
                    try await writer.write { db in try channel.serve(db) }
                } catch {
                    channel.close(error)
                    throw error
                }
            }
            let result: T
            do {
                result = try await body(channel)
            } catch {
                channel.finish(commit: false)
                _ = try? await group.next()
                throw error
            }
            channel.finish(commit: true)
            try await group.next()  // the commit's outcome
            return result
        }
    }

    /// Each statement is one GRDB `read` (a reader connection of the pool, in parallel with the
    /// writer; in memory, the queue), run synchronously on one of ``readQueues``.
    public func read<T: Sendable>(_ body: @Sendable (any SQLConnection) async throws -> T) async throws -> T {
        try await body(Reader(reader: writer))
    }

    /// The serial queues that run reads, taken in turn: a fixed few (one per core, 2 to 4, fewer
    /// than GRDB's 5 reader connections, so a read never waits for a connection). Under load each
    /// queue runs read after read on the thread it already has. GRDB's own async `read` spread the
    /// statements over its five readers' queues, where concurrent requests queued on a semaphore
    /// and a dispatch thread was woken and parked per statement: about 4 thread switches per token
    /// request against about 1 now, and 64–68 % against 70–77 % of the raw signing rate in
    /// `Benchmarks/scripts/idp_token_benchmark.sh` (2 cores). The provider's reads are single
    /// indexed lookups; a long one would delay the reads queued behind it on its queue.
    static let readQueues = (0..<min(4, max(2, ProcessInfo.processInfo.activeProcessorCount))).map {
        DispatchQueue(label: "keyhaven.idp.sqlite-read.\($0)")
    }
    static let nextReadQueue = Atomic<Int>(0)

    public func shutdown() async {}

    struct Reader: SQLConnection {
        let reader: any DatabaseReader
        func query(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
            let reader = self.reader
            let queues = SQLiteDatabase.readQueues
            let turn = SQLiteDatabase.nextReadQueue.wrappingAdd(1, ordering: .relaxed).oldValue
            return try await withCheckedThrowingContinuation { continuation in
                queues[turn % queues.count].async {
                    continuation.resume(with: Result { try reader.read { try SQLiteDatabase.run($0, sql, binds) } })
                }
            }
        }
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
                case .null: values[column] = .null
                case .double, .blob:
                    // The schema has TEXT and BIGINT columns only.
                    throw StorageError(
                        .malformedRow,
                        "column \(column) holds a value that is neither text nor an integer"
                    )
                }
            }
            return SQLRow(values: values)
        }
    }
}

/// Statements from an async transaction body to the GRDB writer closure that runs them.
final class StatementChannel: SQLConnection, Sendable {
    enum Request {
        case statement(String, [SQLValue], CheckedContinuation<[SQLRow], any Error>)
        case finish(commit: Bool)
    }

    struct State {
        var requests: [Request] = []
        /// Set when the writer will take no more statements (it failed, or the body finished).
        var closed: (any Error)?
    }

    struct RolledBack: Error {}
    struct Closed: Error {}

    private let state = Mutex(State())
    private let ready = DispatchSemaphore(value: 0)

    func query(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
        try await withCheckedThrowingContinuation { continuation in
            let refused: (any Error)? = state.withLock { state in
                if let closed = state.closed { return closed }
                state.requests.append(.statement(sql, binds, continuation))
                return nil
            }
            if let refused { continuation.resume(throwing: refused) } else { ready.signal() }
        }
    }

    func finish(commit: Bool) {
        let accepted = state.withLock { state in
            guard state.closed == nil else { return false }
            state.requests.append(.finish(commit: commit))
            state.closed = Closed()
            return true
        }
        if accepted { ready.signal() }
    }

    /// The writer could not start or went away: statements still waiting fail with `error`.
    func close(_ error: any Error) {
        let waiting = state.withLock { state in
            if state.closed == nil { state.closed = error }
            defer { state.requests.removeAll() }
            return state.requests
        }
        for case .statement(_, _, let continuation) in waiting { continuation.resume(throwing: error) }
    }

    /// Runs on GRDB's writer queue, inside its transaction, until the body finishes.
    func serve(_ db: Database) throws {
        while true {
            ready.wait()
            let request = state.withLock { $0.requests.removeFirst() }
            switch request {
            case .statement(let sql, let binds, let continuation):
                do {
                    continuation.resume(returning: try SQLiteDatabase.run(db, sql, binds))
                } catch {
                    continuation.resume(throwing: error)
                }
            case .finish(let commit):
                if commit { return }
                throw RolledBack()
            }
        }
    }
}
