import Foundation

/// A web origin (scheme, host, port) as Keyhaven uses it for a service: the one place that parses
/// what a person or a file calls a service (`example.com`, `https://Example.com:8443/login`,
/// `http://127.0.0.1:8080`), normalises it, and decides what may be contacted.
///
/// Policy, the same for every caller (audit probes, manifests, upgrades, the provider):
/// - only `http` and `https`; hosts are lower-cased, trailing dots dropped, IPv6 kept without
///   brackets; the scheme's default port is `nil`;
/// - plain `http` is trustworthy only on loopback (`localhost`, `*.localhost`, `127.0.0.0/8`,
///   `::1`) — see ``isPotentiallyTrustworthy``;
/// - a service named without a scheme is `https`.
public struct ServiceOrigin: Hashable, Sendable, Comparable, CustomStringConvertible {
    public enum Scheme: String, Sendable, Hashable {
        case http
        case https

        var defaultPort: Int { self == .https ? 443 : 80 }
    }

    public let scheme: Scheme
    /// Lower-case ASCII host name (an internationalised name in its `xn--` form) or IP address (IPv6
    /// without brackets).
    public let host: String
    /// The port when it is not the scheme's default.
    public let port: Int?

    /// An origin from its parts (the host is normalised as when parsing).
    public init?(scheme: Scheme, host: String, port: Int? = nil) {
        guard let host = Self.normalise(host: host) else { return nil }
        if let port, !(1...65535).contains(port) { return nil }
        self.scheme = scheme
        self.host = host
        self.port = port == scheme.defaultPort ? nil : port
    }

    /// Parses a URL (`http`/`https` only) or a bare domain (`example.com`, `example.com/path`,
    /// `example.com:8443`), which is taken as `https`. Nil for anything else (other schemes, no
    /// host, user info, bad ports).
    public init?(_ text: String) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { return nil }
        if let schemeEnd = trimmed.range(of: "://") {
            guard let scheme = Scheme(rawValue: trimmed[..<schemeEnd.lowerBound].lowercased()),
                let components = URLComponents(string: trimmed), components.user == nil, components.password == nil,
                let host = Self.host(of: components)
            else { return nil }
            self.init(scheme: scheme, host: host, port: components.port)
        } else {
            let cut = trimmed.firstIndex { "/?#".contains($0) } ?? trimmed.endIndex
            let authority = trimmed[..<cut]
            guard !authority.contains("@") else { return nil }
            guard let parsed = URLComponents(string: "https://" + authority), let host = Self.host(of: parsed) else {
                return nil
            }
            self.init(scheme: .https, host: host, port: parsed.port)
        }
    }

    /// The origin Keyhaven talks to for a service a person named: ``init(_:)``, except that a plain
    /// `http` origin that is not loopback becomes `https` on the same host (the well-known
    /// resources a service publishes are read over https only). Nil when `text` names no web
    /// origin.
    public init?(service text: String) {
        guard let parsed = ServiceOrigin(text) else { return nil }
        if parsed.scheme == .http && !parsed.isLoopback {
            self.init(scheme: .https, host: parsed.host, port: parsed.port == 80 ? nil : parsed.port)
        } else {
            self = parsed
        }
    }

    /// `localhost`, `*.localhost`, `127.0.0.0/8` or `::1`.
    public var isLoopback: Bool {
        host == "localhost" || host.hasSuffix(".localhost") || host == "::1" || host == "0:0:0:0:0:0:0:1"
            || Self.isIPv4Loopback(host)
    }

    /// https, or plain http on loopback: where passwords and tokens may be sent.
    public var isPotentiallyTrustworthy: Bool { scheme == .https || isLoopback }

    /// The host as written in a URL (IPv6 in brackets).
    public var urlHost: String { host.contains(":") ? "[\(host)]" : host }

    /// `scheme://host[:port]`, the serialisation of RFC 6454.
    public var serialized: String { "\(scheme.rawValue)://\(urlHost)\(port.map { ":\($0)" } ?? "")" }

    public var description: String { serialized }

    /// The effective port (the default one when none is written).
    public var effectivePort: Int { port ?? scheme.defaultPort }

    /// An absolute URL on this origin for `path` (which must start with `/`).
    public func url(_ path: String) -> String {
        serialized + (path.hasPrefix("/") ? path : "/" + path)
    }

    /// The origin of an absolute `http`/`https` URL, nil for anything else.
    public static func of(url text: String) -> ServiceOrigin? {
        guard text.range(of: "://") != nil else { return nil }
        return ServiceOrigin(text)
    }

    /// Whether `url` is an absolute URL on exactly this origin (scheme, host and port).
    public func isSameOrigin(as url: String) -> Bool {
        ServiceOrigin.of(url: url) == self
    }

    /// `reference` (an absolute URL, or a path starting with `/`) as an absolute URL on this origin;
    /// nil when it points anywhere else or is not a URL.
    public func resolveSameOrigin(_ reference: String) -> String? {
        if reference.hasPrefix("/") && !reference.hasPrefix("//") {
            return serialized + reference
        }
        return isSameOrigin(as: reference) ? reference : nil
    }

    public static func < (lhs: ServiceOrigin, rhs: ServiceOrigin) -> Bool { lhs.serialized < rhs.serialized }

    // MARK: Parsing helpers

    /// The host Foundation parsed, in its ASCII form when Foundation has one. `host` alone is nil for
    /// a name IDNA refuses (`xn--zz`), so it validates; the ASCII form (`encodedHost`) is what an
    /// origin keeps, because Foundation decodes `--x.xn--fiqs8s` to a Unicode name it then refuses
    /// to parse (found by FuzzServiceOrigin). A percent-encoded host is decoded first.
    static func host(of components: URLComponents) -> String? {
        guard let host = components.host else { return nil }
        if let encoded = components.encodedHost, !encoded.contains("%") { return encoded }
        return host
    }

    static func normalise(host raw: String) -> String? {
        // Lower-case ASCII letters only: Unicode names go through IDNA (UTS #46) below, whose mapping
        // does its own case folding; `lowercased()` would undo it (Cherokee folds to upper case:
        // `ᏸ` maps to `Ᏸ`, and an A-label of `ᏸ` is refused).
        var host = String(String.UnicodeScalarView(raw.unicodeScalars.map(Self.asciiLowercase)))
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        while host.hasSuffix(".") { host.removeLast() }
        guard !host.isEmpty, host.utf8.count <= 253 else { return nil }
        if host.contains(":") {
            // An IPv6 literal: hex digits, colons, dots (embedded IPv4).
            guard host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else { return nil }
            return host
        }
        // One spelling per host: the ASCII (`xn--`) form browsers send, so an origin written out
        // parses back to itself. A Unicode name is converted the way Foundation's URL parser does it.
        if host.unicodeScalars.contains(where: { !$0.isASCII }) {
            guard host.unicodeScalars.allSatisfy({ !$0.isASCII || Self.isHostCharacter($0) }),
                let encoded = URLComponents(string: "https://" + host)?.encodedHost,
                !encoded.contains("%")
            else { return nil }
            host = String(String.UnicodeScalarView(encoded.unicodeScalars.map(Self.asciiLowercase)))
        }
        guard host.unicodeScalars.allSatisfy(Self.isHostCharacter), !host.hasPrefix("."), !host.contains("..")
        else { return nil }
        return host
    }

    private static func isHostCharacter(_ c: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(c) || ("0"..."9").contains(c) || c == "-" || c == "." || c == "_"
    }

    private static func asciiLowercase(_ c: Unicode.Scalar) -> Unicode.Scalar {
        ("A"..."Z").contains(c) ? Unicode.Scalar(c.value + 32)! : c
    }

    static func isIPv4Loopback(_ host: String) -> Bool {
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts.allSatisfy({ UInt8($0) != nil }) else { return false }
        return parts[0] == "127"
    }
}
