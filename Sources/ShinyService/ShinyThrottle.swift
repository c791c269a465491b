public import Foundation
import Synchronization

/// How many wrong guesses one key (an account, or a client address) may make before it is locked,
/// and for how long: after ``allowedFailures`` each further wrong guess locks the key for
/// `firstLockout · 2^(failures − allowedFailures)`, at most ``maxLockout``; a key quiet for
/// ``forgetAfter`` starts over.
public struct ShinyThrottlePolicy: Sendable, Hashable {
    public var allowedFailures: Int
    public var firstLockout: TimeInterval
    public var maxLockout: TimeInterval
    public var forgetAfter: TimeInterval

    public init(allowedFailures: Int, firstLockout: TimeInterval, maxLockout: TimeInterval, forgetAfter: TimeInterval) {
        self.allowedFailures = allowedFailures
        self.firstLockout = firstLockout
        self.maxLockout = maxLockout
        self.forgetAfter = forgetAfter
    }

    /// Per account: 5 wrong passwords or codes, then 30 s, 1 min, 2 min … at most 15 min; forgotten
    /// after a quiet day. About 100 guesses a day at most, for a password or a 6-digit code.
    public static let account = ShinyThrottlePolicy(
        allowedFailures: 5,
        firstLockout: 30,
        maxLockout: 900,
        forgetAfter: 86_400
    )

    /// Per client address (many accounts guessed from one place): 50, then the same ladder;
    /// forgotten after a quiet hour.
    public static let address = ShinyThrottlePolicy(
        allowedFailures: 50,
        firstLockout: 30,
        maxLockout: 900,
        forgetAfter: 3_600
    )

    /// No limit.
    public static let unlimited = ShinyThrottlePolicy(
        allowedFailures: .max,
        firstLockout: 0,
        maxLockout: 0,
        forgetAfter: 0
    )

    func lockout(afterFailures failures: Int) -> TimeInterval {
        guard failures >= allowedFailures, firstLockout > 0 else { return 0 }
        return min(firstLockout * pow(2, Double(min(failures - allowedFailures, 40))), maxLockout)
    }
}

/// shiny's guessing limits for everything that checks a password or an authenticator code: the
/// sign-in page and API, the change-password page, the account-modification extension (which
/// checks the current password), and the step-up page's codes. Every attempt is charged to the
/// account and to the client's address *before* anything is checked (so a burst of concurrent
/// guesses is counted), and refunded when it was not a wrong guess; while a key is locked nothing
/// is checked at all. In memory: a restart forgets the counts (a real service keeps them with its
/// users, as Keyhaven's provider does).
///
/// A stranger can lock an account this way (for at most ``ShinyThrottlePolicy/maxLockout`` at a
/// time); Keyhaven's provider shows how to spare the owner: a device cookie from an earlier
/// success gets a counter of its own.
final class ShinyThrottle: Sendable {
    struct Key: Sendable {
        var key: String
        var policy: ShinyThrottlePolicy
    }

    struct Counter {
        var failures: Int
        var lockedUntil: Date
        var forgetAt: Date
    }

    /// The attempt was refused: a key is locked for `retryAfter` more seconds.
    struct Locked: Error {
        var retryAfter: Int

        var message: String {
            let wait = retryAfter < 60 ? "\(retryAfter) seconds" : "\((retryAfter + 59) / 60) minutes"
            return "Too many attempts. Try again in \(wait)."
        }
    }

    let accountPolicy: ShinyThrottlePolicy
    let addressPolicy: ShinyThrottlePolicy
    let now: @Sendable () -> Date
    private let counters = Mutex<[String: Counter]>([:])

    init(account: ShinyThrottlePolicy, address: ShinyThrottlePolicy, now: @escaping @Sendable () -> Date) {
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
                counter.lockedUntil = now.addingTimeInterval(key.policy.lockout(afterFailures: counter.failures))
                counter.forgetAt = max(now, counter.lockedUntil).addingTimeInterval(key.policy.forgetAfter)
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
