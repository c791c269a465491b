import Foundation
import _KeyhavenSupport

/// How a credential saved for one service answers a request for another, best first.
///
/// The policy (the same for the CLI, the agent and the web app):
/// - hosts are compared exactly, or along parent domains that stay within one registrable domain
///   (eTLD+1, from the Public Suffix List, private suffixes included): `www.example.com` gets a
///   credential for `example.com`, but `alice.github.io` never gets one for `github.io` and
///   `x.co.uk` never shares with `y.co.uk`; IP addresses and `localhost` match only themselves;
/// - when the request names a scheme or a port (a URL, as a browser sends), they count: an
///   `https` credential is not offered to an `http` page, nor one for port 8443 on port 443. A
///   credential saved as a bare domain means `https` on the default port, except on loopback,
///   where it matches either scheme. A bare name typed by a person (`example.com`) matches
///   whatever scheme and port the credential has;
/// - Android apps match by package name only.
public enum ServiceMatch: Int, Sendable, Comparable, Codable {
    /// Same host (and scheme and port where they count).
    case exact
    /// The credential is for a parent domain of the requested host, within the same site.
    case parent
    /// The credential is for a subdomain of the requested host, within the same site: offered,
    /// never filled without asking.
    case subdomain

    public static func < (lhs: ServiceMatch, rhs: ServiceMatch) -> Bool { lhs.rawValue < rhs.rawValue }
}

extension ServiceIdentifier {
    /// How a credential saved for `self` matches a request for `query`; nil when it does not.
    public func match(for query: ServiceIdentifier) -> ServiceMatch? {
        if let package = androidPackage {
            return query.androidPackage?.lowercased() == package.lowercased() ? .exact : nil
        }
        guard let saved = origin, let wanted = query.origin else { return nil }
        let queryNamesScheme = query.kind == .url
        let queryNamesPort = queryNamesScheme || query.namesPort
        if queryNamesScheme, saved.scheme != wanted.scheme, !(kind == .domain && saved.isLoopback) {
            return nil
        }
        if queryNamesPort {
            let savedPort = saved.port ?? (kind == .domain ? 443 : saved.effectivePort)
            let savedAnyScheme = kind == .domain && saved.port == nil && saved.isLoopback
            if !savedAnyScheme && savedPort != wanted.effectivePort { return nil }
        }
        if saved.host == wanted.host { return .exact }
        guard let site = wanted.registrableDomain, saved.registrableDomain == site else { return nil }
        if wanted.host.hasSuffix("." + saved.host) { return .parent }
        if saved.host.hasSuffix("." + wanted.host) { return .subdomain }
        return nil
    }

    /// Whether a port is written (`example.com:8443`, `https://example.com:443`).
    var namesPort: Bool { URLComponentsPort.written(in: identifier) }
}

/// Whether the authority of a URL or bare domain spells out a port.
private enum URLComponentsPort {
    static func written(in text: String) -> Bool {
        var rest = Substring(text)
        if let scheme = rest.range(of: "://") { rest = rest[scheme.upperBound...] }
        let authority = rest.prefix { !"/?#".contains($0) }
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return false }
            return authority[authority.index(after: close)...].hasPrefix(":")
        }
        return authority.contains(":")
    }
}
