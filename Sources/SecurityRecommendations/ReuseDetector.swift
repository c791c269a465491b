import Foundation
import _KeyhavenSupport

/// Finds passwords used for more than one backend.
///
/// Two credentials are the same backend when their domains share a registrable domain
/// (`login.example.com` and `example.com`) or belong to one group of Apple's
/// `shared-credentials.json` (`shared` groups, and `from` → `to` migrations, read both ways). A
/// password is reused when its credentials span two or more backends.
public struct ReuseDetector: Sendable {
    /// Domain → group number, from Apple's shared-credentials data.
    let groups: [String: Int]

    public static let shared: ReuseDetector = {
        do {
            return try ReuseDetector(sharedCredentialsJSON: embeddedSharedCredentialsJSON)
        } catch {
            preconditionFailure("the embedded shared-credentials.json is malformed: \(error)")
        }
    }()

    public init(sharedCredentialsJSON: String) throws {
        struct Group: Decodable {
            var shared: [String]?
            var from: [String]?
            var to: [String]?
        }
        let decoded = try JSONDecoder().decode([Group].self, from: Data(sharedCredentialsJSON.utf8))
        var groups: [String: Int] = [:]
        for (index, group) in decoded.enumerated() {
            for domain in (group.shared ?? []) + (group.from ?? []) + (group.to ?? []) {
                groups[domain.lowercased()] = groups[domain.lowercased()] ?? index
            }
        }
        self.groups = groups
    }

    /// The backend of a host: its shared-credentials group if any (the host or a parent domain
    /// listed), else its registrable domain.
    public func backend(of host: String) -> String {
        var candidate = Substring(host.lowercased())
        while true {
            if let group = groups[String(candidate)] { return "group:\(group)" }
            guard let dot = candidate.firstIndex(of: ".") else { break }
            candidate = candidate[candidate.index(after: dot)...]
        }
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
