import _KeyhavenSupport

/// Finds passwords used for more than one backend.
///
/// Two credentials are the same backend when their domains share a registrable domain
/// (`login.example.com` and `example.com`) or belong to one group of Apple's
/// `shared-credentials.json` (`shared` groups, and `from` → `to` migrations, read both ways). A
/// password is reused when its credentials span two or more backends.
public struct ReuseDetector: Sendable {
    /// Apple's shared-credentials data.
    let groups: SharedCredentialGroups

    public static let shared = ReuseDetector(groups: .shipped)

    init(groups: SharedCredentialGroups) {
        self.groups = groups
    }

    public init(sharedCredentialsJSON: String) throws {
        groups = try SharedCredentialGroups(json: sharedCredentialsJSON)
    }

    /// The backend of a host: its shared-credentials group if any (the host or a parent domain
    /// listed), else its registrable domain.
    public func backend(of host: String) -> String {
        if let group = groups.group(of: host) { return "group:\(group)" }
        return Self.registrableDomain(host)
    }

    /// The registrable domain (eTLD+1) by the Public Suffix List Keyhaven ships — the one bound
    /// every other part of Keyhaven uses; a host that is itself a public suffix (or an IP address)
    /// stands for itself.
    public static func registrableDomain(_ host: String) -> String {
        let lowered = host.lowercased()
        return PublicSuffixList.shipped.registrableDomain(of: lowered) ?? lowered
    }
}
