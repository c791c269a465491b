public import _KeyhavenSupport

/// Why `keyhaven sync` refused or failed. Messages say what to do next and never hold a key,
/// token or credential.
public typealias SyncError = KeyhavenError<SyncErrorDomain>

/// The domain of ``SyncError``.
public enum SyncErrorDomain: KeyhavenErrorDomain {
    public static var descriptionIncludesCode: Bool { true }
}

extension SyncError.Code {
    /// Sync is not on for this vault: `keyhaven sync enable --server URL` first.
    public static var notEnabled: Self { Self(#function) }
    /// Sync is on already (with the server named in the message).
    public static var alreadyEnabled: Self { Self(#function) }
    /// The vault is locked.
    public static var locked: Self { Self(#function) }
    /// Another sync of this vault is running in this process, or another process synced it
    /// meanwhile (nothing was written: sync again).
    public static var busy: Self { Self(#function) }
    /// The server could not be reached or did not answer: nothing is lost, every change stays
    /// pending and goes out with the next sync.
    public static var unreachable: Self { Self(#function) }
    /// The server URL cannot be used (not https, or http to another machine; user info, query).
    public static var invalidServer: Self { Self(#function) }
    /// The server refused (this device revoked, a request it would not take, a failure of its
    /// own); the message carries its reason. Changes stay pending.
    public static var refused: Self { Self(#function) }
    /// A value given is not usable (an empty device name).
    public static var invalidInput: Self { Self(#function) }
    /// The saved sync state cannot be read.
    public static var damaged: Self { Self(#function) }
    /// The vault could not be read or written.
    public static var storage: Self { Self(#function) }
    /// No device approved the join in time (or the wait was stopped): nothing changed on this
    /// device; `keyhaven sync join` again makes a new code.
    public static var notApproved: Self { Self(#function) }
    /// A join request or approval does not match the join code: altered on the way (a server
    /// substituting its own key), or the two devices use different URLs for the server. Nothing
    /// was approved or used.
    public static var mismatch: Self { Self(#function) }
    /// Not found: the server has no such join request (a mistyped or expired code) or device, or
    /// no credential of this vault has the id named.
    public static var notFound: Self { Self(#function) }
}
