/// The value of one field: what a write sets.
///
/// Few shapes on purpose — the merge never looks inside a value, it only keeps or replaces it
/// whole — so a field is text (title, user, password, notes, TOTP secret, folder), a list of text
/// (services), bytes (a passkey, already sealed by the vault), or absent (a field cleared, a
/// passkey removed: a write like any other, so clearing and editing conflict like two edits).
public enum FieldValue: Hashable, Sendable {
    case absent
    case text(String)
    case list([String])
    case bytes([UInt8])

    /// The text, or nil when the value is not text.
    public var text: String? {
        if case .text(let text) = self { return text }
        return nil
    }
}
