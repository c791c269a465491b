public import Crypto
public import Foundation
public import _KeyhavenSupport

/// How a provider behaves. Every clock read and every random byte goes through `now` and
/// `randomBytes`, so flows are testable.
public struct ProviderConfiguration: Sendable {
    /// The `iss` of every token and the `aud` a `client_secret` must name. Any string: tests that
    /// drive clients pinned to Apple set `https://appleid.apple.com`.
    public var issuer: String
    /// Where the endpoints are reachable (discovery, form actions); the issuer when nil.
    public var publicURL: String?
    /// Development only: accept `http://` loopback redirect URIs and notification URLs. Apple
    /// requires HTTPS with a domain name, and so does the provider by default.
    public var allowInsecureURLs = false
    /// Identity-token lifetime (86,400 s, as observed on Apple's tokens).
    public var idTokenLifetime: Int64 = 86_400
    public var codeLifetime: Int64 = 300
    public var accessTokenLifetime: Int64 = 3_600
    public var sessionLifetime: Int64 = 8 * 3_600
    /// Team transfers: how long `transfer_sub` is carried and exchangeable.
    public var transferWindow: Int64 = 60 * 86_400
    /// Compatibility switch: `email_verified`/`is_private_email` as strings, as Apple sent them until
    /// 2024. Booleans otherwise.
    public var stringBooleans = false
    /// scrypt cost for user passwords (N = 2^passwordLogN).
    public var passwordLogN = 15
    public var notificationRetry = RetryPolicy()
    /// Seals the signing keys, the access-token key and one-time-code secrets in the database
    /// (AES-256-GCM) when set; see ``IdentityProvider``'s `sealStoredSecrets()` and
    /// `resealSecrets(under:)`. Keep it outside the database (a file, a secret store). Without
    /// one they are stored in the clear: for in-memory databases and tests; `keyhaven idp` always
    /// gives one.
    public var secretsKey: SymmetricKey?
    /// Wrong guesses allowed per account before lockouts begin (``SignInThrottle/account``).
    public var accountThrottle = SignInThrottle.account
    /// Wrong guesses allowed per client address, across accounts (``SignInThrottle/address``).
    public var addressThrottle = SignInThrottle.address
    /// Wrong guesses allowed from a known device (a browser given a device cookie on an earlier
    /// success), counted apart from the account's counter for unknown devices.
    public var deviceThrottle = SignInThrottle.account
    /// How long a known-device cookie lasts, in seconds (180 days).
    public var knownDeviceLifetime: Int64 = 180 * 86_400
    /// Failed calls allowed per client address to `/auth/token` and `/auth/revoke` (wrong codes,
    /// refresh tokens or client secrets), across clients.
    public var tokenAddressThrottle = SignInThrottle.tokenAddress
    /// Failed calls allowed per client id from one address to `/auth/token` and `/auth/revoke`.
    public var tokenClientThrottle = SignInThrottle.tokenClient
    public var now: @Sendable () -> Date = { Date() }
    public var randomBytes: @Sendable (Int) -> [UInt8] = { count in
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }

    public init(issuer: String) {
        self.issuer = issuer
    }

    public var baseURL: String {
        var url = publicURL ?? issuer
        while url.hasSuffix("/") { url.removeLast() }
        return url
    }

    /// `privaterelay.<issuer host>`.
    public var relayDomain: String {
        "privaterelay." + (URLComponents(string: issuer)?.host ?? "keyhaven.invalid")
    }
}

/// Exponential backoff for notification delivery: `base · 2^(attempt-1)`, at most `cap`, with up to
/// 20 % jitter, until `giveUpAfter` attempts (then the row stays, marked, for an operator).
public struct RetryPolicy: Sendable, Hashable {
    public var base: Int64 = 1_000
    public var cap: Int64 = 3_600_000
    public var giveUpAfter: Int64 = 200
    /// How long a claimed delivery is reserved for the instance that claimed it (ms).
    public var lease: Int64 = 30_000

    public init(base: Int64 = 1_000, cap: Int64 = 3_600_000, giveUpAfter: Int64 = 200, lease: Int64 = 30_000) {
        self.base = base
        self.cap = cap
        self.giveUpAfter = giveUpAfter
        self.lease = lease
    }

    public func delay(afterAttempt attempt: Int64, jitter: Double) -> Int64 {
        let exponent = min(max(attempt - 1, 0), 40)
        let raw = min(Double(base) * pow(2, Double(exponent)), Double(cap))
        return Int64(raw * (1 + 0.2 * min(max(jitter, 0), 1)))
    }
}

/// An OAuth error as Apple's endpoints return it: `{"error": …, "error_description": …}`.
public struct OAuthError: Error, Hashable, Sendable, Codable, CustomStringConvertible {
    public var error: String
    public var error_description: String
    /// HTTP status (400, 401 for a missing bearer token, 429 while failures are limited).
    public var status: Int
    /// Seconds to wait before trying again (a 429's `Retry-After`).
    public var retryAfter: Int64?

    public init(_ error: String, _ description: String, status: Int = 400, retryAfter: Int64? = nil) {
        self.error = error
        self.error_description = description
        self.status = status
        self.retryAfter = retryAfter
    }

    enum CodingKeys: String, CodingKey {
        case error, error_description
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        error = try container.decode(String.self, forKey: .error)
        error_description = try container.decodeIfPresent(String.self, forKey: .error_description) ?? ""
        status = 400
    }

    public var description: String { "\(error): \(error_description)" }

    public static func invalidRequest(_ description: String) -> OAuthError { .init("invalid_request", description) }
    public static func invalidClient(_ description: String) -> OAuthError { .init("invalid_client", description) }
    public static func invalidGrant(_ description: String) -> OAuthError { .init("invalid_grant", description) }
    public static func invalidScope(_ description: String) -> OAuthError { .init("invalid_scope", description) }
    public static let codeUsed = OAuthError.invalidGrant("The code has already been used.")
    public static let codeExpired = OAuthError.invalidGrant("The code has expired or has been revoked.")
}

/// A failure of an administrative or account operation, for the person running it. Messages never
/// contain a password, a code or a token.
public typealias ProviderError = KeyhavenError<ProviderErrorDomain>

/// The domain of ``ProviderError``: its details are ``ProviderError/retryAfter``.
public enum ProviderErrorDomain: KeyhavenErrorDomain {
    public typealias Details = Int64
}

extension ProviderError {
    /// Seconds until trying again can succeed (`.tooManyAttempts`).
    public var retryAfter: Int64? { details }
}

extension ProviderError.Code {
    /// An argument is missing or not acceptable.
    public static var invalidArgument: Self { Self("invalidArgument") }
    /// No such user, client, key or service.
    public static var notFound: Self { Self("notFound") }
    /// The user, client, key or service exists already.
    public static var alreadyExists: Self { Self("alreadyExists") }
    /// The e-mail address, password or code is not right (the same for an unknown address).
    public static var invalidCredentials: Self { Self("invalidCredentials") }
    /// The password was right and a one-time code is needed.
    public static var secondFactorRequired: Self { Self("secondFactorRequired") }
    /// Sign-in is locked for a while (``ProviderError/retryAfter`` seconds).
    public static var tooManyAttempts: Self { Self("tooManyAttempts") }
    /// The provider cannot do this now (misconfigured: e.g. sealed secrets and no key).
    public static var unavailable: Self { Self("unavailable") }
}
