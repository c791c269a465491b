public import Foundation
public import Vault

/// A credential with values sync kept that lost to a concurrent write (`keyhaven list
/// --conflicts`, the web app's sync page): each field's current value and the other value(s).
public struct SyncConflictItem: Hashable, Sendable, Codable {
    public var id: CredentialID
    /// For display: the title (or the first service), the first service and the user.
    public var title: String
    public var service: String?
    public var user: String
    /// Sorted by field, then by when the other value was written.
    public var conflicts: [SyncFieldConflict]

    public init(id: CredentialID, title: String, service: String?, user: String, conflicts: [SyncFieldConflict]) {
        (self.id, self.title, self.service, self.user, self.conflicts) = (id, title, service, user, conflicts)
    }
    /// Every key, `service` as `null` when there is none (as docs/sync.md shows the JSON).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(title, forKey: .title)
        try container.encode(service, forKey: .service)
        try container.encode(user, forKey: .user)
        try container.encode(conflicts, forKey: .conflicts)
    }
}

/// One value that lost a conflict, beside the field's current value.
///
/// The values of the secret fields (password, notes, TOTP secret) are `nil` and `masked` true
/// unless the request asked to reveal them (`--reveal`); a revealed `nil` is "no value" (the field
/// was emptied on one side).
public struct SyncFieldConflict: Hashable, Sendable, Codable {
    /// The field's name in sync: `title`, `services`, `user`, `password`, `notes`, `totp`, `folder`,
    /// `signIn`, `passkey/<16 hex>` (what `keyhaven sync resolve --field` takes).
    public var field: String
    /// Which of the field's other values this is (1, 2, …: `--keep other:2`), oldest first.
    public var option: Int
    /// Whether the values are secrets (masked unless revealed).
    public var secret: Bool
    /// Whether ``current`` and ``other`` were left out (a secret, not revealed).
    public var masked: Bool
    public var current: String?
    public var other: String?
    /// When the other value was written (on the device that wrote it; to the millisecond).
    public var otherWritten: Date

    public init(
        field: String,
        option: Int,
        secret: Bool,
        masked: Bool,
        current: String?,
        other: String?,
        otherWritten: Date
    ) {
        (self.field, self.option, self.secret, self.masked) = (field, option, secret, masked)
        (self.current, self.other, self.otherWritten) = (current, other, otherWritten)
    }
    /// Every key, `current` and `other` as `null` when masked or empty (as docs/sync.md shows the
    /// JSON), not left out.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(field, forKey: .field)
        try container.encode(option, forKey: .option)
        try container.encode(secret, forKey: .secret)
        try container.encode(masked, forKey: .masked)
        try container.encode(current, forKey: .current)
        try container.encode(other, forKey: .other)
        try container.encode(otherWritten, forKey: .otherWritten)
    }
}

/// Which value of a conflicting field to keep (`keyhaven sync resolve --keep`).
public enum SyncConflictChoice: Hashable, Sendable, Codable {
    /// The current value (the later write).
    case current
    /// The field's `option`-th other value (1 when there is one: `--keep other`).
    case other(option: Int)

    /// `current`, `other` or `other:N`; nil for anything else.
    public init?(_ text: String) {
        let text = text.lowercased()
        if text == "current" {
            self = .current
        } else if text == "other" {
            self = .other(option: 1)
        } else if text.hasPrefix("other:"), let option = Int(text.dropFirst("other:".count)), option >= 1 {
            self = .other(option: option)
        } else {
            return nil
        }
    }
}
