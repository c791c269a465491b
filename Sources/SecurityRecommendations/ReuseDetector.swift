import Foundation

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

    /// Second-level public suffixes common enough to matter (a full public-suffix list is not worth
    /// its size here: the result only groups subdomains of one site).
    static let multiPartSuffixes: Set<String> = [
        "co.uk", "org.uk", "ac.uk", "gov.uk", "me.uk", "ltd.uk", "plc.uk", "com.au", "net.au", "org.au", "edu.au",
        "gov.au", "co.nz", "org.nz", "co.jp", "ne.jp", "or.jp", "ac.jp", "co.kr", "or.kr", "com.br", "com.cn",
        "net.cn", "org.cn", "com.tw", "com.hk", "com.sg", "com.mx", "com.ar", "com.tr", "co.in", "co.za",
        "co.il", "com.pl", "co.id", "com.my", "com.ph", "com.vn", "com.ua", "com.eg", "com.sa", "github.io",
    ]

    public static func registrableDomain(_ host: String) -> String {
        let labels = host.lowercased().split(separator: ".")
        guard labels.count > 2 else { return labels.joined(separator: ".") }
        let lastTwo = labels.suffix(2).joined(separator: ".")
        let take = multiPartSuffixes.contains(lastTwo) ? 3 : 2
        return labels.suffix(take).joined(separator: ".")
    }
}
