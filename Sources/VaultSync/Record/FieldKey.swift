/// The name of one field of a synced item.
///
/// An item is a set of fields rather than one value so that two devices editing different fields
/// of one item both keep their edit (KeePassXC merges whole entries, and one edit goes to history;
/// keepassxreboot/keepassxc#10225). The names mirror the vault's `CredentialContent` (title,
/// services, user, password, notes, TOTP secret, folder, sign-in link); each passkey is a field of
/// its own (``passkey(_:)``), so adding a passkey on one device and another on a second keeps both.
///
/// Ordered by the UTF-8 bytes of the name: the canonical encoding writes fields in that order.
public struct FieldKey: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let name: String

    public init(_ name: String) {
        self.name = name
    }

    public static let title = FieldKey("title")
    /// The services (websites, apps) the credential is for: a list of identifiers.
    public static let services = FieldKey("services")
    public static let user = FieldKey("user")
    /// The password; its earlier values are the password history (``SyncRecord/history``).
    public static let password = FieldKey("password")
    public static let notes = FieldKey("notes")
    /// The TOTP secret (base32, or an `otpauth://` URI).
    public static let totp = FieldKey("totp")
    /// The `/`-separated folder path: moving an item is a write of this field.
    public static let folder = FieldKey("folder")
    /// The identity-provider account the credential signs in with instead of a password.
    public static let signIn = FieldKey("signIn")

    /// The field of one passkey, named by its row id: its value is the passkey's sealed bytes, and
    /// removing the passkey writes ``FieldValue/absent``.
    public static func passkey(_ id: String) -> FieldKey { FieldKey("passkey/" + id) }

    /// Whether this field is a passkey's (``passkey(_:)``).
    public var isPasskey: Bool { name.hasPrefix("passkey/") }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.name.utf8.lexicographicallyPrecedes(rhs.name.utf8) }

    /// Equal when the UTF-8 bytes are (String's `==` would equate "é" composed and decomposed,
    /// and two names the encoding writes apart must stay two fields).
    public static func == (lhs: Self, rhs: Self) -> Bool { utf8Equal(lhs.name, rhs.name) }

    public func hash(into hasher: inout Hasher) {
        var name = name
        name.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }

    public var description: String { name }
}

/// Whether two strings have the same UTF-8 bytes (not Swift's `==`, which equates canonically
/// equivalent strings); a loop over the buffers, as this runs in every dictionary lookup of a field.
func utf8Equal(_ lhs: String, _ rhs: String) -> Bool {
    var (lhs, rhs) = (lhs, rhs)
    return lhs.withUTF8 { left in
        rhs.withUTF8 { right in
            guard left.count == right.count else { return false }
            for index in 0..<left.count where left[index] != right[index] { return false }
            return true
        }
    }
}
