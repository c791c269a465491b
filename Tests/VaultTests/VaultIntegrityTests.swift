import Foundation
import GRDB
import KeyhavenTesting
import Testing
import Vault

/// Record rollback and metadata tampering (security review M11, issue 13 item 6): whoever can
/// write the file (a sync service, a backup tool) can neither revert a record, resurrect or purge
/// one, nor edit what is stored in clear — each is refused on open as `tampered`, and nothing is
/// written.
@Suite(.offCooperativePool)
struct VaultIntegrityTests {
    static func expectTampered(
        _ url: URL,
        record: CredentialID? = nil,
        now: @escaping @Sendable () -> Date = { Date() },
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(sourceLocation: sourceLocation) {
            try Vault.open(at: url, masterPassword: "test master password", allowInsecureKDF: true, now: now)
        } throws: { error in
            guard let error = error as? VaultError, error.code == .tampered else { return false }
            return record == nil || error.record == record
        }
    }

    /// The review's experiment: an older `sealed` blob copied back over a record reverted its
    /// password with no error.
    @Test func aRecordsOlderCiphertextIsRefused() throws {
        let test = try TestVault()
        let id = try test.vault.add(CredentialContent(services: [.init("example.com")], user: "a", password: "old-pw"))
        let old = try VaultFileEdits.read(test.url) { db in try Data.fetchOne(db, sql: "SELECT sealed FROM credential")
        }
        try test.vault.update(id) { $0.password = "new-pw" }
        try test.vault.close()
        try VaultFileEdits.edit(test.url) { db in
            try db.execute(sql: "UPDATE credential SET sealed = ?", arguments: [old])
        }
        Self.expectTampered(test.url, record: id)
    }

    /// The same for a pending upgrade: its entry, rewritten when a sign-in upgrade records the
    /// account, cannot be put back to the older copy (which lacks the linked account).
    @Test func aPendingUpgradesOlderCiphertextIsRefused() throws {
        let test = try TestVault()
        let id = try test.vault.add(CredentialContent(services: [.init("example.com")], user: "a", password: "pw"))
        var entry = UpgradeJournalEntry(
            credentialID: id,
            kind: .signIn,
            service: "example.com",
            endpoint: "https://example.com/x",
            requestId: "r",
            oldPassword: "pw",
            newPassword: nil,
            started: Date()
        )
        try test.vault.beginUpgrade(entry)
        let old = try VaultFileEdits.read(test.url) { db in
            try Data.fetchOne(db, sql: "SELECT sealed FROM upgradeJournal")
        }
        entry.signInIssuer = "https://idp.example"
        entry.signInSubject = "000123.abc"
        try test.vault.updateUpgrade(entry)
        try test.vault.close()
        try VaultFileEdits.edit(test.url) { db in
            try db.execute(sql: "UPDATE upgradeJournal SET sealed = ?", arguments: [old])
        }
        Self.expectTampered(test.url)
    }

    /// The whole older row back (ciphertext, version, dates, content tag): the set no longer matches.
    @Test func aRecordsOlderRowIsRefused() throws {
        let test = try TestVault()
        let id = try test.vault.add(CredentialContent(services: [.init("example.com")], user: "a", password: "old-pw"))
        let old = try VaultFileEdits.read(test.url) { db in try Row.fetchOne(db, sql: "SELECT * FROM credential")! }
        try test.vault.update(id) { $0.password = "new-pw" }
        try test.vault.close()
        try VaultFileEdits.edit(test.url) { db in
            try db.execute(
                sql: "UPDATE credential SET sealed = ?, version = ?, modified = ?, contentTag = ?",
                arguments: [
                    old["sealed"] as Data, old["version"] as Int64, old["modified"] as Double,
                    old["contentTag"] as Data,
                ]
            )
        }
        Self.expectTampered(test.url)
    }

    /// The review's experiment: `UPDATE credential SET deleted = 0` made the next `list` purge every
    /// credential for good. Now the open is refused and every row stays.
    @Test(arguments: ["UPDATE credential SET deleted = 0", "UPDATE credential SET deleted = NULL"])
    func editingTheDeletedColumnIsRefusedAndPurgesNothing(_ sql: String) throws {
        let clock = TestClock()
        let test = try TestVault(now: clock.now)
        let kept = try test.vault.add(CredentialContent(services: [.init("a.example")], user: "a", password: "pa"))
        let binned = try test.vault.add(CredentialContent(services: [.init("b.example")], user: "b", password: "pb"))
        try test.vault.remove(binned)
        try test.vault.close()
        try VaultFileEdits.edit(test.url) { db in try db.execute(sql: sql) }
        let before = VaultFileEdits.contents(test.url)
        clock.advance(by: 40 * 24 * 3600)
        Self.expectTampered(test.url, now: clock.now)
        #expect(VaultFileEdits.contents(test.url) == before)
        #expect(
            try VaultFileEdits.read(test.url) { db in try String.fetchAll(db, sql: "SELECT id FROM credential") }.count
                == 2
        )
        _ = kept
    }

    /// A record purged after 30 days, put back from an older copy of the file (with its history).
    @Test func aPurgedRecordCannotBeResurrected() throws {
        let clock = TestClock()
        let test = try TestVault(now: clock.now)
        try test.vault.add(CredentialContent(services: [.init("a.example")], user: "a", password: "pa"))
        let gone = try test.vault.add(CredentialContent(services: [.init("b.example")], user: "b", password: "pb"))
        try test.vault.update(gone) { $0.password = "pb2" }
        try test.vault.remove(gone)
        try test.vault.close()
        let backup = test.directory.appendingPathComponent("backup.sqlite")
        try VaultFileEdits.copy(test.url, to: backup)
        clock.advance(by: 31 * 24 * 3600)
        try test.reopen(now: clock.now).close()
        #expect(
            try VaultFileEdits.read(test.url) { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM credential") }
                == 1
        )
        try VaultFileEdits.edit(test.url) { db in
            try db.execute(sql: "ATTACH DATABASE ? AS old", arguments: [backup.path])
            try db.execute(
                sql: "INSERT INTO credential SELECT * FROM old.credential WHERE id = ?",
                arguments: [gone.rawValue]
            )
            try db.execute(sql: "UPDATE credential SET deleted = NULL WHERE id = ?", arguments: [gone.rawValue])
            try db.execute(
                sql: "INSERT INTO credentialService SELECT * FROM old.credentialService WHERE credentialID = ?",
                arguments: [gone.rawValue]
            )
            try db.execute(
                sql: "INSERT INTO passwordHistory SELECT * FROM old.passwordHistory WHERE credentialID = ?",
                arguments: [gone.rawValue]
            )
        }
        Self.expectTampered(test.url, now: clock.now)
    }

    /// Every other clear column and row counts too: dropping history (the review's experiment),
    /// lookup tags, a pending upgrade or a provider session; moving dates; swapping content tags.
    @Test(arguments: [
        "DELETE FROM passwordHistory",
        "UPDATE passwordHistory SET replaced = replaced - 86400",
        "DELETE FROM credentialService WHERE rowid = (SELECT MIN(rowid) FROM credentialService)",
        "DELETE FROM upgradeJournal",
        "DELETE FROM providerSession",
        "DELETE FROM credential WHERE rowid = (SELECT MIN(rowid) FROM credential)",
        "UPDATE credential SET modified = modified + 1",
        "UPDATE credential SET created = 0",
        "UPDATE credential SET contentTag = (SELECT MAX(contentTag) FROM credential)",
        "UPDATE vault SET created = created + 1",
        "UPDATE upgradeJournal SET version = version + 1",
        "UPDATE providerSession SET created = 0",
    ])
    func anyEditOfTheClearStateIsRefused(_ sql: String) throws {
        let test = try TestVault()
        let a = try test.vault.add(CredentialContent(services: [.init("a.example")], user: "a", password: "pa1"))
        try test.vault.add(CredentialContent(services: [.init("b.example")], user: "b", password: "pb"))
        try test.vault.update(a) { $0.password = "pa2" }
        try test.vault.beginUpgrade(
            UpgradeJournalEntry(
                credentialID: a,
                kind: .strongPassword,
                service: "a.example",
                endpoint: "https://a.example/x",
                requestId: "r",
                oldPassword: "pa2",
                newPassword: "pa3",
                started: Date()
            )
        )
        try test.vault.saveProviderSession(
            ProviderSession(
                issuer: "https://idp.example",
                baseURL: "https://idp.example",
                email: "a@example.com",
                deviceToken: "t",
                created: Date()
            )
        )
        try test.vault.close()
        try VaultFileEdits.edit(test.url) { db in
            try db.execute(sql: sql)
            #expect(db.changesCount > 0, "the edit changed nothing: \(sql)")
        }
        let before = VaultFileEdits.contents(test.url)
        Self.expectTampered(test.url)
        #expect(VaultFileEdits.contents(test.url) == before)
    }

    /// Tampering while a vault is open is caught by the next write, which never re-authenticates it.
    @Test func aWriteNeverLaundersTampering() throws {
        let test = try TestVault()
        let id = try test.vault.add(CredentialContent(services: [.init("a.example")], user: "a", password: "pa"))
        try test.vault.remove(id)
        try VaultFileEdits.edit(test.url) { db in try db.execute(sql: "UPDATE credential SET deleted = NULL") }
        #expect {
            try test.vault.add(CredentialContent(services: [.init("b.example")], user: "b", password: "pb"))
        } throws: { error in
            (error as? VaultError)?.code == .tampered
        }
        try test.vault.close()
        Self.expectTampered(test.url)
    }

    /// Honest use from several connections keeps the check valid; damage to one record stays
    /// contained (``StorageSecurityTests/aFlippedByteNamesTheRecordAndSparesTheOthers()``).
    @Test func honestWritesFromTwoConnectionsStayValid() throws {
        let clock = TestClock()
        let test = try TestVault(now: clock.now)
        let other = try test.reopen(now: clock.now)
        let a = try test.vault.add(CredentialContent(services: [.init("a.example")], user: "a", password: "pa"))
        let b = try other.add(CredentialContent(services: [.init("b.example")], user: "b", password: "pb"))
        try test.vault.update(b) { $0.password = "pb2" }
        try other.remove(a)
        try test.vault.close()
        try other.close()
        clock.advance(by: 31 * 24 * 3600)
        let reopened = try test.reopen(now: clock.now)
        #expect(try reopened.list(includeDeleted: true).credentials.map(\.id) == [b])
        #expect(try reopened.credential(b).password == "pb2")
        #expect(try reopened.history(b).map(\.password) == ["pb"])
    }
}
