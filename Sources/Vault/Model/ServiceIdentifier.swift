import Foundation

/// What a credential is for: a domain (`example.com`) or a URL (`https://example.com/login`,
/// `androidapp://com.example.app`) — Keyhaven's `ASCredentialServiceIdentifier`.
///
/// The identifier is kept exactly as given (trimmed) so exports reproduce imports; matching uses
/// ``host``.
public struct ServiceIdentifier: Hashable, Sendable, Codable, CustomStringConvertible {
    public enum Kind: String, Sendable, Codable {
        case domain
        case url
    }

    public var kind: Kind
    public var identifier: String

    public init(kind: Kind, identifier: String) {
        self.kind = kind
        self.identifier = identifier
    }

    /// A URL when `text` has a scheme (`…://`), otherwise a domain.
    public init(_ text: String) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        kind = trimmed.contains("://") ? .url : .domain
        identifier = trimmed
    }

    public var description: String { identifier }

    /// The lower-cased host name (for a domain: the domain without any path or port); `nil` for app
    /// identifiers and anything without a host.
    public var host: String? {
        let raw: String?
        switch kind {
        case .url:
            guard let components = URLComponents(string: identifier), let scheme = components.scheme?.lowercased(),
                scheme == "http" || scheme == "https"
            else { return nil }
            raw = components.host
        case .domain:
            let cut = identifier.firstIndex { $0 == "/" || $0 == ":" || $0 == "?" || $0 == "#" } ?? identifier.endIndex
            raw = String(identifier[..<cut])
        }
        guard var host = raw?.lowercased(), !host.isEmpty else { return nil }
        while host.hasSuffix(".") { host.removeLast() }
        return host.isEmpty ? nil : host
    }

    /// The package of an `androidapp://` identifier.
    public var androidPackage: String? {
        guard kind == .url, identifier.lowercased().hasPrefix("androidapp://") else { return nil }
        let rest = identifier.dropFirst("androidapp://".count)
        let package = rest.split(separator: "/").first.map(String.init) ?? ""
        return package.isEmpty ? nil : package
    }

    /// The scheme of a URL identifier, lower-cased.
    public var scheme: String? {
        guard kind == .url, let range = identifier.range(of: "://") else { return nil }
        return identifier[..<range.lowerBound].lowercased()
    }

    /// The host and every parent domain with at least two labels (`a.b.example.com` →
    /// `a.b.example.com`, `b.example.com`, `example.com`).
    static func domainAndParents(_ host: String) -> [String] {
        var result = [host]
        var rest = Substring(host)
        while let dot = rest.firstIndex(of: ".") {
            rest = rest[rest.index(after: dot)...]
            if rest.contains(".") {
                result.append(String(rest))
            }
        }
        return result
    }
}
