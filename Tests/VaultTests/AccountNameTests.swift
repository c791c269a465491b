import Foundation
import KeyhavenTesting
import Testing
import Vault

/// `Vault.account(named:)`: how people name accounts (the CLI's `show|edit|rm|copy|otp ACCOUNT`).
@Suite(.offCooperativePool)
struct AccountNameTests {
    func id(_ lookup: AccountLookup) -> CredentialID? {
        if case .found(let credential) = lookup { return credential.id }
        return nil
    }

    func candidates(_ lookup: AccountLookup) -> Set<CredentialID> {
        if case .ambiguous(let credentials) = lookup { return Set(credentials.map(\.id)) }
        return []
    }

    @Test func namesResolveByIDThenServiceAndUserThenTitle() throws {
        let vault = try TestVault().vault
        let alice = try vault.add(CredentialContent(services: [.init("github.com")], user: "alice", password: "a"))
        let bob = try vault.add(CredentialContent(services: [.init("github.com")], user: "Bob", password: "b"))
        let gist = try vault.add(CredentialContent(services: [.init("gist.github.com")], user: "carol", password: "c"))
        let bank = try vault.add(
            CredentialContent(
                title: "My Bank",
                services: [.init("https://login.bank.example")],
                user: "d",
                password: "d"
            )
        )

        #expect(id(try vault.account(named: "github.com/alice")) == alice)
        #expect(id(try vault.account(named: "github.com/bob")) == bob)
        #expect(candidates(try vault.account(named: "github.com")) == [alice, bob])
        #expect(id(try vault.account(named: "gist.github.com")) == gist)
        #expect(id(try vault.account(named: "my bank")) == bank)
        #expect(id(try vault.account(named: String(bob.rawValue.prefix(5)))) == bob)
        #expect(id(try vault.account(named: bob.rawValue.uppercased())) == bob)
        if case .notFound = try vault.account(named: "github.com/zed") {} else { Issue.record("zed found") }
        if case .notFound = try vault.account(named: "nowhere.example") {} else { Issue.record("found") }

        // Recently deleted accounts are found by id only.
        try vault.remove(gist)
        #expect(id(try vault.account(named: gist.rawValue)) == gist)
        #expect(candidates(try vault.account(named: "gist.github.com")) == [alice, bob])
    }
}
