public import _KeyhavenSupport

@_exported public import struct _KeyhavenSupport.KeyhavenError

/// Why a sync step failed. Messages name items by id only, never a field's value: a record holds
/// passwords, one-time-code secrets and passkeys.
public typealias VaultSyncError = KeyhavenError<VaultSyncErrorDomain>

/// The domain of ``VaultSyncError``: its details are the item concerned, if any.
public enum VaultSyncErrorDomain: KeyhavenErrorDomain {
    public typealias Details = ItemID
    public static var descriptionIncludesCode: Bool { true }
}

extension VaultSyncError {
    /// The item concerned, if any.
    public var item: ItemID? { details }
}

extension VaultSyncError.Code {
    /// Bytes that are not a record in the canonical encoding (truncated, unsorted, a duplicate, an
    /// unknown tag, bytes after the end): refused rather than repaired, so that two replicas can
    /// never read one payload two ways.
    public static var malformedRecord: Self { Self("malformedRecord") }
    /// A saved replica (``SyncReplica/canonicalBytes``) that is not in its canonical encoding:
    /// damaged or altered, refused rather than half read.
    public static var malformedReplica: Self { Self("malformedReplica") }
    /// A record of a newer format than this Keyhaven reads: update Keyhaven on this device.
    public static var unsupportedFormat: Self { Self("unsupportedFormat") }
    /// Two records of different items were given to one merge.
    public static var itemMismatch: Self { Self("itemMismatch") }
    /// The item is not on this device.
    public static var unknownItem: Self { Self("unknownItem") }
    /// A sealed item did not open: the wrong vault key, or its ciphertext, id, vault or version was
    /// altered or swapped. Nothing of it is used.
    public static var cannotOpen: Self { Self("cannotOpen") }
    /// Sealing failed (the cryptographic library refused the key or nonce; not expected to happen).
    public static var cannotSeal: Self { Self("cannotSeal") }
    /// The server refused a write for a reason a retry cannot fix (see the message).
    public static var rejected: Self { Self("rejected") }
    /// A join code (``JoinCode``) that is not 16 letters and digits of its alphabet.
    public static var invalidJoinCode: Self { Self("invalidJoinCode") }
    /// A join request or grant whose MAC does not verify under the join code (``DeviceJoin``): it
    /// was altered on the way (a server substituting a key), or belongs to another code. Nothing
    /// of it is used.
    public static var joinMismatch: Self { Self("joinMismatch") }
}
