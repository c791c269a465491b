import Foundation
public import IdentityProvider
public import Logging
import NIOCore
import PostgresNIO
public import ServiceLifecycle
import _KeyhavenPostgres

/// PostgreSQL through postgres-nio's connection pool, behind the same ``SQLDatabase`` seam as
/// SQLite: several provider instances can share one database.
///
/// The pool works while ``run()`` runs: it is a swift-service-lifecycle `Service`, run by
/// `keyhaven idp serve`'s `ServiceGroup` (`ProviderServer.run(…, services:)`) and stopped after the
/// server on graceful shutdown. Code without a service group (commands, tests) uses
/// ``withRunning(_:)``.
public final class PostgresDatabase: SQLDatabase, Service {
    let client: PostgresClient
    let logger: Logger
    public var dialect: SQLDialect { .postgres }

    /// The TLS mode in use: `require` (certificate verified) by default for any host that is not
    /// loopback, so a network attacker cannot downgrade the connection to plain text and read
    /// password hashes and signing keys (security review Low #22); `prefer` by default on loopback.
    public let sslMode: String

    /// `postgres://user:password@host:port/database[?sslmode=disable|prefer|require]`.
    public init(url: String, logger: Logger = Logger(label: "keyhaven.idp.postgres")) throws {
        do {
            (client, sslMode) = try PostgresURL.pool(url, logger: logger)
        } catch {
            throw StorageError(.invalidConfiguration, error.message)
        }
        self.logger = logger
    }

    /// Runs the connection pool until the task is cancelled or the service group shuts down
    /// gracefully (the group stops services in reverse order, so list the database first).
    public func run() async throws {
        await client.runUntilGracefulShutdown()
    }

    /// Runs `body` while the connection pool runs, then stops the pool.
    public func withRunning<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await client.withRunning(body)
    }

    /// One connection, or the pool (each statement on whichever connection is free), as the
    /// provider's ``SQLConnection``: `run` sends the statement.
    struct Connection: SQLConnection {
        let run: @Sendable (PostgresQuery) async throws -> PostgresRowSequence

        func query(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
            try await PostgresDatabase.describing {
                var result: [SQLRow] = []
                for try await row in try await run(PostgresDatabase.query(sql, binds)) {
                    result.append(try PostgresDatabase.convert(row))
                }
                return result
            }
        }
    }

    /// Runs `body` in a transaction. One the server chose as a deadlock victim (or failed for
    /// serialization) was rolled back whole, so it is run again, up to 4 times in all; the
    /// provider's transaction bodies only talk to the database, which makes that safe.
    public func transaction<T: Sendable>(_ body: @Sendable (any SQLConnection) async throws -> T) async throws -> T {
        var attempt = 1
        while true {
            do {
                return try await transactionOnce(body)
            } catch let error as StorageError where error.isTransient && attempt < 4 {
                attempt += 1
                try await Task.sleep(for: .milliseconds(Int.random(in: 5...50) * attempt))
            }
        }
    }

    func transactionOnce<T: Sendable>(_ body: @Sendable (any SQLConnection) async throws -> T) async throws -> T {
        let logger = self.logger
        return try await client.withConnection { connection in
            try await connection.query("BEGIN", logger: logger)
            do {
                let result = try await body(Connection { try await connection.query($0, logger: logger) })
                _ = try await PostgresDatabase.describing { try await connection.query("COMMIT", logger: logger) }
                return result
            } catch {
                _ = try? await connection.query("ROLLBACK", logger: logger)
                throw error
            }
        }
    }

    public func read<T: Sendable>(_ body: @Sendable (any SQLConnection) async throws -> T) async throws -> T {
        let (client, logger) = (self.client, self.logger)
        return try await body(Connection { try await client.query($0, logger: logger) })
    }

    /// The pool stops with ``run()`` or ``withRunning(_:)``; nothing to do here.
    public func shutdown() async {}

    /// Turns postgres-nio's errors into a ``StorageError`` with the server's SQLSTATE and message
    /// (never the bound values, which may be secrets).
    static func describing<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as PSQLError {
            if let info = error.serverInfo {
                throw StorageError(
                    .statementFailed,
                    "PostgreSQL \(info[.sqlState] ?? "?"): \(info[.message] ?? "error")",
                    details: info[.sqlState]  // the SQLSTATE
                )
            }
            throw StorageError(.unreachable, "PostgreSQL: \(error.code) (is the server reachable and the URL right?)")
        }
    }

    /// `?` placeholders become `$1`, `$2`… (the provider's SQL has no `?` inside literals).
    static func query(_ sql: String, _ binds: [SQLValue]) -> PostgresQuery {
        var text = ""
        var index = 0
        for character in sql {
            if character == "?" {
                index += 1
                text += "$\(index)"
            } else {
                text.append(character)
            }
        }
        var bindings = PostgresBindings(capacity: binds.count)
        for value in binds {
            switch value {
            case .text(let string): bindings.append(string)
            case .integer(let integer): bindings.append(integer)
            case .null: bindings.appendNull()
            }
        }
        return PostgresQuery(unsafeSQL: text, binds: bindings)
    }

    /// A row as the seam's values (decoded into records by ``SQLRow/decode(_:)``, as SQLite's are).
    static func convert(_ row: PostgresRow) throws -> SQLRow {
        var values: [String: SQLValue] = [:]
        for cell in row {
            guard cell.bytes != nil else {
                values[cell.columnName] = .null
                continue
            }
            switch cell.dataType {
            case .int8, .int4, .int2:
                values[cell.columnName] = .integer(try cell.decode(Int64.self))
            case .bool:
                values[cell.columnName] = .integer(try cell.decode(Bool.self) ? 1 : 0)
            default:
                values[cell.columnName] = .text(try cell.decode(String.self))
            }
        }
        return SQLRow(values: values)
    }
}
