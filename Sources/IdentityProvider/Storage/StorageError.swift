public import _KeyhavenSupport

@_exported public import struct _KeyhavenSupport.KeyhavenError

/// What went wrong in the provider's database. Messages never contain the values that were bound
/// (they may be secrets). SQLite's own failures arrive as GRDB's `DatabaseError`.
public typealias StorageError = KeyhavenError<StorageErrorDomain>

/// The domain of ``StorageError``: its details are the engine's error class (``StorageError/sqlState``).
public enum StorageErrorDomain: KeyhavenErrorDomain {
    public typealias Details = String
}

extension StorageError {
    /// The engine's error class when it gave one (PostgreSQL's SQLSTATE, e.g. `40P01`).
    public var sqlState: String? { details }

    /// A deadlock or serialization failure: the transaction was rolled back and running it again
    /// can succeed.
    public var isTransient: Bool { sqlState == "40P01" || sqlState == "40001" }
}

extension StorageError.Code {
    /// The database URL or its options are not acceptable.
    public static var invalidConfiguration: Self { Self("invalidConfiguration") }
    /// The database server could not be reached (or refused the connection).
    public static var unreachable: Self { Self("unreachable") }
    /// The server refused a statement (``StorageError/sqlState`` says why).
    public static var statementFailed: Self { Self("statementFailed") }
    /// A newer Keyhaven migrated the database.
    public static var unsupportedSchema: Self { Self("unsupportedSchema") }
    /// A row does not have the columns or types its record expects.
    public static var malformedRow: Self { Self("malformedRow") }
    /// Something the provider creates when it is prepared (a signing key…) is missing.
    public static var notPrepared: Self { Self("notPrepared") }
    /// A secret could not be sealed with the provider's secrets key.
    public static var sealingFailed: Self { Self("sealingFailed") }
    /// The database's secrets are sealed and the provider was started without a secrets key.
    public static var secretsKeyRequired: Self { Self("secretsKeyRequired") }
    /// The database's secrets are sealed with another secrets key than the provider's.
    public static var wrongSecretsKey: Self { Self("wrongSecretsKey") }
}
