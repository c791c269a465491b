import Foundation
import Synchronization

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

    /// Unlike sign-in guesses, token calls are not charged before they run: a service's backend
    /// rightly sends many at once from one address (every person's refresh), and charging each in
    /// flight locked it out under load (32 concurrent refreshes drew 429s with no failure at all).
    /// A locked key is refused before anything is checked; a failure is counted after the call. A
    /// burst of concurrent wrong guesses may therefore pass the check together, at most one burst:
    /// what they guess (codes and refresh tokens of 256 random bits, ES256 client secrets) cannot be
    /// guessed anyway; the limit keeps a misbehaving caller from spending the provider's work.
    ///
    /// Only keys this instance saw fail within their `forgetAfter` are looked up, so a good call
    /// costs no database read; a key that failed only through other instances is learnt from the
    /// first failure here (whose charge finds it locked).
    func limitingFailures<T>(
        _ form: [String: String],
        from address: String?,
        _ call: () async -> Result<T, OAuthError>
    ) async -> Result<T, OAuthError> {
        let keys: [ThrottleKey]
        do {
            keys = try await tokenThrottleKeys(clientId: form["client_id"] ?? "", address: address)
            let now = nowMilliseconds
            let watched = failingTokenKeys.withLock { watch in
                keys.filter { (watch[$0.key] ?? 0) > now }
            }
            try await refuseLocked(watched)
        } catch let error as ProviderError where error.code == .tooManyAttempts {
            let seconds = error.retryAfter ?? 1
            return .failure(
                OAuthError(
                    "invalid_request",
                    "Too many failed requests from this address. Try again in \(ThrottlePolicy.describe(seconds: seconds)).",
                    status: 429,
                    retryAfter: seconds
                )
            )
        } catch {
            return .failure(.init("server_error", "The request could not be completed.", status: 500))
        }
        let result = await call()
        if case .failure(let error) = result, error.error != "server_error" {  // a server error is not the caller's
            // Counts the failure; a key this failure locks refuses the next call.
            let now = nowMilliseconds
            failingTokenKeys.withLock { watch in
                if watch.count > 10_000 { watch = watch.filter { $0.value > now } }
                for key in keys { watch[key.key] = now + key.policy.forgetAfter + key.policy.maxLockout }
            }
            try? await chargeAttempt(keys)
            await pruneAttempts()
        }
        return result
    }

    /// Throws ``ProviderError`` `.tooManyAttempts` while one of `keys` is locked; reads only.
    func refuseLocked(_ keys: [ThrottleKey]) async throws {
        guard !keys.isEmpty else { return }
        let now = nowMilliseconds
        let until = try await read { connection in
            var latest: Int64 = 0
            for key in keys {
                let locked = try await connection.fetchOne(
                    Int64.self,
                    "SELECT locked_until FROM sign_in_attempts WHERE throttle_key = ?",
                    .text(key.key)
                )
                latest = max(latest, locked ?? 0)
            }
            return latest
        }
        guard until > now else { return }
        let seconds = max(1, (until - now + 999) / 1000)
        throw ProviderError(
            .tooManyAttempts,
            "Too many failed requests. Try again in \(ThrottlePolicy.describe(seconds: seconds)).",
            details: seconds  // retryAfter
        )
    }
}
