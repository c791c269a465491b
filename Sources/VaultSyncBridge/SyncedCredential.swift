public import Foundation
public import Passkeys
public import Vault

/// What sync carries of one credential: its content, its password history, its passkeys, when it
/// was created, whether it is in "recently deleted", and the conflicts sync left for the person.
///
/// ``CredentialRecordMapping`` turns it into a ``VaultSync/SyncRecord`` and back; a record read
/// back equals what was written, with dates from stamps kept to the millisecond.
public struct SyncedCredential: Hashable, Sendable {
    public var content: CredentialContent
    /// Oldest first, each with when it was replaced: the time of the write that replaced it (to the
    /// millisecond). Values that lost a conflict on the password are in it too, in stamp order.
    public var passwordHistory: [PasswordHistoryEntry]
    /// Sorted by sync name (``CredentialField/passkeyName(_:)``).
    public private(set) var passkeys: [PasskeyCredential]
    /// When the item was first written (its earliest stamp).
    public var created: Date
    /// When it was deleted, while it is (its latest deletion's stamp).
    public var deleted: Date?
    /// The values that lost a conflict (`keyhaven list --conflicts`): derived from the record, the
    /// same on every replica, cleared once the person chooses (``VaultSync/SyncReplica/resolveConflicts(in:field:keeping:now:)``).
    public var conflicts: [CredentialConflict]

    public init(
        content: CredentialContent,
        passwordHistory: [PasswordHistoryEntry] = [],
        passkeys: [PasskeyCredential] = [],
        created: Date,
        deleted: Date? = nil,
        conflicts: [CredentialConflict] = []
    ) {
        self.content = content
        self.passwordHistory = passwordHistory
        self.passkeys = passkeys.sorted {
            CredentialField.passkeyName($0).utf8.lexicographicallyPrecedes(CredentialField.passkeyName($1).utf8)
        }
        self.created = created
        self.deleted = deleted
        self.conflicts = conflicts
    }
}
