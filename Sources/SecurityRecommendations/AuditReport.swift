/// What an audit found, as plain values: deterministic for a given vault and breach corpus, and free
/// of passwords unless they were asked for.
public struct AuditReport: Sendable, Encodable {
    public var items: [AuditItem]
    public var summary: AuditSummary

    /// A report of `credentials` credentials with no findings yet (a page's stand-in while they are
    /// being made).
    public static func notYetMade(credentials: Int) -> AuditReport {
        AuditReport(items: [], summary: AuditSummary(credentials: credentials, breachCheck: .pending))
    }
}

/// One kind of problem (Apple's Security Recommendations, plus Bitwarden's "unsecured website").
public enum AuditIssue: String, Sendable, Codable, CaseIterable, Comparable {
    /// The password appears in a breach corpus.
    case breached
    /// The same password is used for services that are not the same backend.
    case reused
    /// Easily guessed: zxcvbn score ≤ 2, or a common / patterned 4- or 6-digit PIN.
    case weak
    /// A login URL on plain `http://` (loopback addresses excepted).
    case unsecured

    public static func < (lhs: Self, rhs: Self) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}

/// How urgent an item is, most urgent first:
///
/// 1. `high`: breached (whatever else applies);
/// 2. `reused-and-weak`;
/// 3. `reused`;
/// 4. `weak`;
/// 5. `unsecured`;
/// 6. `none`: nothing found.
public enum AuditSeverity: String, Sendable, Codable, CodingKeyRepresentable, CaseIterable, Comparable {
    case high
    case reusedAndWeak = "reused-and-weak"
    case reused
    case weak
    case unsecured
    case none

    public init(issues: Set<AuditIssue>) {
        if issues.contains(.breached) {
            self = .high
        } else if issues.contains(.reused) && issues.contains(.weak) {
            self = .reusedAndWeak
        } else if issues.contains(.reused) {
            self = .reused
        } else if issues.contains(.weak) {
            self = .weak
        } else if issues.contains(.unsecured) {
            self = .unsecured
        } else {
            self = .none
        }
    }

    public static func < (lhs: Self, rhs: Self) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }

    /// Words for reports.
    public var title: String {
        switch self {
        case .high: return "High priority: seen in a data breach"
        case .reusedAndWeak: return "Reused and easily guessed"
        case .reused: return "Reused on other websites"
        case .weak: return "Easily guessed"
        case .unsecured: return "Login page not secured (http)"
        case .none: return "No issues"
        }
    }
}

/// One credential's findings.
public struct AuditItem: Sendable, Encodable {
    public var id: String
    /// The credential's first domain (or app, or identifier).
    public var service: String
    public var user: String
    public var title: String
    public var issues: [AuditIssue]
    public var severity: AuditSeverity
    public var actions: AuditActions
    /// Times seen in breaches (when checked; an approximate power of two with a compact index).
    public var breachCount: Int?
    /// `local-list` when the password was found in the device's list of the most common leaked
    /// passwords (`keyhaven breach top`) and so never sent; absent otherwise (the summary's
    /// `breachCheck` names the source). Added in issue 29. Such an item's ``breachCount`` is the
    /// list's count: a power of two at most the times the password was seen (the list keeps no more),
    /// whether or not the private check's server answered.
    public var breachSource: String? = nil
    /// zxcvbn score 0…4.
    public var strengthScore: Int?
    /// Why the password counts as weak, in words (zxcvbn's warning, or the PIN rule).
    public var weakness: String?
    /// Other credentials (ids) sharing the password on a different backend.
    public var reusedWith: [String]
    /// Only with `--reveal`.
    public var password: String?
}

/// What can be done about an item.
public struct AuditActions: Sendable, Encodable, Equatable {
    /// Where to change the password: the site's `/.well-known/change-password` (when the site's
    /// status codes are trustworthy), else Apple's per-site quirk, else nothing.
    public var changePasswordURL: String?
    /// `well-known` or `quirk`.
    public var changePasswordSource: String?
    /// Whether the service offers a one-tap upgrade through Keyhaven's account-modification
    /// protocol (its manifest); `nil` when not checked.
    public var upgrade: UpgradeOffer?

    public init(changePasswordURL: String? = nil, changePasswordSource: String? = nil, upgrade: UpgradeOffer? = nil) {
        self.changePasswordURL = changePasswordURL
        self.changePasswordSource = changePasswordSource
        self.upgrade = upgrade
    }

    enum CodingKeys: String, CodingKey {
        case changePasswordURL, changePasswordSource, upgrade
    }

    /// Every key is present, `null` when unknown.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(changePasswordURL, forKey: .changePasswordURL)
        try container.encode(changePasswordSource, forKey: .changePasswordSource)
        try container.encode(upgrade, forKey: .upgrade)
    }
}

/// A service's account-modification manifest, as far as the audit needs it.
public struct UpgradeOffer: Sendable, Codable, Equatable {
    public var strongPassword: Bool
    public var signIn: Bool
    /// The service turns the account into a passkey (`keyhaven upgrade SERVICE --to passkey`):
    /// the recommendation, when offered — nothing left to reuse, guess or leak.
    public var passkey: Bool

    public init(strongPassword: Bool, signIn: Bool, passkey: Bool = false) {
        self.strongPassword = strongPassword
        self.signIn = signIn
        self.passkey = passkey
    }
}

/// Counts and notes.
public struct AuditSummary: Sendable, Encodable {
    public var credentials: Int
    public var withIssues: Int = 0
    public var breached: Int = 0
    public var reused: Int = 0
    public var weak: Int = 0
    public var unsecured: Int = 0
    /// Items per severity (every severity present; JSON: an object keyed by the severity's name).
    public var bySeverity: [AuditSeverity: Int] = [:]
    /// Where breach counts came from.
    public var breachCheck: BreachCheckMode
    /// Anything the person should know about how the audit ran (a skipped check, unreadable
    /// records, sites that could not be reached).
    public var notices: [String] = []
    /// Sites (origins) whose change-password page or upgrade manifest could not be looked up for a
    /// network error, now or when last asked (the vault keeps the answer until it is due again):
    /// their actions are incomplete, and a later audit asks again.
    public var unreachableSites: Int = 0
    /// Sites whose lookups have not finished: still under way (the web app's report while sites
    /// answer), or left when the audit's time for the network ran out (the next audit asks them).
    /// Added in issue 27; 0 in a finished `keyhaven audit` unless its time ran out.
    public var pendingSites: Int = 0
}

/// Where an audit's breach counts came from (JSON: its raw value).
public enum BreachCheckMode: String, Sendable, Codable {
    /// An offline index: nothing left the machine.
    case index
    /// The k-anonymity range API.
    case api
    /// A breach-PSI server (issue 29): whether each password leaked, not how often (its
    /// `breachCount` is 1 or 0).
    case psi
    /// Not checked (a notice says why).
    case skipped
    /// The range API has not answered yet (the web app's report before it does; never in a
    /// finished `keyhaven audit`). Added in issue 27.
    case pending
}
