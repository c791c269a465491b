import Foundation
import IdentityProvider
import IdentityProviderPostgres
import Testing

/// Rows are read as typed records on both engines, and a column name that is wrong fails loudly
/// instead of reading as nil.
struct TypedRowTests {
    struct Probe: Decodable {
        var name: String
        var count: Int64
        var flag: Bool
        var note: String?
    }

    struct Misspelt: Decodable {
        var name: String
        var nots: String?  // not a column of the query
    }

    static let sql = "SELECT 'ada' AS name, CAST(3 AS BIGINT) AS count, CAST(1 AS BIGINT) AS flag, NULL AS note"

    @Test(arguments: ["sqlite", "postgres"])
    func recordsDecodeAndTyposThrow(engine: String) async throws {
        let database: any SQLDatabase
        if engine == "postgres" {
            guard let base = PostgresTests.baseURL else { return }
            database = try PostgresTests.database(url: base)
        } else {
            database = try SQLiteDatabase()
        }
        let probe = try #require(try await database.read { try await $0.fetchOne(Probe.self, Self.sql) })
        #expect(probe.name == "ada" && probe.count == 3 && probe.flag && probe.note == nil)

        let error = await #expect(throws: StorageError.self) {
            _ = try await database.read { try await $0.fetchOne(Misspelt.self, Self.sql) }
        }
        #expect(error?.code == .malformedRow)
        #expect(error?.message.contains("nots") == true, "\(String(describing: error))")

        // Inside a write transaction too (SQLite runs it on GRDB's writer queue).
        let count = try await database.transaction {
            try await $0.fetchOne(Int64.self, "SELECT CAST(41 AS BIGINT) + 1 AS answer")
        }
        #expect(count == 42)
    }

    /// GRDB's `write` commits what a transaction body did when it returns, and rolls it all back
    /// when it throws, statements already run included.
    @Test func sqliteTransactionsCommitOrRollBackWhole() async throws {
        struct Refused: Error {}
        let database = try SQLiteDatabase()
        _ = try await database.transaction { try await $0.query("CREATE TABLE t (x BIGINT NOT NULL)") }
        await #expect(throws: Refused.self) {
            try await database.transaction { connection in
                try await connection.query("INSERT INTO t (x) VALUES (1)")
                throw Refused()
            }
        }
        _ = try await database.transaction { try await $0.query("INSERT INTO t (x) VALUES (2)") }
        let values = try await database.read { try await $0.fetchAll(Int64.self, "SELECT x FROM t") }
        #expect(values == [2])
    }
}
