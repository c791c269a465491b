public import Foundation

/// A value someone overwrote without having seen it: a field written on two devices offline. The
/// later write is current; this one waits for the person.
public struct CredentialConflict: Hashable, Sendable {
    public var field: CredentialField
    /// The field's current value (the conflict's later write, or what came after it).
    public var current: CredentialFieldValue
    /// The value that lost.
    public var other: CredentialFieldValue
    /// When the value that lost was written (to the millisecond).
    public var otherWritten: Date
}
