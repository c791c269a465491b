public import _KeyhavenSupport

@_exported public import struct _KeyhavenSupport.KeyhavenError

/// Thrown by transports: what failed, and whether the request may have reached the service.
/// Messages name the endpoint, never a password or a token.
public typealias ModificationTransportError = KeyhavenError<ModificationTransportErrorDomain>

/// The domain of ``ModificationTransportError``: its details are
/// ``ModificationTransportError/delivered``.
public enum ModificationTransportErrorDomain: KeyhavenErrorDomain {
    public typealias Details = Bool
}

extension ModificationTransportError {
    /// False when the service certainly did not receive the request (connection refused, DNS).
    public var delivered: Bool { details ?? true }

    public init(_ code: Code, _ message: String, delivered: Bool, file: String = #fileID, line: UInt = #line) {
        self.init(code, message, details: delivered, file: file, line: line)
    }
}

extension ModificationTransportError.Code {
    /// The endpoint is not https (nor loopback): nothing was sent.
    public static var insecureEndpoint: Self { Self("insecureEndpoint") }
    /// The connection failed (refused, DNS, reset…).
    public static var unreachable: Self { Self("unreachable") }
    /// The service did not answer in time.
    public static var timedOut: Self { Self("timedOut") }
    /// The service answered with an HTTP error.
    public static var rejected: Self { Self("rejected") }
    /// The answer was cut off, or is not the account-modification protocol.
    public static var badResponse: Self { Self("badResponse") }
    /// The service does not know the request id (HTTP 404 on `requests/{id}`): it never recorded
    /// the request, so the request changed nothing.
    public static var unknownRequest: Self { Self("unknownRequest") }
}
