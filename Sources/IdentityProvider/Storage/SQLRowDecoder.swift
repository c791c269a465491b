/// Decodes an ``SQLRow`` into a `Decodable` type, by the type's `CodingKeys`: the one way the
/// provider reads query results, on both engines.
///
/// A key the row lacks is an error naming the column, even for an optional property (a `NULL`
/// column decodes as nil; a misspelt or unselected one does not), so a typo fails at the first
/// query instead of reading as nil.
struct SQLRowDecoder: Decoder {
    let row: SQLRow
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(Columns<Key>(row: row))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw DecodingError.typeMismatch(
            [Any].self,
            .init(codingPath: codingPath, debugDescription: "an SQL row decodes into a keyed type")
        )
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        // A row of one column (`SELECT COUNT(*) …`) decodes as that column's value.
        guard row.values.count == 1, let (name, value) = row.values.first else {
            throw DecodingError.typeMismatch(
                SQLValue.self,
                .init(codingPath: codingPath, debugDescription: "expected one column, got \(row.values.count)")
            )
        }
        return SQLValueDecoder(value: value, codingPath: [ColumnName(name)])
    }

    struct Columns<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let row: SQLRow
        var codingPath: [any CodingKey] { [] }
        var allKeys: [Key] { row.values.keys.compactMap { Key(stringValue: $0) } }

        /// Every key is "present": a column the row lacks then fails in `decodeNil`/`decode`
        /// (keyNotFound), never as a quiet nil through `decodeIfPresent`.
        func contains(_ key: Key) -> Bool { true }

        func value(_ key: Key) throws -> SQLValue {
            guard let value = row.values[key.stringValue] else {
                throw DecodingError.keyNotFound(
                    key,
                    .init(codingPath: [key], debugDescription: "the result has no column \(key.stringValue)")
                )
            }
            return value
        }

        func decodeNil(forKey key: Key) throws -> Bool { try value(key) == .null }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            try T(from: SQLValueDecoder(value: try value(key), codingPath: [key]))
        }

        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
            try SQLValueDecoder(value: try value(key), codingPath: [key]).decode(type)
        }
        func decode(_ type: String.Type, forKey key: Key) throws -> String {
            try SQLValueDecoder(value: try value(key), codingPath: [key]).decode(type)
        }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
            try SQLValueDecoder(value: try value(key), codingPath: [key]).decode(type)
        }
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float {
            try SQLValueDecoder(value: try value(key), codingPath: [key]).decode(type)
        }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int {
            try SQLValueDecoder(value: try value(key), codingPath: [key]).decode(type)
        }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 {
            try SQLValueDecoder(value: try value(key), codingPath: [key]).decode(type)
        }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 {
            try SQLValueDecoder(value: try value(key), codingPath: [key]).decode(type)
        }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 {
            try SQLValueDecoder(value: try value(key), codingPath: [key]).decode(type)
        }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 {
            try SQLValueDecoder(value: try value(key), codingPath: [key]).decode(type)
        }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt {
            try SQLValueDecoder(value: try value(key), codingPath: [key]).decode(type)
        }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 {
            try SQLValueDecoder(value: try value(key), codingPath: [key]).decode(type)
        }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 {
            try SQLValueDecoder(value: try value(key), codingPath: [key]).decode(type)
        }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 {
            try SQLValueDecoder(value: try value(key), codingPath: [key]).decode(type)
        }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 {
            try SQLValueDecoder(value: try value(key), codingPath: [key]).decode(type)
        }

        // Optional properties come here: a missing column is still an error.
        func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
            let value = try value(key)
            if value == .null { return nil }
            return try T(from: SQLValueDecoder(value: value, codingPath: [key]))
        }

        func nestedContainer<NestedKey: CodingKey>(
            keyedBy type: NestedKey.Type,
            forKey key: Key
        ) throws -> KeyedDecodingContainer<NestedKey> {
            throw DecodingError.typeMismatch(type, .init(codingPath: [key], debugDescription: "columns are flat"))
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            throw DecodingError.typeMismatch([Any].self, .init(codingPath: [key], debugDescription: "columns are flat"))
        }

        func superDecoder() throws -> any Decoder { SQLRowDecoder(row: row) }
        func superDecoder(forKey key: Key) throws -> any Decoder { SQLRowDecoder(row: row) }
    }

    struct ColumnName: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ name: String) { stringValue = name }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}

/// One column's value: text, a 64-bit integer (booleans are 0/1), or `NULL`.
struct SQLValueDecoder: Decoder, SingleValueDecodingContainer {
    let value: SQLValue
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        throw mismatch(type)
    }
    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { throw mismatch([Any].self) }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    func mismatch(_ type: Any.Type) -> DecodingError {
        let column = codingPath.last?.stringValue ?? "?"
        if value == .null {
            return .valueNotFound(type, .init(codingPath: codingPath, debugDescription: "column \(column) is NULL"))
        }
        return .typeMismatch(type, .init(codingPath: codingPath, debugDescription: "column \(column) is \(value)"))
    }

    func decodeNil() -> Bool { value == .null }

    func decode(_ type: String.Type) throws -> String {
        switch value {
        case .text(let text): text
        case .integer(let integer): String(integer)
        case .null: throw mismatch(type)
        }
    }

    func decode(_ type: Int64.Type) throws -> Int64 {
        switch value {
        case .integer(let integer): integer
        case .text(let text): try Int64(text) ?? { throw mismatch(type) }()
        case .null: throw mismatch(type)
        }
    }

    func decode(_ type: Bool.Type) throws -> Bool {
        switch try decode(Int64.self) {
        case 0: false
        case 1: true
        default: throw mismatch(type)
        }
    }

    func decode(_ type: Int.Type) throws -> Int { try integer(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try integer(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try integer(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try integer(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try integer(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }
    func decode(_ type: Double.Type) throws -> Double { Double(try decode(Int64.self)) }
    func decode(_ type: Float.Type) throws -> Float { Float(try decode(Int64.self)) }

    func integer<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        guard let result = T(exactly: try decode(Int64.self)) else { throw mismatch(type) }
        return result
    }

    func decode<T: Decodable>(_ type: T.Type) throws -> T { try T(from: self) }
}

extension SQLRow {
    /// This row as a `T`, by `T`'s coding keys (column names).
    /// - Throws: ``StorageError`` naming the column that is missing or of the wrong type.
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        do {
            return try T(from: SQLRowDecoder(row: self))
        } catch let error as DecodingError {
            throw StorageError(.malformedRow, "cannot read a \(T.self) from the database: \(Self.describe(error))")
        }
    }

    static func describe(_ error: DecodingError) -> String {
        switch error {
        case .keyNotFound(let key, _): "no column \(key.stringValue) in the result"
        case .valueNotFound(_, let context), .typeMismatch(_, let context), .dataCorrupted(let context):
            context.debugDescription
        @unknown default: "\(error)"
        }
    }
}

extension SQLConnection {
    /// Every row of the result, decoded as `T`.
    public func fetchAll<T: Decodable>(_ type: T.Type, _ sql: String, _ binds: SQLValue...) async throws -> [T] {
        try await query(sql, binds).map { try $0.decode(T.self) }
    }

    /// The first row of the result, decoded as `T`; nil when there is none.
    public func fetchOne<T: Decodable>(_ type: T.Type, _ sql: String, _ binds: SQLValue...) async throws -> T? {
        try await query(sql, binds).first?.decode(T.self)
    }
}
