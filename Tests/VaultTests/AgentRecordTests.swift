import Foundation
import GRDB
import KeyhavenTesting
import Testing
import Vault

/// What the agent keeps in the vault (browser pairings): sealed, covered by the integrity check,
/// re-keyed by `passwd`, and a vault sealed before the table existed still opens.
@Suite(.offCooperativePool)
struct AgentRecordTests {
    static let pairing = Data(#"{"id":"p-1","key":"c2VjcmV0LXBhaXJpbmcta2V5"}"#.utf8)

    @Test func recordsAreSealedAndReadBack() throws {
        let test = try TestVault()
        try test.vault.saveAgentRecord(
            AgentRecord(id: "p-1", kind: "browser-pairing", content: Self.pairing, created: Date())
        )
        try test.vault.saveAgentRecord(AgentRecord(id: "x-1", kind: "other", content: Data("x".utf8), created: Date()))
        #expect(try test.vault.agentRecords(kind: "browser-pairing").map(\.content) == [Self.pairing])
        try test.vault.close()
        #expect(
            !VaultFileEdits.contents(test.url).contains { $0.range(of: Data("c2VjcmV0LXBhaXJpbmcta2V5".utf8)) != nil }
        )
        let reopened = try test.reopen()
        #expect(try reopened.agentRecords(kind: "browser-pairing").map(\.id) == ["p-1"])
        #expect(try reopened.removeAgentRecord(id: "p-1"))
        #expect(try !reopened.removeAgentRecord(id: "p-1"))
        #expect(try reopened.agentRecords(kind: "browser-pairing").isEmpty)
    }

    @Test func aRemovedOrRolledBackRecordIsTampering() throws {
        let removed = try TestVault()
        try removed.vault.saveAgentRecord(
            AgentRecord(id: "p-1", kind: "browser-pairing", content: Self.pairing, created: Date())
        )
        try removed.vault.close()
        try VaultFileEdits.edit(removed.url) { db in try db.execute(sql: "DELETE FROM agentRecord") }
        VaultIntegrityTests.expectTampered(removed.url)

        let rolledBack = try TestVault()
        try rolledBack.vault.saveAgentRecord(
            AgentRecord(id: "p-1", kind: "browser-pairing", content: Self.pairing, created: Date())
        )
        let old = try VaultFileEdits.read(rolledBack.url) { db in
            try Data.fetchOne(db, sql: "SELECT sealed FROM agentRecord")
        }
        try rolledBack.vault.saveAgentRecord(
            AgentRecord(id: "p-1", kind: "browser-pairing", content: Data("{}".utf8), created: Date())
        )
        try rolledBack.vault.close()
        try VaultFileEdits.edit(rolledBack.url) { db in
            try db.execute(sql: "UPDATE agentRecord SET sealed = ?", arguments: [old])
        }
        VaultIntegrityTests.expectTampered(rolledBack.url)
    }

    @Test func changingTheMasterPasswordReSealsThem() throws {
        let test = try TestVault()
        try test.vault.saveAgentRecord(
            AgentRecord(id: "p-1", kind: "browser-pairing", content: Self.pairing, created: Date())
        )
        try test.vault.changeMasterPassword(
            to: "another master password",
            kdf: .random(logN: 10),
            allowInsecureKDF: true
        )
        try test.vault.close()
        let reopened = try Vault.open(at: test.url, masterPassword: "another master password", allowInsecureKDF: true)
        #expect(try reopened.agentRecords(kind: "browser-pairing").map(\.content) == [Self.pairing])
    }
}
