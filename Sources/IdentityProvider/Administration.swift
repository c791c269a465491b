import Foundation
public import KeyhavenJOSE
import OneTimeCodes
import _KeyhavenSupport

/// Registering teams, their `client_secret` keys, services and users.
extension IdentityProvider {
    /// Registers a team; `id` is generated (10 uppercase letters and digits, like Apple's) when nil.
    @discardableResult
    public func createTeam(id: String? = nil, name: String) async throws -> Team {
        let id = id ?? randomAlphanumeric(10, uppercase: true)
        guard id.count == 10, id.allSatisfy({ $0.isASCII && ($0.isUppercase || $0.isNumber) }) else {
            throw ProviderError(.invalidArgument, "a team id is 10 uppercase letters or digits")
        }
        let now = nowMilliseconds
        try await write { connection in
            let inserted = try await connection.insert(
                TeamRecord(id: id, name: name, created: now),
                "ON CONFLICT (id) DO NOTHING RETURNING id"
            )
            guard !inserted.isEmpty else { throw ProviderError(.alreadyExists, "team \(id) exists") }
        }
        return Team(id: id, name: name)
    }

    public func teams() async throws -> [Team] {
        try await read { connection in
            try await connection.fetchAll(TeamRecord.self, "\(TeamRecord.select) ORDER BY id").map {
                Team(id: $0.id, name: $0.name)
            }
        }
    }

    /// Registers the public half of a team's key (the `.p8` key a developer signs `client_secret`
    /// with). `keyId` is the `kid` their secrets will carry.
    public func addTeamKey(teamId: String, keyId: String, publicKey: ES256PublicKey) async throws {
        guard !keyId.isEmpty, keyId.count <= 64, keyId.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) })
        else { throw ProviderError(.invalidArgument, "a key id is letters and digits") }
        let now = nowMilliseconds
        try await write { connection in
            guard try await connection.one("SELECT id FROM teams WHERE id = ?", .text(teamId)) != nil else {
                throw ProviderError(.notFound, "no team \(teamId)")
            }
            let inserted = try await connection.insert(
                TeamKeyRecord(teamId: teamId, keyId: keyId, publicPEM: publicKey.pemRepresentation, created: now),
                "ON CONFLICT (team_id, key_id) DO NOTHING RETURNING key_id"
            )
            guard !inserted.isEmpty else { throw ProviderError(.alreadyExists, "team \(teamId) has key \(keyId)") }
        }
    }

    /// Creates a key pair for a team, registers its public half, and returns the private key (the
    /// developer's `.p8`), which the provider does not keep.
    public func createTeamKey(teamId: String) async throws -> ES256SigningKey {
        let key = ES256SigningKey.generate(kid: randomAlphanumeric(10, uppercase: true))
        try await addTeamKey(teamId: teamId, keyId: key.kid, publicKey: key.publicKey)
        return key
    }

    /// Registers a service: its id, redirect URIs (at most 10), and where notifications go.
    @discardableResult
    public func registerClient(
        id: String,
        teamId: String,
        name: String,
        redirectURIs: [String],
        notificationURL: String? = nil
    ) async throws -> Client {
        guard !id.isEmpty, id.count <= 255,
            id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == "_") })
        else { throw ProviderError(.invalidArgument, "a client id is letters, digits, '.', '-' and '_'") }
        guard !id.hasPrefix(teamId + ".") else {
            throw ProviderError(.invalidArgument, "the client id must not contain the team id")
        }
        guard redirectURIs.count <= 10 else { throw ProviderError(.invalidArgument, "at most 10 redirect URIs") }
        for uri in redirectURIs {
            if let problem = RedirectRules.problem(with: uri, allowInsecure: configuration.allowInsecureURLs) {
                throw ProviderError(.invalidArgument, "redirect URI \(uri): \(problem)")
            }
        }
        if let notificationURL,
            let problem = RedirectRules.problem(with: notificationURL, allowInsecure: configuration.allowInsecureURLs)
        {
            throw ProviderError(.invalidArgument, "notification URL \(notificationURL): \(problem)")
        }
        let client = Client(
            id: id,
            teamId: teamId,
            name: name,
            redirectURIs: redirectURIs,
            notificationURL: notificationURL
        )
        let uris = String(decoding: try JSONEncoder().encode(redirectURIs), as: UTF8.self)
        let now = nowMilliseconds
        try await write { connection in
            guard try await connection.one("SELECT id FROM teams WHERE id = ?", .text(teamId)) != nil else {
                throw ProviderError(.notFound, "no team \(teamId)")
            }
            let inserted = try await connection.insert(
                ClientRecord(
                    id: id,
                    teamId: teamId,
                    name: name,
                    redirectURIs: uris,
                    notificationURL: notificationURL,
                    created: now
                ),
                "ON CONFLICT (id) DO NOTHING RETURNING id"
            )
            guard !inserted.isEmpty else { throw ProviderError(.alreadyExists, "client \(id) exists") }
        }
        return client
    }

    public func clients() async throws -> [Client] {
        try await read {
            try await $0.fetchAll(ClientRecord.self, "\(ClientRecord.select) ORDER BY id").map(Client.init)
        }
    }

    /// Moves a service to another team (an app transfer). Its users keep signing in; the new team
    /// learns their new `sub` through `/auth/usermigrationinfo`.
    public func transferClient(_ clientId: String, toTeam teamId: String) async throws {
        try await write { connection in
            guard try await connection.one("SELECT id FROM teams WHERE id = ?", .text(teamId)) != nil else {
                throw ProviderError(.notFound, "no team \(teamId)")
            }
            let moved = try await connection.query(
                "UPDATE clients SET team_id = ? WHERE id = ? RETURNING id",
                .text(teamId),
                .text(clientId)
            )
            guard !moved.isEmpty else { throw ProviderError(.notFound, "no client \(clientId)") }
        }
    }

    /// Creates a user; with `totp`, also a one-time-code secret (returned once, base32).
    public func createUser(
        email: String,
        password: String,
        firstName: String? = nil,
        lastName: String? = nil,
        totp: Bool = false
    ) async throws -> (user: User, totpSecret: String?) {
        let email = email.lowercased()
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[1].contains("."), !email.contains(" ") else {
            throw ProviderError(.invalidArgument, "\(email) is not an e-mail address")
        }
        guard password.count >= 8 else { throw ProviderError(.invalidArgument, "a password has at least 8 characters") }
        let hash = try await passwordHashing.make(password, logN: configuration.passwordLogN)
        let secret = totp ? Base32.encode(configuration.randomBytes(20)) : nil
        let id = randomToken(12)
        let stored = try secret.map { try sealSecret($0, userId: id) }
        let now = nowMilliseconds
        let row = try await write { connection in
            let inserted = try await connection.insert(
                UserRecord(
                    id: id,
                    email: email,
                    firstName: firstName,
                    lastName: lastName,
                    passwordHash: hash,
                    totpSecret: stored,
                    totpLastStep: nil,
                    created: now
                ),
                "ON CONFLICT (email) DO NOTHING RETURNING \(UserRecord.columns)"
            ).first?.decode(UserRecord.self)
            guard let row = inserted else { throw ProviderError(.alreadyExists, "\(email) has an account") }
            return row
        }
        return (User(row), secret)
    }
}

/// Apple's rules for redirect URIs (and, here, notification URLs): HTTPS with a domain name, no IP
/// address, no localhost, no fragment. `allowInsecure` (development) admits `http://` on loopback.
public enum RedirectRules {
    public static func problem(with uri: String, allowInsecure: Bool) -> String? {
        guard let components = URLComponents(string: uri), let scheme = components.scheme?.lowercased(),
            let host = components.host?.lowercased(), !host.isEmpty
        else { return "not an absolute URL" }
        if components.fragment != nil || uri.contains("#") { return "must not have a fragment" }
        if components.user != nil || components.password != nil { return "must not carry credentials" }
        let loopback = ServiceOrigin(uri)?.isLoopback ?? false
        if allowInsecure && loopback && (scheme == "http" || scheme == "https") { return nil }
        guard scheme == "https" else { return "must use https" }
        if loopback { return "must not be localhost" }
        let isIPv4 = host.split(separator: ".").count == 4 && host.allSatisfy { $0.isNumber || $0 == "." }
        if isIPv4 || host.contains(":") { return "must use a domain name, not an IP address" }
        guard host.contains(".") else { return "must use a fully qualified domain name" }
        return nil
    }
}
