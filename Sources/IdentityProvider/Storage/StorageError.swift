/// What went wrong in the provider's database. Messages never contain the values that were bound
/// (they may be secrets).
///
/// A struct with an opaque ``Code`` so new cases never break callers; errors compare by code.
/// SQLite's own failures arrive as GRDB's `DatabaseError`.
public struct StorageError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String {
            case invalidConfiguration, unreachable, statementFailed, unsupportedSchema, malformedRow, notPrepared
            case sealingFailed, secretsKeyRequired, wrongSecretsKey
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }
        public var description: String { base.rawValue }

        /// The database URL or its options are not acceptable.
        public static let invalidConfiguration = Code(.invalidConfiguration)
        /// The database server could not be reached (or refused the connection).
        public static let unreachable = Code(.unreachable)
        /// The server refused a statement (``StorageError/sqlState`` says why).
        public static let statementFailed = Code(.statementFailed)
        /// A newer Keyhaven migrated the database.
        public static let unsupportedSchema = Code(.unsupportedSchema)
        /// A row does not have the columns or types its record expects.
        public static let malformedRow = Code(.malformedRow)
        /// Something the provider creates when it is prepared (a signing key…) is missing.
        public static let notPrepared = Code(.notPrepared)
        /// A secret could not be sealed with the provider's secrets key.
        public static let sealingFailed = Code(.sealingFailed)
        /// The database's secrets are sealed and the provider was started without a secrets key.
        public static let secretsKeyRequired = Code(.secretsKeyRequired)
        /// The database's secrets are sealed with another secrets key than the provider's.
        public static let wrongSecretsKey = Code(.wrongSecretsKey)
    }

    public var code: Code
    public var message: String
    /// The engine's error class when it gave one (PostgreSQL's SQLSTATE, e.g. `40P01`).
    public var sqlState: String?

    public init(_ code: Code, _ message: String, sqlState: String? = nil) {
        self.code = code
        self.message = message
        self.sqlState = sqlState
    }

    public var description: String { message }

    /// A deadlock or serialization failure: the transaction was rolled back and running it again
    /// can succeed.
    public var isTransient: Bool { sqlState == "40P01" || sqlState == "40001" }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code && lhs.sqlState == rhs.sqlState }
    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(sqlState)
    }
}
