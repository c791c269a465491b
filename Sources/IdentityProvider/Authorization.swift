import Foundation
import KeyhavenJOSE
import _KeyhavenSupport

/// What the consent step shows.
public struct ConsentPrompt: Sendable, Hashable, Codable {
    public var clientId: String
    public var serviceName: String
    /// The person's own address, and whether the service asks for an address at all.
    public var email: String
    public var asksEmail: Bool
    public var asksName: Bool
    public var name: String?
}

/// What the provider sends back to the service (as a `form_post` page, a redirect, or — for
/// Keyhaven's native authorizations — JSON).
public struct AuthorizationResponse: Sendable, Hashable, Codable {
    public var code: String?
    public var id_token: String?
    public var state: String?
    /// `{"name":{"firstName","lastName"},"email"}` as a JSON string, on the first authorization only.
    public var user: String?
    public var error: String?

    /// The fields in the order Apple posts them.
    public var fields: [(String, String)] {
        var result: [(String, String)] = []
        if let state { result.append(("state", state)) }
        if let code { result.append(("code", code)) }
        if let id_token { result.append(("id_token", id_token)) }
        if let user { result.append(("user", user)) }
        if let error { result.append(("error", error)) }
        return result
    }
}

extension IdentityProvider {
    /// The consent step for `request`, or nil when the person already authorized this service.
    public func consentPrompt(_ request: AuthorizationRequest, userId: String) async throws -> ConsentPrompt? {
        try await read { connection in
            guard let client = try await self.client(request.clientId, connection),
                let user = try await self.user(userId, connection)
            else { throw ProviderError(.notFound, "no such client or user") }
            let consent = try await connection.fetchOne(
                ConsentRecord.self,
                "\(ConsentRecord.select) WHERE user_id = ? AND client_id = ?",
                .text(userId),
                .text(client.id)
            ).map(Consent.init)
            if consent?.state == .authorized { return nil }
            let name = [user.firstName, user.lastName].compactMap { $0 }.joined(separator: " ")
            return ConsentPrompt(
                clientId: client.id,
                serviceName: client.name,
                email: user.email,
                asksEmail: request.wantsEmail,
                asksName: request.wantsName,
                name: name.isEmpty ? nil : name
            )
        }
    }

    /// Issues a code (and an id_token when asked) for a signed-in person. `shareEmail` is their
    /// consent choice; nil keeps an existing consent's choice (sharing when there is none).
    public func authorize(
        _ request: AuthorizationRequest,
        authentication: Authentication,
        shareEmail: Bool?
    ) async throws -> AuthorizationResponse {
        let code = randomToken()
        let now = nowMilliseconds
        let relayCandidate = randomAlphanumeric(10) + "@" + configuration.relayDomain
        let (client, firstTime, user) = try await write { connection in
            guard let client = try await self.client(request.clientId, connection),
                let user = try await self.user(authentication.userId, connection)
            else { throw ProviderError(.notFound, "no such client or user") }
            // A code without a redirect URI (a native authorization) is bound to the service by its
            // origin instead: never issued for a client the origin is not registered for.
            if request.redirectURI == nil {
                guard let origin = request.origin, client.isRegistered(origin: origin) else {
                    throw ProviderError(.invalidArgument, "\(client.id) is not registered for the service's origin")
                }
            }
            let consent = try await connection.fetchOne(
                ConsentRecord.self,
                "\(ConsentRecord.select) WHERE user_id = ? AND client_id = ?",
                .text(user.id),
                .text(client.id)
            ).map(Consent.init)
            let share = shareEmail ?? (consent?.state == .authorized ? consent!.shareEmail : true)
            let firstTime = consent?.state != .authorized
            try await connection.insert(
                ConsentRecord(
                    userId: user.id,
                    clientId: client.id,
                    state: Consent.State.authorized.rawValue,
                    shareEmail: share,
                    relayForwarding: true,
                    nameDelivered: false,
                    created: now,
                    updated: now
                ),
                "ON CONFLICT (user_id, client_id) DO UPDATE SET state = 'authorized', share_email = ?, updated = ?",
                SQLValue(share),
                .integer(now)
            )
            try await self.ensureSubject(
                userId: user.id,
                teamId: client.teamId,
                relay: share ? nil : relayCandidate,
                connection
            )
            try await connection.insert(
                CodeRecord(
                    hash: Self.hash(code),
                    clientId: client.id,
                    userId: user.id,
                    redirectURI: request.redirectURI,
                    scope: request.scopes.joined(separator: " "),
                    nonce: request.nonce,
                    authTime: authentication.authTime,
                    realUserStatus: authentication.secondFactor ? 2 : 1,
                    expires: now + self.configuration.codeLifetime * 1000
                )
            )
            if firstTime {
                try await connection.query(
                    "UPDATE consents SET name_delivered = 1 WHERE user_id = ? AND client_id = ?",
                    .text(user.id),
                    .text(client.id)
                )
            }
            return (client, firstTime, user)
        }
        var response = AuthorizationResponse(code: code, state: request.state)
        if request.includeIDToken {
            response.id_token = try await identityToken(
                client: client,
                userId: user.id,
                grant: TokenGrant(
                    scopes: request.scopes,
                    nonce: request.nonce,
                    authTime: authentication.authTime,
                    realUserStatus: authentication.secondFactor ? 2 : 1,
                    codeHash: IdentityTokenClaims.halfHash(code)
                )
            )
        }
        if firstTime && (request.wantsEmail || request.wantsName) {
            response.user = try await userObject(request: request, client: client, user: user)
        }
        return response
    }

    /// The answer when the person cancels: `error=user_cancelled_authorize`.
    public func cancelled(_ request: AuthorizationRequest) -> AuthorizationResponse {
        AuthorizationResponse(state: request.state, error: "user_cancelled_authorize")
    }

    /// The form_post `user` field.
    func userObject(request: AuthorizationRequest, client: Client, user: User) async throws -> String {
        var object: [String: [String: String]] = [:]
        var email: String?
        if request.wantsName {
            var name: [String: String] = [:]
            if let first = user.firstName { name["firstName"] = first }
            if let last = user.lastName { name["lastName"] = last }
            object["name"] = name
        }
        if request.wantsEmail {
            email = try await read { try await self.emailFor(user: user, client: client, $0).address }
        }
        struct UserField: Encodable {
            var name: [String: String]?
            var email: String?
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(UserField(name: object["name"], email: email)), as: UTF8.self)
    }

    /// The person's sub for a team, created the first time; with `relay`, also their relay
    /// address for the team (kept once made: stable per user and team).
    func ensureSubject(userId: String, teamId: String, relay: String?, _ connection: any SQLConnection) async throws {
        let sub =
            String(format: "%06d", Int(configuration.randomBytes(3).reduce(0) { $0 << 8 | Int($1) }) % 1_000_000)
            + "." + Hex.encode(configuration.randomBytes(16))
            + "." + String(format: "%04d", Int(configuration.randomBytes(2).reduce(0) { $0 << 8 | Int($1) }) % 10_000)
        try await connection.insert(
            SubjectRecord(userId: userId, teamId: teamId, sub: sub, created: nowMilliseconds),
            "ON CONFLICT (user_id, team_id) DO NOTHING"
        )
        if let relay {
            try await connection.query(
                "UPDATE subjects SET relay_email = ? WHERE user_id = ? AND team_id = ? AND relay_email IS NULL",
                .text(relay),
                .text(userId),
                .text(teamId)
            )
        }
    }

    /// The address a service sees for a person: their own, or the team's relay address.
    func emailFor(
        user: User,
        client: Client,
        _ connection: any SQLConnection
    ) async throws -> (
        address: String, isPrivate: Bool
    ) {
        let shares = try await connection.fetchOne(
            Bool.self,
            "SELECT share_email FROM consents WHERE user_id = ? AND client_id = ?",
            .text(user.id),
            .text(client.id)
        )
        if shares ?? true { return (user.email, false) }
        let relay = try await connection.fetchOne(
            String?.self,
            "SELECT relay_email FROM subjects WHERE user_id = ? AND team_id = ?",
            .text(user.id),
            .text(client.teamId)
        )
        return relay.flatMap { $0 }.map { ($0, true) } ?? (user.email, false)
    }
}
