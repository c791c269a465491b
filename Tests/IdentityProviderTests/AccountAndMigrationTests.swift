import AsyncHTTPClient
import Foundation
import IdentityProvider
import IdentityProviderTestSupport
import KeyhavenJOSE
import KeyhavenTesting
import NIOCore
import NIOHTTP1
import RelyingParty
import Testing

/// Credential state, the person's actions, and moving an app to another team.
@Suite(.offCooperativePool)
struct AccountAndMigrationTests {
    @Test func credentialStateFollowsThePersonsChoices() async throws {
        try await ProviderHarness.with { harness in
            let client = harness.client()
            let code = try #require(try await harness.authorizeInBrowser(share: false)["code"])
            let (tokens, claims) = try await client.exchange(code: code, redirectURI: harness.redirectURI, nonce: nil)
            #expect(try await client.credentialState(sub: claims.sub) == "authorized")
            #expect(try await client.credentialState(sub: "000000.00000000000000000000000000000000.0000") == "notFound")

            let user = try #require(try await harness.provider.user(email: harness.email))
            let services = try await harness.provider.connectedServices(userId: user.id)
            #expect(services.map(\.clientId) == [harness.clientId])
            #expect(services.first?.hidesEmail == true)
            try await harness.provider.stopUsing(userId: user.id, clientId: harness.clientId)
            #expect(try await client.credentialState(sub: claims.sub) == "revoked")
            await #expect { _ = try await client.refresh(tokens.refresh_token!) } throws: {
                ($0 as? RelyingPartyError)?.oauthError == "invalid_grant"
            }
            // Coming back is a first authorization again: the name is sent again, the sub is the same.
            let again = try await harness.authorizeInBrowser(share: false)
            #expect(again["user"]?.contains("Lovelace") == true)
            let (_, back) = try await client.exchange(
                code: try #require(again["code"]),
                redirectURI: harness.redirectURI,
                nonce: nil
            )
            #expect(back.sub == claims.sub)
            #expect(back.email == claims.email, "the relay address is stable per user and team")
        }
    }

    @Test func revokingFromTheServiceEndsTheAuthorization() async throws {
        try await ProviderHarness.with { harness in
            let client = harness.client()
            let code = try #require(try await harness.authorizeInBrowser()["code"])
            let (tokens, claims) = try await client.exchange(code: code, redirectURI: harness.redirectURI, nonce: nil)
            try await client.revoke(tokens.access_token, hint: "access_token")
            #expect(try await client.credentialState(sub: claims.sub) == "revoked")
            try await client.revoke(tokens.refresh_token!)  // already revoked: still 200
        }
    }

    @Test func appTransferCarriesUsersToTheNewTeam() async throws {
        try await ProviderHarness.with { harness in
            let provider = harness.provider
            let code = try #require(try await harness.authorizeInBrowser(share: false)["code"])
            let (_, before) = try await harness.client().exchange(
                code: code,
                redirectURI: harness.redirectURI,
                nonce: nil
            )
            let recipient = try await provider.createTeam(name: "New Owner Inc")
            let recipientKey = try await provider.createTeamKey(teamId: recipient.id)

            func migration(
                _ key: ES256SigningKey,
                team: String,
                _ fields: [(String, String)]
            ) async throws -> [String: Any] {
                var configuration = SignInClient.Configuration(
                    issuer: provider.configuration.issuer,
                    baseURL: harness.baseURL,
                    clientId: harness.clientId,
                    teamId: team,
                    key: key
                )
                configuration.now = { Date() }
                let client = SignInClient(configuration: configuration)
                let secret = try client.clientSecret()
                let transport = HTTPRelyingPartyTransport()
                let (_, tokenBody) = try await transport.postForm(
                    harness.baseURL + "/auth/token",
                    fields: [
                        ("grant_type", "client_credentials"), ("scope", "user.migration"),
                        ("client_id", harness.clientId), ("client_secret", secret),
                    ],
                    bearer: nil
                )
                let token =
                    try #require(
                        try JSONSerialization.jsonObject(with: Data(tokenBody)) as? [String: Any]
                    )["access_token"] as? String
                let (_, body) = try await transport.postForm(
                    harness.baseURL + "/auth/usermigrationinfo",
                    fields: [("client_id", harness.clientId), ("client_secret", secret)] + fields,
                    bearer: token
                )
                return try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
            }

            let sent = try await migration(
                harness.teamKey,
                team: harness.teamId,
                [("sub", before.sub), ("target", recipient.id)]
            )
            let transferSub = try #require(sent["transfer_sub"] as? String)
            let repeated = try await migration(
                harness.teamKey,
                team: harness.teamId,
                [("sub", before.sub), ("target", recipient.id)]
            )
            #expect(repeated["transfer_sub"] as? String == transferSub, "stable for the pair")

            try await provider.transferClient(harness.clientId, toTeam: recipient.id)
            let exchanged = try await migration(recipientKey, team: recipient.id, [("transfer_sub", transferSub)])
            let newSub = try #require(exchanged["sub"] as? String)
            #expect(newSub != before.sub)
            #expect(exchanged["is_private_email"] as? Bool == true)
            #expect((exchanged["email"] as? String) != before.email, "a new relay address for the new team")

            // During the window the id_token carries transfer_sub, and the old sub reads "transferred".
            var configuration = SignInClient.Configuration(
                issuer: provider.configuration.issuer,
                baseURL: harness.baseURL,
                clientId: harness.clientId,
                teamId: recipient.id,
                key: recipientKey
            )
            configuration.now = { Date() }
            let newOwner = SignInClient(configuration: configuration)
            let next = try #require(try await harness.authorizeInBrowser()["code"])
            let (_, after) = try await newOwner.exchange(code: next, redirectURI: harness.redirectURI, nonce: nil)
            #expect(after.sub == newSub)
            #expect(after.transfer_sub == transferSub)
            #expect(try await newOwner.credentialState(sub: before.sub) == "transferred")

            // A migration token is single-use.
            let transport = HTTPRelyingPartyTransport()
            let secret = try newOwner.clientSecret()
            let (_, tokenBody) = try await transport.postForm(
                harness.baseURL + "/auth/token",
                fields: [
                    ("grant_type", "client_credentials"), ("scope", "user.migration"),
                    ("client_id", harness.clientId), ("client_secret", secret),
                ],
                bearer: nil
            )
            let token =
                (try JSONSerialization.jsonObject(with: Data(tokenBody)) as? [String: Any])?["access_token"] as? String
            for expectedStatus in [200, 400] {
                let (status, _) = try await transport.postForm(
                    harness.baseURL + "/auth/usermigrationinfo",
                    fields: [
                        ("client_id", harness.clientId), ("client_secret", secret), ("transfer_sub", transferSub),
                    ],
                    bearer: token
                )
                #expect(status == expectedStatus)
            }
        }
    }
}
