public import _KeyhavenSupport

@_exported public import struct _KeyhavenSupport.KeyhavenError

/// Why a private breach check failed. Never a false "not breached": every answer the client cannot
/// verify is one of these. Never contains a password, a hash, an OPRF output or the server's key.
public typealias BreachPSIError = KeyhavenError<BreachPSIErrorDomain>

/// The domain of ``BreachPSIError``.
public enum BreachPSIErrorDomain: KeyhavenErrorDomain {}

extension BreachPSIError.Code {
    /// A request that is not 52 bytes of version, prefix and a P-384 point (server side).
    public static var malformedRequest: Self { Self("malformedRequest") }
    /// A response whose header, evaluation or entries cannot be read, or whose entries are not in
    /// strictly ascending order.
    public static var malformedResponse: Self { Self("malformedResponse") }
    /// A request or response of a wire version this build does not speak.
    public static var unsupportedVersion: Self { Self("unsupportedVersion") }
    /// The response is for another bucket than the one asked for.
    public static var wrongBucket: Self { Self("wrongBucket") }
    /// The response names a key other than the published one the client trusts.
    public static var keyChanged: Self { Self("keyChanged") }
    /// The server publishes a key other than the one pinned (`--breach-psi-key`); nothing was
    /// sent to it.
    public static var keyNotPinned: Self { Self("keyNotPinned") }
    /// A breach-PSI server's URL that is not `https://` (or `http://` to this machine).
    public static var invalidURL: Self { Self("invalidURL") }
    /// The server asked the client to slow down (429) for longer than the client waits in all.
    public static var rateLimited: Self { Self("rateLimited") }
    /// The proof does not show that the published key evaluated this request's element.
    public static var badProof: Self { Self("badProof") }
    /// The response has fewer entry bytes than its count says.
    public static var truncatedBucket: Self { Self("truncatedBucket") }
    /// The response holds more entries than a bucket may (or bytes beyond its count).
    public static var oversizedBucket: Self { Self("oversizedBucket") }
    /// A server key or public key that cannot be read.
    public static var invalidKey: Self { Self("invalidKey") }
    /// The breach-PSI server could not be reached (nothing was answered); not retried.
    public static var unreachable: Self { Self("unreachable") }
    /// The server answered with an HTTP error (a 429 when its rate limit is reached).
    public static var serverError: Self { Self("serverError") }
    /// The server publishes parameters this build does not speak (bucket count, entry length).
    public static var unsupportedParameters: Self { Self("unsupportedParameters") }
    /// The corpus a bucket file is built from holds no SHA-1 (nothing is written).
    public static var emptyInput: Self { Self("emptyInput") }
    /// Reading or writing the key file failed.
    public static var io: Self { Self("io") }
    /// The check's task was cancelled (while it waited out a 429, say): nothing was concluded.
    public static var cancelled: Self { Self("cancelled") }
}
