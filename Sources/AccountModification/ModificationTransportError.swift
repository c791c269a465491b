/// Thrown by transports: what failed, and whether the request may have reached the service.
/// Messages name the endpoint, never a password or a token.
///
/// A struct with an opaque ``Code`` so new cases never break callers; errors compare by code.
public struct ModificationTransportError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String {
            case insecureEndpoint, unreachable, timedOut, rejected, badResponse
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }
        public var description: String { base.rawValue }

        /// The endpoint is not https (nor loopback): nothing was sent.
        public static let insecureEndpoint = Code(.insecureEndpoint)
        /// The connection failed (refused, DNS, reset…).
        public static let unreachable = Code(.unreachable)
        /// The service did not answer in time.
        public static let timedOut = Code(.timedOut)
        /// The service answered with an HTTP error.
        public static let rejected = Code(.rejected)
        /// The answer was cut off, or is not the account-modification protocol.
        public static let badResponse = Code(.badResponse)
    }

    public var code: Code
    public var message: String
    /// False when the service certainly did not receive the request (connection refused, DNS).
    public var delivered: Bool

    public init(_ code: Code, _ message: String, delivered: Bool) {
        self.code = code
        self.message = message
        self.delivered = delivered
    }

    public var description: String { message }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code && lhs.delivered == rhs.delivered }
    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(delivered)
    }
}
