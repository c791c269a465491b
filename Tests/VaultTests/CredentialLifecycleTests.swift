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
        #expect {
            try later.credential(id)
        } throws: { error in
            (error as? VaultError)?.code == .notFound && (error as? VaultError)?.record == id
        }
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

    /// Issue 13 #10: parent domains stop at the registrable domain; scheme and port count when the
    /// request is a URL.
    @Test func serviceLookupStaysWithinTheSite() throws {
        let test = try TestVault()
        func add(_ service: String) throws -> CredentialID {
            try test.vault.add(CredentialContent(services: [.init(service)], user: service, password: "p"))
        }
        let pages = try add("github.io")
        let alice = try add("https://alice.github.io")
        let shop = try add("shop.example.co.uk")
        let couk = try add("co.uk")
        let tls = try add("https://example.com")
        let plain = try add("http://example.com")
        let alt = try add("https://example.com:8443")
        let router = try add("http://192.168.1.1")
        let dev = try add("localhost:3000")
        func ids(_ query: String) throws -> [CredentialID] {
            try test.vault.credentials(forService: query).credentials.map(\.id)
        }
        #expect(try ids("https://alice.github.io/login") == [alice])
        #expect(try ids("https://bob.github.io/login").isEmpty)
        #expect(try ids("github.io") == [pages])
        #expect(try ids("https://www.shop.example.co.uk/") == [shop])
        #expect(try ids("https://other.co.uk/").isEmpty)
        #expect(try ids("co.uk") == [couk])
        // Scheme and port count for a URL; a bare name matches any of them.
        #expect(try ids("https://example.com/login") == [tls])
        #expect(try ids("http://example.com/login") == [plain])
        #expect(try ids("https://example.com:8443/") == [alt])
        #expect(try ids("https://www.example.com/") == [tls])
        #expect(Set(try ids("example.com")) == [tls, plain, alt])
        #expect(try ids("example.com:8443") == [alt])
        // IP addresses match only themselves, never a "parent".
        #expect(try ids("http://192.168.1.1/admin") == [router])
        #expect(try ids("http://1.168.1.1/").isEmpty)
        #expect(try ids("https://192.168.1.1/").isEmpty)
        // A bare loopback name with a port matches either scheme on that port.
        #expect(try ids("http://localhost:3000/") == [dev])
        #expect(try ids("http://localhost:4000/").isEmpty)
    }

    /// Exact matches come before parent-domain ones, and those before subdomain ones.
    @Test func serviceLookupRanksMatches() throws {
        let test = try TestVault()
        let child = try test.vault.add(
            CredentialContent(services: [.init("a.www.example.com")], user: "child", password: "1")
        )
        let parent = try test.vault.add(
            CredentialContent(services: [.init("example.com")], user: "parent", password: "2")
        )
        let exact = try test.vault.add(
            CredentialContent(services: [.init("www.example.com")], user: "exact", password: "3")
        )
        #expect(
            try test.vault.credentials(forService: "www.example.com").credentials.map(\.id) == [exact, parent, child]
        )
        let identifier = ServiceIdentifier("example.com")
        #expect(identifier.match(for: .init("https://www.example.com")) == .parent)
        #expect(ServiceIdentifier("www.example.com").match(for: .init("example.com")) == .subdomain)
        #expect(ServiceIdentifier("androidapp://com.example").match(for: .init("androidapp://COM.example")) == .exact)
        #expect(ServiceIdentifier("My Bank").match(for: .init("My Bank")) == nil)
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
