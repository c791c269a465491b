import Foundation
import _KeyhavenSupport

/// One HTTP answer as the discovery needs it.
public struct ProbeResponse: Sendable {
    /// The status after following redirects.
    public var status: Int
    /// The URL after following redirects.
    public var finalURL: String
    /// The body (only the first few kilobytes).
    public var body: [UInt8]

    public init(status: Int, finalURL: String, body: [UInt8] = []) {
        self.status = status
        self.finalURL = finalURL
        self.body = body
    }
}

/// GETs a URL, following redirects; `nil` on a network error. Implemented over HTTP in
/// `KeyhavenHTTP`; tests may script it.
public protocol WellKnownProbe: Sendable {
    func get(_ url: String) async -> ProbeResponse?
}

/// Finds where to change a site's password, per W3C "A Well-Known URL for Changing Passwords":
///
/// 1. GET `/.well-known/resource-that-should-not-exist-whose-status-code-should-not-be-200`: if it
///    answers 2xx (or the site is unreachable), the site's status codes cannot be trusted.
/// 2. Otherwise GET `/.well-known/change-password`: a 2xx after redirects gives the URL it ended on.
/// 3. Without a trustworthy answer, Apple's `change-password-URLs.json` quirk for the domain (or a
///    parent domain), if any.
///
/// Only https origins are probed, and http ones on loopback (for local services and tests).
/// ``lookUp(service:domain:)`` caches answers per origin for the life of the discovery; the audit
/// asks through ``page(origin:)`` and keeps what sites said as ``SiteKnowledge``, in the vault.
public actor ChangePasswordDiscovery {
    let probe: (any WellKnownProbe)?
    /// A change-password URL and where it came from (`well-known` or `quirk`); nils when none is known.
    public typealias Found = (url: String?, source: String?)
    /// A lookup's answer, and whether the site answered (`false` after a network error).
    public typealias Lookup = (found: Found, reached: Bool)

    /// Per origin, for the life of this discovery (one audit).
    private var cache: [String: Lookup] = [:]

    public static let bogusPath = "/.well-known/resource-that-should-not-exist-whose-status-code-should-not-be-200"

    /// `probe` nil: quirks only (no network).
    public init(probe: (any WellKnownProbe)?) {
        self.probe = probe
    }

    static let embeddedQuirks: [String: String] = {
        (try? JSONDecoder().decode([String: String].self, from: Data(embeddedChangePasswordURLsJSON.utf8))) ?? [:]
    }()

    /// The origin to probe for a service identifier (``ServiceOrigin/init(service:)``), or nil.
    public static func origin(for identifier: String) -> String? {
        ServiceOrigin(service: identifier)?.serialized
    }

    /// The change-password URL for a credential's service, and where it came from.
    public func changePasswordURL(service identifier: String, domain: String?) async -> Found {
        await lookUp(service: identifier, domain: domain).found
    }

    /// ``changePasswordURL(service:domain:)``, and whether the site answered: `false` after a
    /// network error (the answer then is the quirk alone, and a later discovery asks again).
    public func lookUp(service identifier: String, domain: String?) async -> Lookup {
        guard let probe, let origin = Self.origin(for: identifier) else { return (Self.quirk(for: domain), true) }
        let answer: Lookup
        if let cached = cache[origin] {
            answer = cached
        } else {
            answer = await Self.probe(origin, with: probe)
            cache[origin] = answer
        }
        return (answer.found.url == nil ? Self.quirk(for: domain) : answer.found, answer.reached)
    }

    /// Whether this discovery may contact sites (it has a probe).
    public nonisolated var contactsSites: Bool { probe != nil }

    /// The site's own change-password page (`well-known`; no quirk), and whether it answered; nil
    /// without a probe. Asked now, never from the cache: what outlives a round of lookups is
    /// ``SiteKnowledge``, and a site that was down must be asked again when its knowledge expires.
    public nonisolated func page(origin: String) async -> Lookup? {
        guard let probe else { return nil }
        return await Self.probe(origin, with: probe)
    }

    private static func probe(_ origin: String, with probe: any WellKnownProbe) async -> Lookup {
        guard let bogus = await probe.get(origin + bogusPath) else { return ((nil, nil), false) }
        guard !(200..<300).contains(bogus.status) else { return ((nil, nil), true) }  // untrustworthy codes
        guard let answer = await probe.get(origin + "/.well-known/change-password") else { return ((nil, nil), false) }
        guard (200..<300).contains(answer.status) else { return ((nil, nil), true) }
        let found: Found = (answer.finalURL, "well-known")
        return (found, true)
    }

    /// Apple's `change-password-URLs.json` entry for `domain` or a parent domain (no network).
    public static func quirk(for domain: String?) -> Found {
        guard var candidate = domain?.lowercased() else { return (nil, nil) }
        while true {
            if let url = embeddedQuirks[candidate] { return (url, "quirk") }
            guard let dot = candidate.firstIndex(of: ".") else { return (nil, nil) }
            candidate = String(candidate[candidate.index(after: dot)...])
            if !candidate.contains(".") { return (nil, nil) }
        }
    }
}

/// Whether a service offers one-tap upgrades (its account-modification manifest, read by the same
/// reader `keyhaven upgrade` uses). `nil` when unknown (unreachable).
public protocol UpgradeOfferSource: Sendable {
    func upgradeOffer(service identifier: String) async -> UpgradeOffer?
}
