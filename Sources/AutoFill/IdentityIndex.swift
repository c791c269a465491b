import Foundation
public import Vault
public import _KeyhavenSupport

/// How a credential matches the frame asking for it (docs/autofill-protocol.md §3), best first.
public enum MatchTier: String, Comparable, BrowserProtocolEnum {
    case exact, parent, child, sharedBackend

    public init(from decoder: any Decoder) throws { self = try Self.decodeCase(from: decoder) }

    var order: Int { Self.allCases.firstIndex(of: self)! }
    public static func < (lhs: MatchTier, rhs: MatchTier) -> Bool { lhs.order < rhs.order }
}

/// What the agent offers for a frame: who, for which service, how well it matches. Never a secret
/// (Apple's `ASPasswordCredentialIdentity` / `ASOneTimeCodeCredentialIdentity` with its rank).
public struct CredentialIdentity: BrowserProtocolObject, Hashable {
    public enum Kind: String, BrowserProtocolEnum {
        case password, oneTimeCode
        public init(from decoder: any Decoder) throws { self = try Self.decodeCase(from: decoder) }
    }

    public var recordIdentifier: String
    public var kind: Kind
    public var user: String
    public var serviceIdentifier: String
    /// Larger first within a tier: the last use or change, in seconds since 1970.
    public var rank: Int
    /// Nil in `identities.changed` events (a match belongs to a query).
    public var match: MatchTier?

    /// As in `identities` answers and events (`match` only when there is one).
    public var json: JSONValue { JSONValue(encoding: self) }
}

/// The unlocked vault's identities in memory, indexed by host, site and shared-credential group,
/// so a query costs a few dictionary lookups however large the vault (the secrets stay sealed in
/// the vault until a credential is provided). A plain value: the agent owns and replaces it.
public struct IdentityIndex: Sendable {
    struct Entry: Sendable {
        var id: CredentialID
        var user: String
        var services: [ServiceIdentifier]
        var hasPassword: Bool
        var hasOneTimeCode: Bool
        var modified: Date
    }

    private(set) var entries: [CredentialID: Entry] = [:]
    private var byHost: [String: Set<CredentialID>] = [:]
    private var bySite: [String: Set<CredentialID>] = [:]
    private var byGroup: [Int: Set<CredentialID>] = [:]
    /// When the agent last provided each credential (ranks it above its modification date).
    var lastUsed: [CredentialID: Date] = [:]

    public init(_ credentials: some Sequence<Credential>) {
        for credential in credentials where credential.deleted == nil { insert(credential) }
    }

    public var count: Int { entries.count }

    private static func keys(_ service: ServiceIdentifier) -> (host: String, site: String?, group: Int?)? {
        guard service.androidPackage == nil, let host = service.host else { return nil }
        let site = ServiceOrigin(host)?.registrableDomain
        return (host, site, SharedCredentialGroups.shipped.group(of: host))
    }

    /// Adds or replaces a credential (a deleted one is removed).
    public mutating func insert(_ credential: Credential) {
        remove(credential.id)
        guard credential.deleted == nil else { return }
        entries[credential.id] = Entry(
            id: credential.id,
            user: credential.user,
            services: credential.services,
            hasPassword: credential.password?.isEmpty == false,
            hasOneTimeCode: credential.totp?.isEmpty == false,
            modified: credential.modified
        )
        for service in credential.services {
            guard let keys = Self.keys(service) else { continue }
            byHost[keys.host, default: []].insert(credential.id)
            if let site = keys.site { bySite[site, default: []].insert(credential.id) }
            if let group = keys.group { byGroup[group, default: []].insert(credential.id) }
        }
    }

    public mutating func remove(_ id: CredentialID) {
        guard let entry = entries.removeValue(forKey: id) else { return }
        for service in entry.services {
            guard let keys = Self.keys(service) else { continue }
            byHost[keys.host]?.remove(id)
            if let site = keys.site { bySite[site]?.remove(id) }
            if let group = keys.group { byGroup[group]?.remove(id) }
        }
    }

    func rank(_ entry: Entry) -> Int {
        Int(max(lastUsed[entry.id] ?? .distantPast, entry.modified).timeIntervalSince1970)
    }

    /// The identities a frame at `url` may be offered, best tier first, by rank within a tier.
    /// `url` must be an http(s) URL (else `originNotAllowed`).
    public func query(
        url: String,
        kinds: Set<CredentialIdentity.Kind> = [.password, .oneTimeCode]
    ) throws(AutoFillError)
        -> [CredentialIdentity]
    {
        let (frame, wanted) = try Self.frame(url)
        var candidates = byHost[frame.host] ?? []
        for parent in frame.hostAndParentsWithinSite.dropFirst() { candidates.formUnion(byHost[parent] ?? []) }
        if let site = frame.registrableDomain { candidates.formUnion(bySite[site] ?? []) }
        let group = SharedCredentialGroups.shipped.group(of: frame.host)
        if let group { candidates.formUnion(byGroup[group] ?? []) }

        var found: [(tier: MatchTier, identity: CredentialIdentity)] = []
        for id in candidates {
            guard let entry = entries[id], let (tier, service) = Self.match(entry, wanted, frame, group) else {
                continue
            }
            let rank = rank(entry)
            if entry.hasPassword, kinds.contains(.password) {
                found.append(
                    (
                        tier,
                        CredentialIdentity(
                            recordIdentifier: id.rawValue,
                            kind: .password,
                            user: entry.user,
                            serviceIdentifier: service.identifier,
                            rank: rank,
                            match: tier
                        )
                    )
                )
            }
            if entry.hasOneTimeCode, kinds.contains(.oneTimeCode) {
                found.append(
                    (
                        tier,
                        CredentialIdentity(
                            recordIdentifier: id.rawValue,
                            kind: .oneTimeCode,
                            user: entry.user,
                            serviceIdentifier: service.identifier,
                            rank: rank,
                            match: tier
                        )
                    )
                )
            }
        }
        return found.sorted {
            ($0.tier, -$0.identity.rank, $0.identity.user, $0.identity.recordIdentifier)
                < ($1.tier, -$1.identity.rank, $1.identity.user, $1.identity.recordIdentifier)
        }.map(\.identity)
    }

    /// How `id` matches a frame at `url`, nil when it does not.
    func match(_ id: CredentialID, url: String) throws(AutoFillError) -> (MatchTier, ServiceIdentifier)? {
        let (frame, wanted) = try Self.frame(url)
        guard let entry = entries[id] else { return nil }
        return Self.match(entry, wanted, frame, SharedCredentialGroups.shipped.group(of: frame.host))
    }

    static func frame(_ url: String) throws(AutoFillError) -> (ServiceOrigin, ServiceIdentifier) {
        guard let origin = ServiceOrigin.of(url: url), origin.scheme == .https || origin.scheme == .http else {
            throw AutoFillError(.originNotAllowed, "AutoFill works on http and https pages only.")
        }
        return (origin, ServiceIdentifier(kind: .url, identifier: origin.serialized))
    }

    private static func match(
        _ entry: Entry,
        _ wanted: ServiceIdentifier,
        _ frame: ServiceOrigin,
        _ group: Int?
    ) -> (MatchTier, ServiceIdentifier)? {
        var best: (MatchTier, ServiceIdentifier)?
        for service in entry.services {
            let tier: MatchTier?
            switch service.match(for: wanted) {
            case .exact: tier = .exact
            case .parent: tier = .parent
            case .subdomain: tier = .child
            case nil:
                if let group, let host = service.host, SharedCredentialGroups.shipped.group(of: host) == group {
                    tier = .sharedBackend
                } else {
                    tier = nil
                }
            }
            if let tier, best.map({ tier < $0.0 }) ?? true { best = (tier, service) }
        }
        return best
    }
}
