import Foundation

/// Failure limits of `/auth/token` and `/auth/revoke` (security review M9, issue 13 #8): wrong
/// codes, refresh tokens and client secrets are counted per client address and per client id at
/// that address, like sign-in guesses (``SignInThrottle``); while a counter is locked the call is
/// refused with 429 and `Retry-After`, and nothing is checked. Never per client id alone: anyone can
/// send a service's client id, and must not be able to lock that service out.
extension IdentityProvider {
    /// ``token(_:)`` under the failure limits of the calling `address`.
    public func token(_ form: [String: String], from address: String?) async -> Result<TokenResponse, OAuthError> {
        await limitingFailures(form, from: address) { await self.token(form) }
    }

    /// ``revoke(_:)`` under the failure limits of the calling `address`.
    public func revoke(_ form: [String: String], from address: String?) async -> Result<Void, OAuthError> {
        await limitingFailures(form, from: address) { await self.revoke(form) }
    }

    func limitingFailures<T>(
        _ form: [String: String],
        from address: String?,
        _ call: () async -> Result<T, OAuthError>
    ) async -> Result<T, OAuthError> {
        let keys: [ThrottleKey]
        do {
            keys = try await tokenThrottleKeys(clientId: form["client_id"] ?? "", address: address)
            try await chargeAttempt(keys)
        } catch let error as ProviderError where error.code == .tooManyAttempts {
            let seconds = error.retryAfter ?? 1
            return .failure(
                OAuthError(
                    "invalid_request",
                    "Too many failed requests from this address. Try again in \(Self.describe(seconds: seconds)).",
                    status: 429,
                    retryAfter: seconds
                )
            )
        } catch {
            return .failure(.init("server_error", "The request could not be completed.", status: 500))
        }
        let result = await call()
        switch result {
        case .success:
            try? await refundAttempt(keys, succeeded: true)
        case .failure(let error) where error.error == "server_error":
            try? await refundAttempt(keys, succeeded: false)  // not the caller's failure
        case .failure:
            await pruneAttempts()
        }
        return result
    }
}
