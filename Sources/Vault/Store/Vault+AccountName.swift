import Foundation
import GRDB

/// What a name typed by a person (`github.com`, `github.com/alice`, `GitHub`, or an id) finds.
public enum AccountLookup: Hashable, Sendable, Codable {
    /// Exactly one credential.
    case found(Credential)
    /// Several credentials fit equally well: the person must choose (by `SERVICE/USER` or id).
    case ambiguous([Credential])
    /// Nothing fits.
    case notFound
}

extension Vault {
    /// Finds the credential `name` refers to, the way people name accounts: an id or the first
    /// characters of one (at least 4), else `SERVICE[/USER]`, where SERVICE is a domain, URL or
    /// title. A domain or URL is matched like ``credentials(forService:accepting:)`` and only the
    /// best kind of match counts (`github.com` prefers an account for github.com over one for
    /// gist.github.com); `/USER` keeps the accounts with that user name (case-insensitive). A name
    /// that matches no service is compared with titles (case-insensitive). A URL (`https://…`) is
    /// taken whole: its path is not a user name.
    ///
    /// Recently deleted credentials are found by id only.
    public func account(named name: String) throws(VaultError) -> AccountLookup {
        let trimmed = name.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { throw VaultError(.invalidInput, "name an account by service or id") }
        if let byID = try accounts(withIDPrefix: trimmed) {
            return byID
        }
        var service = trimmed
        var user: String?
        if !trimmed.contains("://"), let slash = trimmed.firstIndex(of: "/") {
            service = String(trimmed[..<slash])
            user = String(trimmed[trimmed.index(after: slash)...])
        }
        func fits(_ credential: Credential) -> Bool {
            guard let user, !user.isEmpty else { return true }
            return credential.user.caseInsensitiveCompare(user) == .orderedSame
        }
        let identifier = ServiceIdentifier(service)
        let listing = try credentials(forService: service)
        let ranked = listing.credentials.filter(fits).compactMap { credential in
            credential.services.compactMap { $0.match(for: identifier) }.min().map { (credential, $0) }
        }
        if let best = ranked.map(\.1).min() {
            return Self.lookup(ranked.filter { $0.1 == best }.map(\.0))
        }
        let titled = try list().credentials.filter {
            $0.content.displayTitle.caseInsensitiveCompare(service) == .orderedSame && fits($0)
        }
        if titled.isEmpty, let failure = listing.failures.first {
            throw failure
        }
        return Self.lookup(titled)
    }

    /// The credentials whose id starts with `text`, or nil when `text` cannot be an id prefix or
    /// no id starts with it.
    private func accounts(withIDPrefix text: String) throws(VaultError) -> AccountLookup? {
        let prefix = text.lowercased()
        guard prefix.count >= 4, prefix.allSatisfy({ $0.isHexDigit || $0 == "-" }) else { return nil }
        let ids = try credentialIDs(withPrefix: prefix)
        guard !ids.isEmpty else { return nil }
        var credentials: [Credential] = []
        for id in ids.compactMap(CredentialID.init(rawValue:)) {
            credentials.append(try credential(id))
        }
        return Self.lookup(credentials)
    }

    private static func lookup(_ credentials: [Credential]) -> AccountLookup {
        switch credentials.count {
        case 0: .notFound
        case 1: .found(credentials[0])
        default: .ambiguous(credentials)
        }
    }
}
