import Testing
import _KeyhavenSupport

/// The one lockout ladder the provider (`SignInThrottle`) and shiny share.
@Suite struct ThrottlePolicyTests {
    @Test func addressLadderDoublesFromItsOwnThreshold() {
        let policy = ThrottlePolicy.address
        #expect(policy.lockout(afterFailures: 49) == 0)
        #expect((50...52).map { policy.lockout(afterFailures: $0) } == [30_000, 60_000, 120_000])
        #expect(policy.lockout(afterFailures: .max) == policy.maxLockout)
    }

    @Test func noLadderWithoutAFirstLockout() {
        let policy = ThrottlePolicy(allowedFailures: 1, firstLockout: 0, maxLockout: 60_000, forgetAfter: 1_000)
        #expect(policy.lockout(afterFailures: 100) == 0)
    }

    @Test func waitsReadAsSecondsThenWholeMinutesRoundedUp() {
        #expect(ThrottlePolicy.describe(seconds: 1) == "1 second")
        #expect(ThrottlePolicy.describe(seconds: 59) == "59 seconds")
        #expect(ThrottlePolicy.describe(seconds: 60) == "1 minute")
        #expect(ThrottlePolicy.describe(seconds: 61) == "2 minutes")
        #expect(ThrottlePolicy.describe(seconds: 900) == "15 minutes")
    }
}
