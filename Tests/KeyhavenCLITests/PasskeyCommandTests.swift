import Foundation
import KeyhavenCLI
import KeyhavenTesting
import Passkeys
import Testing
import Vault
import _KeyhavenSupport

/// `keyhaven passkey list|show|rm` in-process on a vault holding passkeys (issue 16).
@Suite(.offCooperativePool)
struct PasskeyCommandTests {
    let directory: URL
    let environment: [String: String]

    init() throws {
        directory = try TemporaryDirectory.make()
        environment = [
            "KEYHAVEN_VAULT": directory.appendingPathComponent("vault.sqlite").path,
            "KEYHAVEN_PASSWORD": "correct horse battery", "KEYHAVEN_INSECURE_KDF": "1",
        ]
    }

    func run(_ arguments: [String]) async -> (status: Int32, stdout: String, stderr: String) {
        let io = CommandIO(environment: environment, standardInput: "")
        let status = await Keyhaven.run(arguments, io: io)
        return (status, io.standardOutput, io.standardError)
    }

    func vaultWithPasskeys() async throws -> [PasskeyCredential] {
        #expect(await run(["init", "--scrypt-log-n", "10"]).status == 0)
        let vault = try Vault.open(
            at: URL(fileURLWithPath: environment["KEYHAVEN_VAULT"]!),
            masterPassword: "correct horse battery",
            allowInsecureKDF: true
        )
        defer { try? vault.close() }
        var made: [PasskeyCredential] = []
        for (site, user) in [("github.com", "ada"), ("shiny.example", "bob")] {
            let (passkey, _) = try Authenticator().register(
                CreationRequest(
                    rpID: site,
                    rpName: site,
                    userID: Array(user.utf8),
                    userName: user,
                    userDisplayName: user.uppercased(),
                    challenge: [1]
                ),
                origin: "https://\(site)",
                existing: [],
                userVerified: true
            )
            try vault.savePasskey(passkey)
            made.append(passkey)
        }
        return made
    }

    struct Listed: Decodable {
        var id: String
        var rpId: String
        var userName: String
        var algorithm: String
        var credentialId: String
    }

    @Test func passkeysAreListedShownAndRemovedWithoutTheirKeys() async throws {
        _ = try await vaultWithPasskeys()
        let listed = await run(["passkey", "list", "--json"])
        #expect(listed.status == 0, "\(listed.stderr)")
        let summaries = try JSONDecoder().decode([Listed].self, from: Data(listed.stdout.utf8))
        #expect(summaries.map(\.rpId).sorted() == ["github.com", "shiny.example"])
        #expect(summaries.allSatisfy { $0.algorithm == "ES256" })
        #expect(!listed.stdout.contains("privateKey"))
        let one = await run(["passkey", "list", "--site", "GitHub.com"])
        #expect(one.stdout.contains("github.com  ada  ES256") && !one.stdout.contains("shiny.example"))
        let github = try #require(summaries.first { $0.rpId == "github.com" })
        let shown = await run(["passkey", "show", String(github.id.prefix(8))])
        #expect(shown.status == 0)
        #expect(
            shown.stdout.contains("credential id: \(github.credentialId)")
                && shown.stdout.contains("user:          ada (ADA)")
        )
        #expect(await run(["passkey", "show", "abc"]).status == 64)
        #expect(await run(["passkey", "show", "ffffffffff"]).status == 1)
        let removed = await run(["passkey", "rm", String(github.id.prefix(8))])
        #expect(removed.status == 0)
        #expect(removed.stdout.contains("Removed the passkey for ada on github.com"))
        let after = try JSONDecoder().decode(
            [Listed].self,
            from: Data(await run(["passkey", "list", "--json"]).stdout.utf8)
        )
        #expect(after.map(\.rpId) == ["shiny.example"])
        #expect(await run(["passkey"]).stdout.contains("shiny.example  bob"))
    }

    @Test func listJSONShowsEachAccountsPasskeysAndPasskeyOnlyAccounts() async throws {
        let made = try await vaultWithPasskeys()
        // ada has a password for www.github.com (the passkey's RP ID is its parent), bob none.
        #expect(
            await run(["add", "https://www.github.com", "--user", "ada", "--password", "Ada-Password-1"]).status == 0
        )
        struct Account: Decodable {
            var title: String
            var user: String
            var hasPassword: Bool
            var services: [String]
            var passkeys: [Listed]?
        }
        let listed = await run(["list", "--json"])
        #expect(listed.status == 0, "\(listed.stderr)")
        let accounts = try JSONDecoder().decode([Account].self, from: Data(listed.stdout.utf8))
        #expect(accounts.map(\.user) == ["ada", "bob"])
        #expect(accounts[0].hasPassword && accounts[0].passkeys?.map(\.rpId) == ["github.com"])
        #expect(accounts[1].title == "shiny.example" && !accounts[1].hasPassword)
        #expect(accounts[1].services == ["https://shiny.example"])
        #expect(accounts[1].passkeys?.map(\.id.count) == [64])
        // Never a key.
        for passkey in made {
            #expect(!listed.stdout.contains(Base64URL.encode(passkey.privateKey)))
        }
        #expect(await run(["list"]).stdout.contains("2 passkeys: keyhaven passkey list"))
    }
}
