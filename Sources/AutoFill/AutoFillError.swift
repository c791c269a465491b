public import _KeyhavenSupport

@_exported public import struct _KeyhavenSupport.KeyhavenError

/// A protocol error: one of Apple's `ASExtensionError` codes or Keyhaven's own, with a message a
/// person can read (never a secret). The codes' names are the protocol's `code` strings
/// (docs/autofill-protocol.md); the description is `code: message`.
public typealias AutoFillError = KeyhavenError<AutoFillErrorDomain>

/// The domain of ``AutoFillError``.
public enum AutoFillErrorDomain: KeyhavenErrorDomain {
    public static var descriptionIncludesCode: Bool { true }
}

extension AutoFillError {
    /// `{"code": …, "localizedFailureReason": …}`.
    public var json: JSONValue {
        JSONValue(encoding: BrowserReply.Failure(self))
    }
}

extension AutoFillError.Code {
    // ASExtensionError
    public static var failed: Self { Self("failed") }
    public static var userCanceled: Self { Self("userCanceled") }
    public static var userInteractionRequired: Self { Self("userInteractionRequired") }
    public static var credentialIdentityNotFound: Self { Self("credentialIdentityNotFound") }
    public static var matchedExcludedCredential: Self { Self("matchedExcludedCredential") }
    // Keyhaven
    public static var locked: Self { Self("locked") }
    public static var notPaired: Self { Self("notPaired") }
    public static var originNotAllowed: Self { Self("originNotAllowed") }
    public static var badRequest: Self { Self("badRequest") }
    /// `unlock` with a wrong master password.
    public static var wrongPassword: Self { Self("wrongPassword") }
    /// A passkey request that asks to verify the person after the unlock grew old: the
    /// chooser asks for the master password again.
    public static var userVerificationRequired: Self { Self("userVerificationRequired") }
}
