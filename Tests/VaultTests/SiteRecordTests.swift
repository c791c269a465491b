import Foundation
import GRDB
import KeyhavenTesting
import Synchronization
import Testing
import Vault

/// What audits learn per website (issue 27): sealed under a keyed id (no site name in the file),
/// covered by the integrity check, dropped by `passwd`, kept across close and reopen, and gone
/// once expired.
@Suite(.offCooperativePool)
struct SiteRecordTests {
    static let sites = ["https://shop.secret-site.example", "https://mail.other-secret.example"]

    static func records(expiring expires: Date) -> [SiteRecord] {
        sites.map { SiteRecord(site: $0, content: Data(#"{"said":"\#($0)/account/password"}"#.utf8), expires: expires) }
    }

    @Test func recordsSurviveCloseAndReopenAndNameNoSiteInTheClear() throws {
        let test = try TestVault()
        let tomorrow = Date().addingTimeInterval(86_400)
        try test.vault.saveSiteRecords(Self.records(expiring: tomorrow))
        // One more save replaces a site's record rather than adding one.
        try test.vault.saveSiteRecords([
            SiteRecord(site: Self.sites[0], content: Data(#"{"said":"nothing"}"#.utf8), expires: tomorrow)
        ])
        try test.vault.close()
        for bytes in VaultFileEdits.contents(test.url) {
            for name in ["secret-site", "other-secret", "account/password", "nothing"] {
                #expect(bytes.range(of: Data(name.utf8)) == nil, "\(name) is in the file in the clear")
            }
        }
        let reopened = try test.reopen()
        let read = try reopened.siteRecords().sorted { $0.site < $1.site }
        #expect(read.map(\.site) == Self.sites.sorted())
        #expect(read.first { $0.site == Self.sites[0] }?.content == Data(#"{"said":"nothing"}"#.utf8))
        #expect(abs((read.first?.expires.timeIntervalSince1970 ?? 0) - tomorrow.timeIntervalSince1970) < 0.001)
        #expect(try reopened.removeSiteRecords())
        #expect(try reopened.siteRecords().isEmpty)
    }

    @Test func expiredRecordsAreNotReadAndGoWithTheNextSave() throws {
        let clock = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        let test = try TestVault(now: { clock.withLock { $0 } })
        let start = clock.withLock { $0 }
        try test.vault.saveSiteRecords([
            SiteRecord(site: "https://soon.example", content: Data("a".utf8), expires: start.addingTimeInterval(300)),
            SiteRecord(site: "https://later.example", content: Data("b".utf8), expires: start.addingTimeInterval(900)),
        ])
        #expect(try test.vault.siteRecords().count == 2)
        clock.withLock { $0 += 301 }
        #expect(try test.vault.siteRecords().map(\.site) == ["https://later.example"])
        // A record already expired is not written at all; the expired row is dropped.
        try test.vault.saveSiteRecords([
            SiteRecord(site: "https://past.example", content: Data("c".utf8), expires: start)
        ])
        let rows = try VaultFileEdits.read(test.url) { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM siteRecord")
        }
        #expect(rows == 1)
        clock.withLock { $0 += 600 }
        #expect(try test.vault.siteRecords().isEmpty)
    }

    /// They are a cache of what sites said: `passwd` drops them (no row sealed under the old key
    /// stays), and records saved afterwards are sealed under the new key.
    @Test func changingTheMasterPasswordDropsThem() throws {
        let test = try TestVault()
        try test.vault.saveSiteRecords(Self.records(expiring: Date().addingTimeInterval(3600)))
        try test.vault.changeMasterPassword(
            to: "another master password",
            kdf: .random(logN: 10),
            allowInsecureKDF: true
        )
        try test.vault.close()
        let rows = try VaultFileEdits.read(test.url) { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM siteRecord")
        }
        #expect(rows == 0)
        let reopened = try Vault.open(at: test.url, masterPassword: "another master password", allowInsecureKDF: true)
        #expect(try reopened.siteRecords().isEmpty)
        try reopened.saveSiteRecords(Self.records(expiring: Date().addingTimeInterval(3600)))
        try reopened.close()
        let again = try Vault.open(at: test.url, masterPassword: "another master password", allowInsecureKDF: true)
        #expect(try again.siteRecords().map(\.site).sorted() == Self.sites.sorted())
    }

    @Test func aRemovedEditedOrRolledBackRecordIsTampering() throws {
        let removed = try TestVault()
        try removed.vault.saveSiteRecords(Self.records(expiring: Date().addingTimeInterval(3600)))
        try removed.vault.close()
        try VaultFileEdits.edit(removed.url) { db in try db.execute(sql: "DELETE FROM siteRecord WHERE rowid = 1") }
        VaultIntegrityTests.expectTampered(removed.url)

        // Its expiry is authenticated too: pushing it out is tampering.
        let extended = try TestVault()
        try extended.vault.saveSiteRecords(Self.records(expiring: Date().addingTimeInterval(3600)))
        try extended.vault.close()
        try VaultFileEdits.edit(extended.url) { db in
            try db.execute(sql: "UPDATE siteRecord SET expires = expires + 1e6")
        }
        VaultIntegrityTests.expectTampered(extended.url)

        let rolledBack = try TestVault()
        let site = [
            SiteRecord(site: "https://a.example", content: Data("old".utf8), expires: Date().addingTimeInterval(3600))
        ]
        try rolledBack.vault.saveSiteRecords(site)
        let old = try VaultFileEdits.read(rolledBack.url) { db in
            try Data.fetchOne(db, sql: "SELECT sealed FROM siteRecord")
        }
        try rolledBack.vault.saveSiteRecords([
            SiteRecord(site: "https://a.example", content: Data("new".utf8), expires: site[0].expires)
        ])
        try rolledBack.vault.close()
        try VaultFileEdits.edit(rolledBack.url) { db in
            try db.execute(sql: "UPDATE siteRecord SET sealed = ?", arguments: [old])
        }
        VaultIntegrityTests.expectTampered(rolledBack.url)
    }
}
