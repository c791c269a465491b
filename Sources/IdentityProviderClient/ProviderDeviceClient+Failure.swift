public import _KeyhavenSupport

@_exported public import struct _KeyhavenSupport.KeyhavenError

extension ProviderDeviceClient {
    /// Why a call to the provider's device API failed. Messages are the provider's or name the
    /// provider's URL; never a password, a code or a device token.
    public typealias Failure = KeyhavenError<ProviderDeviceClientFailureDomain>
}

/// The domain of ``ProviderDeviceClient/Failure``: its details are the provider's wire `error`
/// (``ProviderDeviceClient/Failure/providerError``).
public enum ProviderDeviceClientFailureDomain: KeyhavenErrorDomain {
    public typealias Details = String
    public static var errorName: String { "ProviderDeviceClient.Failure" }
}

extension ProviderDeviceClient.Failure {
    /// The provider's `error` (`invalid_credentials`, `second_factor_required`…), if it gave one.
    public var providerError: String? { details }

    public init(_ code: Code, _ message: String, providerError: String?, file: String = #fileID, line: UInt = #line) {
        self.init(code, message, details: providerError, file: file, line: line)
    }

    /// The provider refused the call with `providerError` (its wire `error`, if any).
    init(providerError: String?, _ message: String, file: String = #fileID, line: UInt = #line) {
        self.init(Code(providerError: providerError), message, details: providerError, file: file, line: line)
    }
}

extension ProviderDeviceClient.Failure.Code {
    /// The provider could not be reached.
    public static var unreachable: Self { Self("unreachable") }
    /// The URL does not publish a Sign in with Keyhaven discovery document.
    public static var notAProvider: Self { Self("notAProvider") }
    /// The provider answered something that is not its device API.
    public static var badResponse: Self { Self("badResponse") }
    /// The provider refused the call (``ProviderDeviceClient/Failure/providerError`` holds its error code).
    public static var rejected: Self { Self("rejected") }
    /// The e-mail address, password or one-time code is not right (`invalid_credentials`).
    public static var invalidCredentials: Self { Self("invalidCredentials") }
    /// The password was right and a one-time code is needed (`second_factor_required`).
    public static var secondFactorRequired: Self { Self("secondFactorRequired") }
    /// Sign-in is locked for a while (`too_many_attempts`).
    public static var tooManyAttempts: Self { Self("tooManyAttempts") }
    /// The device token is missing, revoked or expired (`invalid_token`): sign in again.
    public static var unauthorized: Self { Self("unauthorized") }
    /// The provider's URL is plain http off loopback, or its discovery document names another
    /// issuer or endpoints on another origin: nothing (no password) is sent there.
    public static var crossOrigin: Self { Self("crossOrigin") }

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
