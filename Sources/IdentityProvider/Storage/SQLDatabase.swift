/// The provider's storage speaks plain SQL through this small seam, so one store implementation
/// runs on SQLite (GRDB, the default) and PostgreSQL (postgres-nio) alike. The SQL it sends is the
/// common subset: `TEXT` and `BIGINT` columns, `?` placeholders (rewritten to `$n` for
/// PostgreSQL), `INSERT … ON CONFLICT DO NOTHING`, `UPDATE … RETURNING`.
public enum SQLValue: Sendable, Hashable {
    case text(String)
    case integer(Int64)
    case null
}

extension SQLValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
    public init(stringLiteral value: String) { self = .text(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }

    public init(_ text: String?) { self = text.map(SQLValue.text) ?? .null }
    public init(_ integer: Int64?) { self = integer.map(SQLValue.integer) ?? .null }
    public init(_ bool: Bool) { self = .integer(bool ? 1 : 0) }
}

/// One result row: each column's value by name. Read it as a typed record with
/// ``decode(_:)`` (or ``SQLConnection/fetchOne(_:_:_:)``), which fails loudly on a column the
/// row lacks.
public struct SQLRow: Sendable {
    public var values: [String: SQLValue]

    public init(values: [String: SQLValue]) { self.values = values }
}

/// Statements inside one transaction.
public protocol SQLConnection: Sendable {
    @discardableResult
    func query(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow]
}

extension SQLConnection {
    @discardableResult
    public func query(_ sql: String, _ binds: SQLValue...) async throws -> [SQLRow] {
        try await query(sql, binds)
    }

    public func one(_ sql: String, _ binds: SQLValue...) async throws -> SQLRow? {
        try await query(sql, binds).first
    }
}

public enum SQLDialect: Sendable {
    case sqlite
    case postgres
}

/// A database the provider can use.
public protocol SQLDatabase: Sendable {
    var dialect: SQLDialect { get }
    /// Runs `body` in one transaction that writes (SQLite: GRDB's `write`, an immediate
    /// transaction; PostgreSQL `BEGIN`), committed when it returns and rolled back when it throws.
    /// `body` may run more than once (PostgreSQL retries deadlock victims), so it must only talk
    /// to the database.
    func transaction<T: Sendable>(_ body: @Sendable (any SQLConnection) async throws -> T) async throws -> T
    /// Runs `body` for reading only (no write lock where the engine allows).
    func read<T: Sendable>(_ body: @Sendable (any SQLConnection) async throws -> T) async throws -> T
    /// Closes what the database holds open; a no-op for both engines now (PostgreSQL's client
    /// runs, and stops, with its service).
    func shutdown() async
}
