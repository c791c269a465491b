public import _KeyhavenSupport

@_exported public import struct _KeyhavenSupport.KeyhavenError

/// Why a TOTP secret or `otpauth://` URI cannot be used. Messages never contain the secret.
public typealias TOTPError = KeyhavenError<TOTPErrorDomain>

/// The domain of ``TOTPError``.
public enum TOTPErrorDomain: KeyhavenErrorDomain {}

extension TOTPError.Code {
    /// An `otpauth://` URI without a `secret` parameter.
    public static var missingSecret: Self { Self("missingSecret") }
    /// The secret is not base32 (RFC 4648), or is empty.
    public static var invalidSecret: Self { Self("invalidSecret") }
    /// Digits outside 6…10, or a period that is not positive.
    public static var unsupportedParameters: Self { Self("unsupportedParameters") }
}
