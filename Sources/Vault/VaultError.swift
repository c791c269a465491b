/// Why a vault operation failed. Messages never contain a secret: records are named by id only.
public struct VaultError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String {
            case wrongPassword, notAVault, damaged, noVault, alreadyExists, unsupportedVersion, corruptRecord
            case notFound, ambiguous, invalidInput, storage
            case tampered, keyChanged, insecureKDF
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }
        public var description: String { base.rawValue }

        /// The master password does not open the vault.
        public static let wrongPassword = Code(.wrongPassword)
        /// The file is not a Keyhaven vault (another SQLite database, or not SQLite at all).
        public static let notAVault = Code(.notAVault)
        /// The file is shorter than its own header says: truncated or damaged.
        public static let damaged = Code(.damaged)
        /// No vault at the path.
        public static let noVault = Code(.noVault)
        /// `init` on a path that already exists.
        public static let alreadyExists = Code(.alreadyExists)
        /// A newer Keyhaven wrote this vault.
        public static let unsupportedVersion = Code(.unsupportedVersion)
        /// A record failed authentication: its ciphertext was altered.
        public static let corruptRecord = Code(.corruptRecord)
        /// No credential with that id.
        public static let notFound = Code(.notFound)
        /// An id prefix matches more than one credential.
        public static let ambiguous = Code(.ambiguous)
        /// Invalid input (empty password, bad parameters…).
        public static let invalidInput = Code(.invalidInput)
        /// The database failed (I/O, locking…).
        public static let storage = Code(.storage)
        /// The vault's authenticated state does not match its rows: a record was rolled back to an
        /// older copy, a deleted one resurrected, a row removed or a clear column (`deleted`, dates,
        /// versions, lookup tags) edited. Nothing is written; restore the vault from a backup.
        public static let tampered = Code(.tampered)
        /// The master password unwrapped a vault key, but not the key this vault's records are
        /// sealed with: the vault was re-keyed (`passwd`) since — by another process, or the header
        /// was replaced with an older one. Nothing is opened or written.
        public static let keyChanged = Code(.keyChanged)
        /// The key-derivation parameters are below Keyhaven's floor (N = 2^17, r = 8, p = 1) and
        /// weak parameters were not explicitly allowed.
        public static let insecureKDF = Code(.insecureKDF)
    }

    public var code: Code
    /// What went wrong and what to do about it.
    public var message: String
    /// The record concerned, if any.
    public var record: CredentialID?

    public init(_ code: Code, _ message: String, record: CredentialID? = nil) {
        self.code = code
        self.message = message
        self.record = record
    }

    public var description: String { message }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code && lhs.record == rhs.record }
    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(record)
    }
}
