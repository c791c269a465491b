import Foundation

/// Apple's shared-credential groups, compiled in from `Resources/shared-credentials.json`
/// (apple/password-manager-resources; see the README there for the version and licence): sites
/// that sign in with one account (`shared` groups, and `from` → `to` migrations, read both ways).
///
/// Two questions are asked of it, so it lives beside the Public Suffix List rather than in either
/// asker: the audit's reuse detector (a password on two domains of one group is one backend, not
/// reuse) and AutoFill's match tiers (a credential of one domain is offered on the others of its
/// group, as `sharedBackend`).
public struct SharedCredentialGroups: Sendable {
    /// Domain → group number (the group's index in the file).
    private let groups: [String: Int]

    /// The groups shipped with Keyhaven, parsed once on first use.
    public static let shipped = parseEmbedded("shared-credentials.json") {
        try SharedCredentialGroups(json: embeddedSharedCredentialsJSON)
    }

    /// Parses the file's format: an array of `{"shared": […]}` or `{"from": […], "to": […]}`.
    public init(json: String) throws {
        struct Group: Decodable {
            var shared: [String]?
            var from: [String]?
            var to: [String]?
        }
        let decoded = try JSONDecoder().decode([Group].self, from: Data(json.utf8))
        var groups: [String: Int] = [:]
        for (index, group) in decoded.enumerated() {
            for domain in (group.shared ?? []) + (group.from ?? []) + (group.to ?? []) {
                groups[domain.lowercased()] = groups[domain.lowercased()] ?? index
            }
        }
        self.groups = groups
    }

    /// The group of `host`: that of the host itself or of the nearest parent domain listed; nil
    /// when none is.
    public func group(of host: String) -> Int? {
        var candidate = Substring(host.lowercased())
        while true {
            if let group = groups[String(candidate)] { return group }
            guard let dot = candidate.firstIndex(of: ".") else { return nil }
            candidate = candidate[candidate.index(after: dot)...]
        }
    }
}
