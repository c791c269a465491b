import Foundation
import GRDB
import KeyhavenTesting
import Testing

@testable import Vault

/// Vaults written before record versions and the integrity check (format 1) open and are upgraded
/// in place. Fixtures/format-1.sqlite was written by Keyhaven at commit d278163 (scrypt N=2^17):
/// alice (example.com, two history entries), bob (a pending upgrade), carol (recently deleted at
/// 1_795_000_300), and a provider session.
@Suite(.offCooperativePool)
struct FormatUpgradeTests {
    static let password = "format-1 fixture: tangerine lighthouse 47 quartz"
    static let written = Date(timeIntervalSince1970: 1_795_000_300)

    static func copyOfFixture() throws -> URL {
        let url = try TemporaryDirectory.make().appendingPathComponent("vault.sqlite")
        try FileManager.default.copyItem(at: Fixtures.url("format-1.sqlite"), to: url)
        return url
    }

    @Test func aFormat1VaultOpensAndIsUpgraded() throws {
        let url = try Self.copyOfFixture()
        let before = VaultFileEdits.contents(url)
        #expect(throws: VaultError(.wrongPassword, "")) {
            try Vault.open(at: url, masterPassword: "not it")
        }
        #expect(VaultFileEdits.contents(url) == before)

        let now = Self.written.addingTimeInterval(24 * 3600)
        let vault = try Vault.open(at: url, masterPassword: Self.password, now: { now })
        let listing = try vault.list(includeDeleted: true)
        #expect(listing.failures.isEmpty)
        #expect(listing.credentials.map(\.user) == ["alice", "bob", "carol"])
        let alice = listing.credentials[0]
        #expect(alice.password == "alice-third-password")
        #expect(alice.totp == "JBSWY3DPEHPK3PXP" && alice.folder == "Work" && alice.notes == "note a")
        #expect(try vault.history(alice.id).map(\.password) == ["alice-first-password", "alice-second-password"])
        #expect(try vault.list(onlyDeleted: true).credentials.map(\.user) == ["carol"])
        #expect(try vault.pendingUpgrades().map(\.newPassword) == ["bob-new-password"])
        #expect(try vault.providerSession(issuer: "https://idp.example")?.deviceToken == "device-token-secret")
        #expect(try vault.credentials(forService: "https://example.com").credentials.map(\.id) == [alice.id])
        try vault.update(alice.id) { $0.password = "alice-fourth-password" }
        try vault.close()

        let state = try VaultFileEdits.read(url) { db in
            (
                try Int.fetchOne(db, sql: "SELECT format FROM vault")!,
                try Int64.fetchAll(db, sql: "SELECT version FROM credential ORDER BY created"),
                try Data.fetchOne(db, sql: "SELECT integrity FROM vault")
            )
        }
        #expect(state.0 == 2)
        #expect(state.1 == [2, 1, 1])
        #expect(state.2?.count == 32)
        let again = try Vault.open(at: url, masterPassword: Self.password, now: { now })
        #expect(try again.credential(alice.id).password == "alice-fourth-password")
        try again.close()

        // From now on the clear state is authenticated: the review's `deleted` edit is refused.
        try VaultFileEdits.edit(url) { db in try db.execute(sql: "UPDATE credential SET deleted = NULL") }
        #expect {
            try Vault.open(at: url, masterPassword: Self.password, now: { now })
        } throws: { error in
            (error as? VaultError)?.code == .tampered
        }
    }

    /// The upgrade re-keys: rows of older copies (sealed under the format-1 key) can never be mixed
    /// in by claiming format 1 again, and a format-2 vault edited to claim format 1 is refused.
    @Test func theUpgradeReKeysAndCannotBeReplayed() throws {
        let url = try Self.copyOfFixture()
        let (kdf, wrapped) = try VaultFileEdits.read(url) { db in
            let row = try Row.fetchOne(db, sql: "SELECT kdf, wrappedKey FROM vault")!
            return (
                try JSONDecoder().decode(KDFParameters.self, from: Data((row["kdf"] as String).utf8)),
                row["wrappedKey"] as Data
            )
        }
        let formatOneKeys = try VaultKeys.unwrap(wrapped, password: Self.password, kdf: kdf)
        let now = Self.written.addingTimeInterval(3600)
        try Vault.open(at: url, masterPassword: Self.password, now: { now }).close()
        let rows = try VaultFileEdits.read(url) { db in
            try Row.fetchAll(db, sql: "SELECT id, version, sealed FROM credential")
        }
        #expect(rows.count == 3)
        for row in rows {
            let id = CredentialID(rawValue: row["id"])!
            for associatedData in [Vault.legacyRecordAD(id), Vault.recordAD(id, version: row["version"])] {
                #expect((try? formatOneKeys.open(row["sealed"], associatedData: associatedData)) == nil)
            }
        }
        try VaultFileEdits.edit(url) { db in try db.execute(sql: "UPDATE vault SET format = 1") }
        let before = VaultFileEdits.contents(url)
        #expect {
            try Vault.open(at: url, masterPassword: Self.password, now: { now })
        } throws: { error in
            (error as? VaultError)?.code == .tampered
        }
        #expect(VaultFileEdits.contents(url) == before)
    }

    /// The purge after the upgrade acts on the (now authenticated) deletion time: carol, deleted
    /// more than 30 days before, goes; the others stay.
    @Test func theUpgradeThenPurgesByAuthenticatedState() throws {
        let url = try Self.copyOfFixture()
        let later = Self.written.addingTimeInterval(31 * 24 * 3600)
        let vault = try Vault.open(at: url, masterPassword: Self.password, now: { later })
        #expect(try vault.list(includeDeleted: true).credentials.map(\.user) == ["alice", "bob"])
        try vault.close()
        #expect(try VaultFileEdits.read(url) { db in try Int.fetchOne(db, sql: "SELECT format FROM vault") } == 2)
    }
}
