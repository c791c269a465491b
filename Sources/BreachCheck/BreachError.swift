public import _KeyhavenSupport

@_exported public import struct _KeyhavenSupport.KeyhavenError

/// Why a breach check or index operation failed. Never contains a password or a full hash.
public typealias BreachError = KeyhavenError<BreachErrorDomain>

/// The domain of ``BreachError``.
public enum BreachErrorDomain: KeyhavenErrorDomain {}

extension BreachError.Code {
    /// The file is not a Keyhaven breach index.
    public static var notAnIndex: Self { Self("notAnIndex") }
    /// The index is shorter than its header says.
    public static var truncated: Self { Self("truncated") }
    /// The index's header or tables contradict each other or the file (damaged or crafted).
    public static var corrupt: Self { Self("corrupt") }
    /// A newer index format.
    public static var unsupportedVersion: Self { Self("unsupportedVersion") }
    /// The operation needs full hashes (range serving) but the index is compact.
    public static var needsFullIndex: Self { Self("needsFullIndex") }
    /// Reading or writing a file failed.
    public static var io: Self { Self("io") }
    /// The range API could not be reached.
    public static var offline: Self { Self("offline") }
    /// The range API answered with an error or garbage.
    public static var badResponse: Self { Self("badResponse") }
    /// Invalid input (a malformed hash, an empty corpus…).
    public static var invalidInput: Self { Self("invalidInput") }
}
