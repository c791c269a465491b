public import _KeyhavenSupport

@_exported public import struct _KeyhavenSupport.KeyhavenError

/// Why a vault operation failed. Messages never contain a secret: records are named by id only.
public typealias VaultError = KeyhavenError<VaultErrorDomain>

/// The domain of ``VaultError``: its details are the record concerned, if any.
public enum VaultErrorDomain: KeyhavenErrorDomain {
    public typealias Details = CredentialID
}

extension VaultError {
    /// The record concerned, if any.
    public var record: CredentialID? { details }

    public init(_ code: Code, _ message: String, record: CredentialID?, file: String = #fileID, line: UInt = #line) {
        self.init(code, message, details: record, file: file, line: line)
    }
}

extension VaultError.Code {
    /// The master password does not open the vault.
    public static var wrongPassword: Self { Self("wrongPassword") }
    /// The file is not a Keyhaven vault (another SQLite database, or not SQLite at all).
    public static var notAVault: Self { Self("notAVault") }
    /// The file is shorter than its own header says: truncated or damaged.
    public static var damaged: Self { Self("damaged") }
    /// No vault at the path.
    public static var noVault: Self { Self("noVault") }
    /// `init` on a path that already exists.
    public static var alreadyExists: Self { Self("alreadyExists") }
    /// A newer Keyhaven wrote this vault.
    public static var unsupportedVersion: Self { Self("unsupportedVersion") }
    /// A record failed authentication: its ciphertext was altered.
    public static var corruptRecord: Self { Self("corruptRecord") }
    /// No credential with that id.
    public static var notFound: Self { Self("notFound") }
    /// An id prefix matches more than one credential.
    public static var ambiguous: Self { Self("ambiguous") }
    /// Invalid input (empty password, bad parameters…).
    public static var invalidInput: Self { Self("invalidInput") }
    /// The database failed (I/O, locking…).
    public static var storage: Self { Self("storage") }
    /// The vault's authenticated state does not match its rows: a record was rolled back to an
    /// older copy, a deleted one resurrected, a row removed or a clear column (`deleted`, dates,
    /// versions, lookup tags) edited. Nothing is written; restore the vault from a backup.
    public static var tampered: Self { Self("tampered") }
    /// The master password unwrapped a vault key, but not the key this vault's records are
    /// sealed with: the vault was re-keyed (`passwd`) since — by another process, or the header
    /// was replaced with an older one. Nothing is opened or written.
    public static var keyChanged: Self { Self("keyChanged") }
    /// The key-derivation parameters are below Keyhaven's floor (N = 2^17, r = 8, p = 1) and
    /// weak parameters were not explicitly allowed.
    public static var insecureKDF: Self { Self("insecureKDF") }
}
