import Foundation

/// How many wrong guesses one key (an account, a device, or a client address) may make before it
/// is locked out, and for how long: the one lockout ladder of Keyhaven's provider
/// (`SignInThrottle`) and of shiny.
///
/// Once the count reaches ``allowedFailures`` every further failure locks the key for
/// `firstLockout · 2^(failures − allowedFailures)`, at most ``maxLockout``. A key that stays quiet
/// for ``forgetAfter`` after its last failure (or the end of its lockout) starts over. Where the
/// counts are kept (a table, memory) is the caller's; this is only the policy.
public struct ThrottlePolicy: Sendable, Hashable {
    public var allowedFailures: Int64
    /// Milliseconds.
    public var firstLockout: Int64
    /// Milliseconds.
    public var maxLockout: Int64
    /// Milliseconds.
    public var forgetAfter: Int64

    public init(allowedFailures: Int64, firstLockout: Int64, maxLockout: Int64, forgetAfter: Int64) {
        self.allowedFailures = allowedFailures
        self.firstLockout = firstLockout
        self.maxLockout = maxLockout
        self.forgetAfter = forgetAfter
    }

    /// Per account: 5 wrong guesses (passwords or codes), then 30 s, 1 min, 2 min … at most 15 min;
    /// forgotten after a quiet day. At most ~100 guesses a day for one account, enough for neither
    /// a password nor a 6-digit code.
    public static let account = ThrottlePolicy(
        allowedFailures: 5,
        firstLockout: 30_000,
        maxLockout: 900_000,
        forgetAfter: 86_400_000
    )

    /// Per client address (many accounts from one place): 50 wrong guesses, then the same ladder;
    /// forgotten after a quiet hour (an office behind one address should not stay locked all day).
    public static let address = ThrottlePolicy(
        allowedFailures: 50,
        firstLockout: 30_000,
        maxLockout: 900_000,
        forgetAfter: 3_600_000
    )

    /// No limit (tests that sign in many times, or a service behind a gateway that limits).
    public static let unlimited = ThrottlePolicy(
        allowedFailures: .max,
        firstLockout: 0,
        maxLockout: 0,
        forgetAfter: 0
    )

    /// How long a key is locked after its `failures`-th failure, in milliseconds (0: not locked).
    public func lockout(afterFailures failures: Int64) -> Int64 {
        guard failures >= allowedFailures, firstLockout > 0 else { return 0 }
        let exponent = min(failures - allowedFailures, 40)
        let raw = Double(firstLockout) * pow(2, Double(exponent))
        return Int64(min(raw, Double(maxLockout)))
    }

    /// A wait for a person: `1 second`, `30 seconds`, then whole minutes rounded up (`1 minute`,
    /// `15 minutes`).
    public static func describe(seconds: Int64) -> String {
        if seconds < 60 { return seconds == 1 ? "1 second" : "\(seconds) seconds" }
        let minutes = (seconds + 59) / 60
        return minutes == 1 ? "1 minute" : "\(minutes) minutes"
    }
}
