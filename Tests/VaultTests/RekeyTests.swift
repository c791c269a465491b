import Foundation
import GRDB
import KeyhavenTesting
import Testing

@testable import Vault

/// `passwd` re-keys the vault (security review M7, issue 13 item 5): someone who learned the old
/// master password and kept a copy of the file reads nothing written afterwards.
@Suite(.offCooperativePool)
struct RekeyTests {
    static let newPassword = "a new master password after the leak"

    /// A vault with a credential, its history, a pending upgrade and a provider session.
    static func populated() throws -> (TestVault, CredentialID) {
        let test = try TestVault()
        let id = try test.vault.add(
            CredentialContent(services: [.init("example.com")], user: "alice", password: "before-passwd-1")
        )
        try test.vault.update(id) { $0.password = "before-passwd-2" }
        try test.vault.beginUpgrade(
            UpgradeJournalEntry(
                credentialID: id,
                kind: .strongPassword,
                service: "example.com",
                endpoint: "https://example.com/.well-known/account-modification",
                requestId: "r1",
                oldPassword: "before-passwd-2",
                newPassword: "journal-new-password",
                started: Date()
            )
        )
        try test.vault.saveProviderSession(
            ProviderSession(
                issuer: "https://idp.example",
                baseURL: "https://idp.example",
                email: "alice@example.com",
                deviceToken: "device-token-1",
                created: Date()
            )
        )
        return (test, id)
    }

    @Test func anOldCopyAndTheOldPasswordOpenNothingWrittenAfterPasswd() throws {
        let (test, id) = try Self.populated()
        try test.vault.close()
        let backup = test.directory.appendingPathComponent("backup.sqlite")
        try VaultFileEdits.copy(test.url, to: backup)
        let before = try VaultFileEdits.keyedBytes(test.url)

        let vault = try test.reopen()
        try vault.changeMasterPassword(to: Self.newPassword, kdf: .random(logN: 10), allowInsecureKDF: true)
        let later = try vault.add(
            CredentialContent(services: [.init("later.example")], user: "bob", password: "written-after-passwd")
        )
        try vault.update(id) { $0.password = "changed-after-passwd" }
        try vault.close()

        // Every sealed row and keyed tag was re-made under the new key.
        let after = try VaultFileEdits.keyedBytes(test.url)
        #expect(after.count > before.count)
        #expect(Set(before).isDisjoint(with: after))

        // The attacker unwraps the old vault key from the old copy with the old password…
        let (oldKDF, oldWrapped) = try VaultFileEdits.read(backup) { db in
            let row = try Row.fetchOne(db, sql: "SELECT kdf, wrappedKey FROM vault")!
            return (
                try JSONDecoder().decode(KDFParameters.self, from: Data((row["kdf"] as String).utf8)),
                row["wrappedKey"] as Data
            )
        }
        let oldKeys = try VaultKeys.unwrap(oldWrapped, password: test.masterPassword, kdf: oldKDF)
        // …and it opens no row of the current file, whatever associated data is tried.
        let rows = try VaultFileEdits.read(test.url) { db in
            try Row.fetchAll(db, sql: "SELECT id, version, sealed FROM credential")
        }
        #expect(rows.count == 2)
        for row in rows {
            let credential = CredentialID(rawValue: row["id"])!
            for version in Int64(1)...5 {
                #expect(
                    (try? oldKeys.open(row["sealed"], associatedData: Vault.recordAD(credential, version: version)))
                        == nil
                )
            }
        }
        let others = try VaultFileEdits.read(test.url) { db in
            try Row.fetchAll(db, sql: "SELECT credentialID AS owner, id, sealed FROM passwordHistory")
        }
        #expect(others.count == 2)
        for row in others {
            let owner = CredentialID(rawValue: row["owner"])!
            #expect((try? oldKeys.open(row["sealed"], associatedData: Vault.historyAD(owner, row["id"]))) == nil)
        }
        let journal = try VaultFileEdits.read(test.url) { db in
            try Row.fetchAll(db, sql: "SELECT id, sealed FROM upgradeJournal")
        }
        #expect(journal.count == 1)
        for version in Int64(1)...3 {
            #expect(
                (try? oldKeys.open(
                    journal[0]["sealed"],
                    associatedData: Vault.journalAD(journal[0]["id"], version: version)
                )) == nil
            )
        }
        #expect(
            try VaultFileEdits.read(test.url) { db in
                try Data.fetchOne(db, sql: "SELECT tag FROM providerSession")
            } != oldKeys.tag("provider-session", "https://idp.example")
        )

        // Through Keyhaven: the old header spliced into the current file is refused, not opened.
        for (columns, expected) in [
            (["kdf", "wrappedKey"], VaultError.Code.keyChanged),
            (["kdf", "wrappedKey", "keyCheck"], .tampered),
            (["kdf", "wrappedKey", "keyCheck", "integrity"], .tampered),
        ] {
            let spliced = test.directory.appendingPathComponent("spliced-\(columns.count).sqlite")
            try VaultFileEdits.copy(test.url, to: spliced)
            let header = try VaultFileEdits.read(backup) { db in
                try Row.fetchOne(db, sql: "SELECT \(columns.joined(separator: ", ")) FROM vault")!
            }
            try VaultFileEdits.edit(spliced) { db in
                for column in columns {
                    try db.execute(
                        sql: "UPDATE vault SET \(column) = ?",
                        arguments: [header[column] as DatabaseValue]
                    )
                }
            }
            #expect {
                try Vault.open(at: spliced, masterPassword: test.masterPassword, allowInsecureKDF: true)
            } throws: { error in
                (error as? VaultError)?.code == expected
            }
        }

        // The old copy is the old vault: nothing written after passwd is in it.
        let old = try Vault.open(at: backup, masterPassword: test.masterPassword, allowInsecureKDF: true)
        #expect(try old.list().credentials.map(\.password) == ["before-passwd-2"])
        try old.close()
        // The old password no longer opens the current file; the new one opens everything.
        #expect(throws: VaultError(.wrongPassword, "")) {
            try Vault.open(at: test.url, masterPassword: test.masterPassword, allowInsecureKDF: true)
        }
        let current = try Vault.open(at: test.url, masterPassword: Self.newPassword, allowInsecureKDF: true)
        #expect(try current.credential(later).password == "written-after-passwd")
        #expect(try current.credential(id).password == "changed-after-passwd")
        #expect(try current.history(id).map(\.password) == ["before-passwd-1", "before-passwd-2"])
        #expect(try current.pendingUpgrades().map(\.newPassword) == ["journal-new-password"])
        #expect(try current.providerSession(issuer: "https://idp.example")?.deviceToken == "device-token-1")
        #expect(try current.credentials(forService: "example.com").credentials.map(\.id) == [id])
        #expect(try current.credentials(forService: "later.example").credentials.map(\.id) == [later])
    }

    /// A failure part-way through (here an injected SQLite error on the last table re-sealed)
    /// leaves the vault exactly as it was: one transaction.
    @Test func aFailureMidWayLeavesTheOldVaultIntact() throws {
        let (test, id) = try Self.populated()
        try test.vault.close()
        try VaultFileEdits.edit(test.url) { db in
            try db.execute(
                sql: """
                    CREATE TRIGGER crash AFTER UPDATE OF sealed ON upgradeJournal
                    BEGIN SELECT RAISE(ABORT, 'injected crash'); END
                    """
            )
        }
        let before = try VaultFileEdits.keyedBytes(test.url)
        let vault = try test.reopen()
        #expect(throws: VaultError.self) {
            try vault.changeMasterPassword(to: Self.newPassword, kdf: .random(logN: 10), allowInsecureKDF: true)
        }
        #expect(try VaultFileEdits.keyedBytes(test.url) == before)
        // The open vault still works with its old key, and writes stay consistent.
        try vault.update(id) { $0.notes = "after the failed passwd" }
        try vault.close()
        #expect(throws: VaultError(.wrongPassword, "")) {
            try Vault.open(at: test.url, masterPassword: Self.newPassword, allowInsecureKDF: true)
        }
        let reopened = try test.reopen()
        #expect(try reopened.credential(id).notes == "after the failed passwd")
        #expect(try reopened.history(id).map(\.password) == ["before-passwd-1"])
        #expect(try reopened.pendingUpgrades().count == 1)
    }

    /// Another process holding the vault open when it was re-keyed writes nothing with the old key.
    @Test func aProcessHoldingTheOldKeyCannotWriteAfterAReKey() throws {
        let (test, id) = try Self.populated()
        let other = try test.reopen()
        try test.vault.changeMasterPassword(to: Self.newPassword, kdf: .random(logN: 10), allowInsecureKDF: true)
        #expect {
            try other.add(CredentialContent(services: [.init("stale.example")], user: "x", password: "stale"))
        } throws: { error in
            (error as? VaultError)?.code == .keyChanged
        }
        #expect(try test.vault.credential(id).password == "before-passwd-2")
        #expect(try test.vault.count() == 1)
    }
}
