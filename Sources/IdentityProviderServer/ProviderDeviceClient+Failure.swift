extension ProviderDeviceClient {
    /// Why a call to the provider's device API failed. Messages are the provider's or name the
    /// provider's URL; never a password, a code or a device token.
    ///
    /// A struct with an opaque ``Code`` so new cases never break callers; errors compare by code.
    public struct Failure: Error, Hashable, Sendable, CustomStringConvertible {
        public struct Code: Hashable, Sendable, CustomStringConvertible {
            private enum Base: String {
                case unreachable, notAProvider, badResponse, rejected, invalidCredentials, secondFactorRequired
                case tooManyAttempts, unauthorized, crossOrigin
            }

            private let base: Base
            private init(_ base: Base) { self.base = base }
            public var description: String { base.rawValue }

            /// The provider could not be reached.
            public static let unreachable = Code(.unreachable)
            /// The URL does not publish a Sign in with Keyhaven discovery document.
            public static let notAProvider = Code(.notAProvider)
            /// The provider answered something that is not its device API.
            public static let badResponse = Code(.badResponse)
            /// The provider refused the call (``Failure/providerError`` holds its error code).
            public static let rejected = Code(.rejected)
            /// The e-mail address, password or one-time code is not right (`invalid_credentials`).
            public static let invalidCredentials = Code(.invalidCredentials)
            /// The password was right and a one-time code is needed (`second_factor_required`).
            public static let secondFactorRequired = Code(.secondFactorRequired)
            /// Sign-in is locked for a while (`too_many_attempts`).
            public static let tooManyAttempts = Code(.tooManyAttempts)
            /// The device token is missing, revoked or expired (`invalid_token`): sign in again.
            public static let unauthorized = Code(.unauthorized)
            /// The provider's URL is plain http off loopback, or its discovery document names another
            /// issuer or endpoints on another origin: nothing (no password) is sent there.
            public static let crossOrigin = Code(.crossOrigin)

            /// The code for the provider's wire `error` (`.rejected` for one not listed here).
            init(providerError: String?) {
                switch providerError {
                case "invalid_credentials": self = .invalidCredentials
                case "second_factor_required": self = .secondFactorRequired
                case "too_many_attempts": self = .tooManyAttempts
                case "invalid_token": self = .unauthorized
                default: self = .rejected
                }
            }
        }

        public var code: Code
        public var message: String
        /// The provider's `error` (`invalid_credentials`, `second_factor_required`…), if it gave one.
        public var providerError: String?

        public init(_ code: Code, _ message: String, providerError: String? = nil) {
            self.code = code
            self.message = message
            self.providerError = providerError
        }

        /// The provider refused the call with `providerError` (its wire `error`, if any).
        init(providerError: String?, _ message: String) {
            self.init(Code(providerError: providerError), message, providerError: providerError)
        }

        public var description: String { message }

        public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
        public func hash(into hasher: inout Hasher) { hasher.combine(code) }
    }
}
