import Foundation
import _KeyhavenSupport

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

    /// The web origin this identifier names (a domain is `https`), through the one parser every
    /// target uses (`ServiceOrigin`); nil for app identifiers and anything that is not a web origin.
    var origin: ServiceOrigin? {
        switch kind {
        case .url: ServiceOrigin.of(url: identifier)
        case .domain: ServiceOrigin(identifier)
        }
    }

    /// The lower-cased host name (for a domain: the domain without any path or port); `nil` for app
    /// identifiers and anything without a valid host.
    public var host: String? { origin?.host }

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
}
