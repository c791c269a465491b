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

    /// Equal when their bytes are: Swift's `String ==` equates canonically equivalent texts ("é"
    /// composed and decomposed), which the canonical encoding writes apart — and two replicas must
    /// never keep different bytes because one thought them equal.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case (.absent, .absent): true
        case (.text(let a), .text(let b)): utf8Equal(a, b)
        case (.list(let a), .list(let b)): a.count == b.count && zip(a, b).allSatisfy { utf8Equal($0, $1) }
        case (.bytes(let a), .bytes(let b)): a == b
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .absent: hasher.combine(0)
        case .text(let text):
            hasher.combine(1)
            for byte in text.utf8 { hasher.combine(byte) }
        case .list(let texts):
            hasher.combine(2)
            hasher.combine(texts.count)
            for text in texts {
                hasher.combine(text.utf8.count)
                for byte in text.utf8 { hasher.combine(byte) }
            }
        case .bytes(let bytes):
            hasher.combine(3)
            hasher.combine(bytes)
        }
    }

    /// The text, or nil when the value is not text.
    public var text: String? {
        if case .text(let text) = self { return text }
        return nil
    }
}
