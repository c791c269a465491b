/// Encodes a record into its columns' values, for ``SQLConnection/insert(_:_:_:)``: every column
/// of the record's `CodingKeys`, in their order (`NULL` for a nil property).
struct SQLRecordEncoder: Encoder {
    final class Columns {
        var values: [String: SQLValue] = [:]
    }

    let columns = Columns()
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    static func values<R: SQLRecord & Encodable>(of record: R) throws -> [SQLValue] {
        let encoder = SQLRecordEncoder()
        try record.encode(to: encoder)
        return R.CodingKeys.allCases.map { encoder.columns.values[$0.stringValue] ?? .null }
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(Container<Key>(columns: columns))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        preconditionFailure("a record encodes as columns")
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        preconditionFailure("a record encodes as columns")
    }

    struct Container<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let columns: Columns
        var codingPath: [any CodingKey] { [] }

        func put(_ value: SQLValue, _ key: Key) { columns.values[key.stringValue] = value }

        mutating func encodeNil(forKey key: Key) throws { put(.null, key) }
        mutating func encode(_ value: String, forKey key: Key) throws { put(.text(value), key) }
        mutating func encode(_ value: Bool, forKey key: Key) throws { put(.integer(value ? 1 : 0), key) }
        mutating func encode(_ value: Int64, forKey key: Key) throws { put(.integer(value), key) }
        mutating func encode(_ value: Int, forKey key: Key) throws { put(.integer(Int64(value)), key) }
        mutating func encode(_ value: Int8, forKey key: Key) throws { put(.integer(Int64(value)), key) }
        mutating func encode(_ value: Int16, forKey key: Key) throws { put(.integer(Int64(value)), key) }
        mutating func encode(_ value: Int32, forKey key: Key) throws { put(.integer(Int64(value)), key) }
        mutating func encode(_ value: UInt8, forKey key: Key) throws { put(.integer(Int64(value)), key) }
        mutating func encode(_ value: UInt16, forKey key: Key) throws { put(.integer(Int64(value)), key) }
        mutating func encode(_ value: UInt32, forKey key: Key) throws { put(.integer(Int64(value)), key) }

        mutating func encode(_ value: UInt, forKey key: Key) throws {
            put(.integer(try exact(value, key)), key)
        }

        mutating func encode(_ value: UInt64, forKey key: Key) throws {
            put(.integer(try exact(value, key)), key)
        }

        mutating func encode(_ value: Double, forKey key: Key) throws { throw unsupported(value, key) }
        mutating func encode(_ value: Float, forKey key: Key) throws { throw unsupported(value, key) }

        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
            switch value {
            case let text as String: put(.text(text), key)
            case let flag as Bool: put(.integer(flag ? 1 : 0), key)
            case let integer as Int64: put(.integer(integer), key)
            case let integer as Int: put(.integer(Int64(integer)), key)
            default: throw unsupported(value, key)
            }
        }

        func exact(_ value: some BinaryInteger, _ key: Key) throws -> Int64 {
            guard let result = Int64(exactly: value) else { throw unsupported(value, key) }
            return result
        }

        func unsupported(_ value: Any, _ key: Key) -> EncodingError {
            EncodingError.invalidValue(
                value,
                .init(codingPath: [key], debugDescription: "column \(key.stringValue) takes text or an integer")
            )
        }

        mutating func nestedContainer<NestedKey: CodingKey>(
            keyedBy keyType: NestedKey.Type,
            forKey key: Key
        ) -> KeyedEncodingContainer<NestedKey> {
            preconditionFailure("columns are flat")
        }

        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            preconditionFailure("columns are flat")
        }

        mutating func superEncoder() -> any Encoder { preconditionFailure("columns are flat") }
        mutating func superEncoder(forKey key: Key) -> any Encoder { preconditionFailure("columns are flat") }
    }
}

extension SQLRecord where Self: Encodable {
    /// `INSERT INTO <table> (<columns>) VALUES (?, …)`.
    static var insert: String {
        "INSERT INTO \(table) (\(columns)) VALUES (\(CodingKeys.allCases.map { _ in "?" }.joined(separator: ", ")))"
    }
}

extension SQLConnection {
    /// Inserts `record` (every column), followed by `clause` (`ON CONFLICT …`, `RETURNING …`) and
    /// the values its placeholders take.
    @discardableResult
    func insert<R: SQLRecord & Encodable>(
        _ record: R,
        _ clause: String = "",
        _ binds: SQLValue...
    ) async throws -> [SQLRow] {
        let sql = clause.isEmpty ? R.insert : R.insert + " " + clause
        return try await query(sql, try SQLRecordEncoder.values(of: record) + binds)
    }
}
