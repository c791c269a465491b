import AccountModification
import Foundation
import KeyhavenApp
import KeyhavenTesting
import Passkeys
import SecurityRecommendations
import ShinyService
import Testing
import UpgradeHTTP
import Vault

/// `upgrade --to passkey` through UpgradeService against a live shiny (issue 16): the passkey lands
/// in the vault and signs in, the retired password moves to the history; what shiny refuses changes
/// nothing; the audit recommends the upgrade.
struct PasskeyUpgradeTests {
    typealias Base = UpgradeServiceTests
    /// shiny on `localhost`: an IP address cannot be a passkey's RP ID.
    static let configuration = ShinyConfiguration(host: "localhost", scryptLogN: 10)

    @Test func theAccountSignsInWithItsNewPasskeyAndThePasswordGoesToTheHistory() async throws {
        try await Base.withShiny(Self.configuration) { shiny, origin in
            try shiny.createAccount(user: "alice", password: "Password1234")
            let test = try TestVault()
            let id = try test.vault.add(
                CredentialContent(services: [.init(origin)], user: "alice", password: "Password1234")
            )
            let result = await Base.coordinator(test.vault).upgradeToPasskey(id, service: origin)
            #expect(result == .upgraded(credential: id, substituted: false))
            let passkeys = try test.vault.passkeys(rpID: "localhost")
            let passkey = try #require(passkeys.first)
            #expect(passkeys.count == 1 && passkey.userName == "alice")
            #expect(try shiny.passkeyCredentialIDs(user: "alice") == [passkey.credentialID])
            #expect(try shiny.signIn(user: "alice", passkey: passkey))
            // shiny retired the password: the record keeps it in its history only.
            #expect(try !shiny.signIn(user: "alice", password: "Password1234"))
            #expect(try test.vault.credential(id).password == nil)
            #expect(try test.vault.history(id).map(\.password) == ["Password1234"])
            #expect(try test.vault.pendingUpgrades().isEmpty)
        }
    }

    @Test func whatShinyRefusesChangesNothing() async throws {
        // A second factor: shiny converts such accounts on its own page only.
        try await Base.withShiny(Self.configuration) { shiny, origin in
            try shiny.createAccount(user: "bob", password: "Welcome12345", totp: true)
            let test = try TestVault()
            let id = try test.vault.add(
                CredentialContent(services: [.init(origin)], user: "bob", password: "Welcome12345")
            )
            let result = await Base.coordinator(test.vault).upgradeToPasskey(id, service: origin)
            guard case .failed(let reason, _) = result else {
                Issue.record("expected a refusal, got \(result)")
                return
            }
            #expect(reason.contains("authenticator code"))
            #expect(try test.vault.passkeys().isEmpty && test.vault.pendingUpgrades().isEmpty)
            #expect(try test.vault.credential(id).password == "Welcome12345")
            #expect(try shiny.signIn(user: "bob", password: "Welcome12345", code: nil) == false)  // needs its code
        }
        // On 127.0.0.1 shiny offers no passkeys (an IP address cannot be an RP ID).
        try await Base.withShiny { shiny, origin in
            try shiny.createAccount(user: "carol", password: "Password1234")
            let test = try TestVault()
            let id = try test.vault.add(
                CredentialContent(services: [.init(origin)], user: "carol", password: "Password1234")
            )
            let result = await Base.coordinator(test.vault).upgradeToPasskey(id, service: origin)
            #expect(result == .failed(reason: "\(origin) does not offer upgrades to passkeys", code: nil))
            #expect(try shiny.signIn(user: "carol", password: "Password1234"))
        }
    }

    @Test func theAuditRecommendsThePasskey() async throws {
        try await Base.withShiny(Self.configuration) { _, origin in
            let offers = ManifestUpgradeOffers(reader: HTTPManifestReader())
            let offer = await offers.upgradeOffer(service: origin)
            #expect(offer == UpgradeOffer(strongPassword: true, signIn: false, passkey: true))
        }
    }
}
