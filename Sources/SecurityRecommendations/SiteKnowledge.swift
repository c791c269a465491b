public import Foundation

/// What an audit learned about one site (an origin): where to change its password, whether it
/// offers one-tap upgrades, or that it could not be reached — with the time it counts until.
///
/// The vault keeps it (sealed, per site) so the next audit or unlock starts from it instead of
/// asking the network again; a site that answered is asked again after
/// ``Policy/answeredFor``, one that did not after a backoff that doubles with each failure
/// (``Policy/expiry(of:failures:at:)``).
public struct SiteKnowledge: Sendable, Codable, Equatable {
    public enum Status: String, Sendable, Codable {
        /// Every lookup got an HTTP answer.
        case answered
        /// A lookup failed for a network error or took longer than the audit allows per site.
        case unreachable
        /// Not contacted: the network looked unreachable (``SiteLookups/Limits/networkDownAfter``).
        case notAsked
    }

    /// The origin, as ``ChangePasswordDiscovery/origin(for:)`` names it.
    public var origin: String
    public var status: Status
    /// The site's `/.well-known/change-password` page, when its status codes are trustworthy and
    /// it has one; after a failed lookup, the last one known.
    public var changePasswordURL: String?
    /// Its account-modification manifest's offer (`false`s when it publishes none); nil when it
    /// was never read. After a failed lookup, the last one known.
    public var upgrade: UpgradeOffer?
    public var checked: Date
    /// When to ask again.
    public var expires: Date
    /// Lookups in a row that did not get an answer (0 once answered).
    public var failures: Int

    public init(
        origin: String,
        status: Status,
        changePasswordURL: String? = nil,
        upgrade: UpgradeOffer? = nil,
        checked: Date,
        expires: Date,
        failures: Int = 0
    ) {
        self.origin = origin
        self.status = status
        self.changePasswordURL = changePasswordURL
        self.upgrade = upgrade
        self.checked = checked
        self.expires = expires
        self.failures = failures
    }

    /// Whether it still stands at `now` (not yet due to be asked again).
    public func isCurrent(at now: Date) -> Bool { now < expires }

    /// How long knowledge counts.
    public struct Policy: Sendable, Equatable {
        /// A site that answered is asked again after `answeredFor`; one that did not, after
        /// `firstRetry` the first time, twice as long after each further failure, but never later
        /// than `longestRetry`.
        public var answeredFor, firstRetry, longestRetry: TimeInterval

        public init(answeredFor: TimeInterval, firstRetry: TimeInterval, longestRetry: TimeInterval) {
            (self.answeredFor, self.firstRetry, self.longestRetry) = (answeredFor, firstRetry, longestRetry)
        }

        /// A week for answers; 5 minutes, 10, 20 … up to a day for sites that did not answer.
        public static let standard = Policy(answeredFor: 7 * 86_400, firstRetry: 300, longestRetry: 86_400)

        /// When knowledge with `status` learned at `now` after `failures` failed lookups in a row expires.
        public func expiry(of status: Status, failures: Int, at now: Date) -> Date {
            guard status != .answered else { return now.addingTimeInterval(answeredFor) }
            let doublings = Double(min(max(failures - 1, 0), 30))
            return now.addingTimeInterval(min(firstRetry * pow(2, doublings), longestRetry))
        }
    }
}
