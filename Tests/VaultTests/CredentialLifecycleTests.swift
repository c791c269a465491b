import Foundation
import KeyhavenTesting
import Testing
import Vault

@Suite(.offCooperativePool)
struct CredentialLifecycleTests {
    @Test func passwordHistoryKeepsEveryReplacedPassword() throws {
        let clock = TestClock()
        let test = try TestVault(now: clock.now)
        let start = clock.now()
        let id = try test.vault.add(CredentialContent(services: [.init("example.com")], user: "alice", password: "one"))
        for next in ["two", "three", "four"] {
            clock.advance(by: 3600)
            try test.vault.update(id) { $0.password = next }
        }
        // Editing something else adds no history.
        try test.vault.update(id) { $0.notes = "changed" }
        let history = try test.vault.history(id)
        #expect(history.map(\.password) == ["one", "two", "three"])
        #expect(history.map(\.replaced) == [1.0, 2, 3].map { start.addingTimeInterval($0 * 3600) })
        #expect(try test.vault.credential(id).password == "four")
    }

    @Test func anUpgradedAccountKeepsItsRecordWithoutAPassword() throws {
        let test = try TestVault()
        let id = try test.vault.add(
            CredentialContent(services: [.init("shiny.example")], user: "bob", password: "weak")
        )
        try test.vault.update(id) {
            $0.password = nil
            $0.signIn = SignInLink(issuer: "https://idp.example", subject: "000123.abc", linked: Date())
        }
        let credential = try test.reopen().credential(id)
        #expect(credential.password == nil)
        #expect(credential.signIn?.issuer == "https://idp.example")
        #expect(try test.vault.history(id).map(\.password) == ["weak"])
    }

    @Test func recentlyDeletedForThirtyDays() throws {
        let clock = TestClock()
        let test = try TestVault(now: clock.now)
        let id = try test.vault.add(CredentialContent(services: [.init("example.com")], user: "alice", password: "pw"))
        try test.vault.remove(id)
        #expect(try test.vault.list().credentials.isEmpty)
        #expect(try test.vault.list(onlyDeleted: true).credentials.map(\.id) == [id])
        try test.vault.restore(id)
        #expect(try test.vault.list().credentials.map(\.id) == [id])

        try test.vault.remove(id)
        clock.advance(by: 29 * 24 * 3600)
        #expect(try test.reopen(now: clock.now).list(onlyDeleted: true).credentials.count == 1)
        clock.advance(by: 2 * 24 * 3600)
        let later = try test.reopen(now: clock.now)
        #expect(try later.list(includeDeleted: true).credentials.isEmpty)
        #expect(throws: VaultError(.notFound, "", record: id)) { try later.credential(id) }
    }

    @Test func serviceLookupUsesDomainsAndParents() throws {
        let test = try TestVault()
        let root = try test.vault.add(CredentialContent(services: [.init("example.com")], user: "root", password: "1"))
        let login = try test.vault.add(
            CredentialContent(services: [.init("https://login.example.com/sign-in")], user: "login", password: "2")
        )
        let other = try test.vault.add(
            CredentialContent(services: [.init("https://other.example.org")], user: "o", password: "3")
        )
        let app = try test.vault.add(
            CredentialContent(services: [.init("androidapp://com.example.app")], user: "a", password: "4")
        )
        func ids(_ query: String) throws -> Set<CredentialID> {
            Set(try test.vault.credentials(forService: query).credentials.map(\.id))
        }
        #expect(try ids("example.com") == [root, login])
        #expect(try ids("https://login.example.com/x") == [root, login])
        #expect(try ids("LOGIN.EXAMPLE.COM") == [root, login])
        #expect(try ids("www.example.com") == [root])
        #expect(try ids("other.example.org") == [other])
        #expect(try ids("example.net").isEmpty)
        #expect(try ids("androidapp://com.example.app") == [app])
        #expect(try test.vault.search(text: "LOGIN").credentials.map(\.id) == [login])
    }

    @Test func idsResolveFromPrefixes() throws {
        let test = try TestVault()
        let id = try test.vault.add(CredentialContent(services: [.init("example.com")], user: "alice", password: "pw"))
        #expect(try test.vault.resolve(String(id.rawValue.prefix(8)).uppercased()) == id)
        #expect(throws: VaultError(.invalidInput, "")) { try test.vault.resolve("ab") }
        #expect(throws: VaultError(.notFound, "")) { try test.vault.resolve("ffffffff") }
    }

    @Test func twoConnectionsWriteSafely() async throws {
        let test = try TestVault()
        let other = try test.reopen()
        await withTaskGroup(of: Void.self) { group in
            for vault in [test.vault, other] {
                group.addTask {
                    for index in 0..<100 {
                        _ = try? vault.add(
                            CredentialContent(services: [.init("s\(index).example")], user: "u", password: "p")
                        )
                    }
                }
            }
        }
        #expect(try test.vault.count() == 200)
    }
}
