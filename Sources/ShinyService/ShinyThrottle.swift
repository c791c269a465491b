import Foundation
import Synchronization
import _KeyhavenSupport

/// shiny's guessing limits for everything that checks a password or an authenticator code: the
/// sign-in page and API, the change-password page, the account-modification extension (which
/// checks the current password), and the step-up page's codes. Every attempt is charged to the
/// account and to the client's address *before* anything is checked (so a burst of concurrent
/// guesses is counted), and refunded when it was not a wrong guess; while a key is locked nothing
/// is checked at all. In memory: a restart forgets the counts (a real service keeps them with its
/// users, as Keyhaven's provider does).
///
/// The ladder is ``ThrottlePolicy``, the same as Keyhaven's provider's. A stranger can lock an
/// account this way (for at most ``ThrottlePolicy/maxLockout`` at a time); Keyhaven's provider
/// shows how to spare the owner: a device cookie from an earlier success gets a counter of its own.
final class ShinyThrottle: Sendable {
    struct Key: Sendable {
        var key: String
        var policy: ThrottlePolicy
    }

    struct Counter {
        var failures: Int64
        var lockedUntil: Date
        var forgetAt: Date
    }

    /// The attempt was refused: a key is locked for `retryAfter` more seconds.
    struct Locked: Error {
        var retryAfter: Int

        var message: String {
            "Too many attempts. Try again in \(ThrottlePolicy.describe(seconds: Int64(retryAfter)))."
        }
    }

    let accountPolicy: ThrottlePolicy
    let addressPolicy: ThrottlePolicy
    let now: @Sendable () -> Date
    private let counters = Mutex<[String: Counter]>([:])

    init(account: ThrottlePolicy, address: ThrottlePolicy, now: @escaping @Sendable () -> Date) {
        accountPolicy = account
        addressPolicy = address
        self.now = now
    }

    /// The keys of an attempt on `account` from `address`.
    func keys(account: String, address: String?) -> [Key] {
        var keys = [Key(key: "account:" + account, policy: accountPolicy)]
        if let address, !address.isEmpty { keys.append(Key(key: "address:" + address, policy: addressPolicy)) }
        return keys.filter { $0.policy != .unlimited }
    }

    /// Charges one attempt to every key, or charges nothing and throws while one is locked.
    func charge(_ keys: [Key]) throws(Locked) {
        let now = now()
        let locked: Date? = counters.withLock { counters in
            if counters.count > 10_000 { counters = counters.filter { $0.value.forgetAt > now } }
            for key in keys {
                if let counter = counters[key.key], counter.lockedUntil > now { return counter.lockedUntil }
            }
            for key in keys {
                var counter = counters[key.key] ?? Counter(failures: 0, lockedUntil: .distantPast, forgetAt: now)
                if counter.forgetAt <= now { counter.failures = 0 }
                counter.failures += 1
                let lockout = key.policy.lockout(afterFailures: counter.failures)
                counter.lockedUntil = now.addingTimeInterval(seconds(lockout))
                counter.forgetAt = max(now, counter.lockedUntil).addingTimeInterval(seconds(key.policy.forgetAfter))
                counters[key.key] = counter
            }
            return nil
        }
        if let locked { throw Locked(retryAfter: max(1, Int(locked.timeIntervalSince(now).rounded(.up)))) }
    }

    /// Settles a charged attempt that was not a wrong guess: a success clears its account's count;
    /// otherwise (the right password, its code still to come) the account is refunded. The address
    /// is only refunded (one good sign-in must not clear the count of someone guessing many accounts
    /// from there). A lock the refunded attempt set is lifted.
    func refund(_ keys: [Key], succeeded: Bool) {
        counters.withLock { counters in
            for key in keys {
                if succeeded && key.key.hasPrefix("account:") {
                    counters[key.key] = nil
                } else if var counter = counters[key.key], counter.failures > 0 {
                    counter.failures -= 1
                    if counter.failures < key.policy.allowedFailures { counter.lockedUntil = .distantPast }
                    counters[key.key] = counter
                }
            }
        }
    }
}

/// The policy's milliseconds as a `Date` offset.
private func seconds(_ milliseconds: Int64) -> TimeInterval { TimeInterval(milliseconds) / 1000 }
