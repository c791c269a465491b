public import _KeyhavenSupport

@_exported public import struct _KeyhavenSupport.KeyhavenError

/// Why no password can be generated for a set of rules. The message says what is impossible and
/// how the rules could be changed; it never contains a password.
public typealias PasswordGenerationError = KeyhavenError<PasswordGenerationErrorDomain>

/// The domain of ``PasswordGenerationError``.
public enum PasswordGenerationErrorDomain: KeyhavenErrorDomain {}

extension PasswordGenerationError.Code {
    /// `minlength` is greater than `maxlength`.
    public static var minLengthExceedsMaxLength: Self { Self("minLengthExceedsMaxLength") }
    /// A `required` line has no character the password may contain.
    public static var requiredNotAllowed: Self { Self("requiredNotAllowed") }
    /// More `required` lines than `maxlength` characters.
    public static var tooManyRequiredLines: Self { Self("tooManyRequiredLines") }
    /// The repeat / sequence limits cannot be met with the allowed characters at this length.
    public static var limitsUnsatisfiable: Self { Self("limitsUnsatisfiable") }
}
