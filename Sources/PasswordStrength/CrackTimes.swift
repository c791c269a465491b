/// zxcvbn's crack-time estimates for four attack scenarios.
public struct CrackTimes: Hashable, Sendable {
    /// Seconds, and zxcvbn's wording ("3 hours", "centuries"), for one scenario.
    public struct Estimate: Hashable, Sendable {
        public var seconds: Double
        public var display: String
    }

    /// Online, throttled: 100 guesses per hour.
    public var onlineThrottling100PerHour: Estimate
    /// Online, unthrottled: 10 guesses per second.
    public var onlineNoThrottling10PerSecond: Estimate
    /// Offline, slow hash (bcrypt, scrypt…): 10^4 guesses per second.
    public var offlineSlowHashing1e4PerSecond: Estimate
    /// Offline, fast hash: 10^10 guesses per second.
    public var offlineFastHashing1e10PerSecond: Estimate

    init(guesses: Double) {
        func estimate(_ rate: Double) -> Estimate {
            let seconds = guesses / rate
            return Estimate(seconds: seconds, display: Self.display(seconds))
        }
        onlineThrottling100PerHour = estimate(100.0 / 3600.0)
        onlineNoThrottling10PerSecond = estimate(10)
        offlineSlowHashing1e4PerSecond = estimate(1e4)
        offlineFastHashing1e10PerSecond = estimate(1e10)
    }

    /// `display_time`: a month is 31 days, a year 12 months; halves round to even as Python's `round`.
    static func display(_ seconds: Double) -> String {
        let minute = 60.0
        let hour = minute * 60
        let day = hour * 24
        let month = day * 31
        let year = month * 12
        let century = year * 100
        func unit(_ value: Double, _ name: String) -> String {
            let rounded = Int(value.rounded(.toNearestOrEven))
            return rounded == 1 ? "1 \(name)" : "\(rounded) \(name)s"
        }
        if seconds < 1 { return "less than a second" }
        if seconds < minute { return unit(seconds, "second") }
        if seconds < hour { return unit(seconds / minute, "minute") }
        if seconds < day { return unit(seconds / hour, "hour") }
        if seconds < month { return unit(seconds / day, "day") }
        if seconds < year { return unit(seconds / month, "month") }
        if seconds < century { return unit(seconds / year, "year") }
        return "centuries"
    }
}
