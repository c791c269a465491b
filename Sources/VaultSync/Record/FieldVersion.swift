/// One committed write of one field: its value, its stamp, and the versions it replaced.
///
/// The stamp is unique across every device (``HLCTimestamp``), so a version is named by it. The
/// parents are the stamps the writing device saw as the field's current value(s) when it wrote:
/// one for an edit, none for a first value, several when a person resolves a conflict (as a git
/// merge commit has several). They are how a merge finds the common ancestor of two values and
/// tells an edit made on top of another (a superseded value: plain history) from two edits made
/// without seeing each other (a conflict: see ``SyncRecord/conflicts``).
public struct FieldVersion: Hashable, Sendable {
    public var value: FieldValue
    public var stamp: HLCTimestamp
    /// Sorted, without duplicates.
    public var parents: [HLCTimestamp]

    public init(value: FieldValue, stamp: HLCTimestamp, parents: [HLCTimestamp] = []) {
        self.value = value
        self.stamp = stamp
        self.parents = Array(Set(parents)).sorted()
    }
}
