public import _KeyhavenSupport

@_exported public import struct _KeyhavenSupport.KeyhavenError

/// Why a token was refused or could not be made. Messages name the rule that failed, never a key,
/// a signature or a secret. Its description is `code: message` (the token endpoint quotes it).
public typealias JOSEError = KeyhavenError<JOSEErrorDomain>

/// The domain of ``JOSEError``.
public enum JOSEErrorDomain: KeyhavenErrorDomain {
    public static var descriptionIncludesCode: Bool { true }
}

extension JOSEError.Code {
    /// Not three base64url parts, or a header or payload that is not a JSON object.
    public static var malformed: Self { Self("malformed") }
    /// `none`, `HS256`, or any algorithm other than the one expected.
    public static var unsupportedAlgorithm: Self { Self("unsupportedAlgorithm") }
    /// No key with the token's `kid`.
    public static var unknownKey: Self { Self("unknownKey") }
    /// The key cannot be used (wrong type, too small, not a valid point).
    public static var invalidKey: Self { Self("invalidKey") }
    /// The signature does not verify.
    public static var badSignature: Self { Self("badSignature") }
    /// `exp` is past, beyond the leeway.
    public static var expired: Self { Self("expired") }
    /// `iat`/`nbf` in the future beyond the leeway.
    public static var notYetValid: Self { Self("notYetValid") }
    /// `iss` is not the expected issuer.
    public static var wrongIssuer: Self { Self("wrongIssuer") }
    /// `aud` is not the expected audience.
    public static var wrongAudience: Self { Self("wrongAudience") }
    /// `nonce` is not the one the request carried.
    public static var badNonce: Self { Self("badNonce") }
    /// A required claim is missing or has the wrong type.
    public static var missingClaim: Self { Self("missingClaim") }
    /// A claim is present but not acceptable (a lifetime too long, a wrong subject…).
    public static var invalidClaim: Self { Self("invalidClaim") }
}
