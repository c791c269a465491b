import Foundation
import GRDB
import KeyhavenTesting
import Passkeys
import Testing
import _KeyhavenSupport

@testable import Vault

/// Passkeys in the vault (issue 16): sealed (no site, handle or key in the clear), found by relying
/// party, replaced by credential id, covered by the integrity check, re-keyed by `passwd`.
@Suite(.offCooperativePool)
struct PasskeyStorageTests {
    static func passkey(_ rpID: String, user: String, id: [UInt8]) throws -> PasskeyCredential {
        let (credential, _) = try Authenticator().register(
            CreationRequest(
                rpID: rpID,
                rpName: rpID,
                userID: Array(user.utf8),
                userName: user,
                userDisplayName: user.capitalized,
                challenge: [1]
            ),
            origin: "https://\(rpID)",
            existing: [],
            userVerified: true
        )
        var stored = credential
        stored.credentialID = id
        return stored
    }

    @Test func passkeysAreSealedFoundByRelyingPartyAndReplacedByCredentialID() throws {
        let test = try TestVault()
        let ada = try Self.passkey("shiny.example", user: "ada-handle", id: [1, 1, 1])
        let bob = try Self.passkey("shiny.example", user: "bob-handle", id: [2, 2, 2])
        let other = try Self.passkey("other.example", user: "ada-handle", id: [3, 3, 3])
        for passkey in [ada, bob, other] { try test.vault.savePasskey(passkey) }
        #expect(try test.vault.passkeys(rpID: "shiny.example").map(\.userName) == ["ada-handle", "bob-handle"])
        #expect(try test.vault.passkeys().count == 3)
        var used = ada
        used.signCount = 7
        try test.vault.savePasskey(used)
        #expect(try test.vault.passkeys(rpID: "shiny.example").first { $0.credentialID == [1, 1, 1] }?.signCount == 7)
        #expect(try test.vault.passkeys().count == 3)
        try test.vault.close()
        for secret in ["shiny.example", "ada-handle", "other.example"] {
            #expect(!VaultFileEdits.contents(test.url).contains { $0.range(of: Data(secret.utf8)) != nil }, "\(secret)")
        }
        let reopened = try test.reopen()
        #expect(try reopened.removePasskey(id: reopened.passkeyID(bob)))
        #expect(try !reopened.removePasskey(id: reopened.passkeyID(bob)))
        #expect(try reopened.passkeys(rpID: "shiny.example").map(\.credentialID) == [[1, 1, 1]])
    }

    @Test func aRemovedOrRolledBackPasskeyIsTampering() throws {
        let removed = try TestVault()
        try removed.vault.savePasskey(try Self.passkey("shiny.example", user: "ada", id: [1]))
        try removed.vault.close()
        try VaultFileEdits.edit(removed.url) { db in try db.execute(sql: "DELETE FROM passkey") }
        VaultIntegrityTests.expectTampered(removed.url)

        let rolledBack = try TestVault()
        var passkey = try Self.passkey("shiny.example", user: "ada", id: [1])
        try rolledBack.vault.savePasskey(passkey)
        let old = try VaultFileEdits.read(rolledBack.url) { db in
            try Data.fetchOne(db, sql: "SELECT sealed FROM passkey")
        }
        passkey.signCount = 9
        try rolledBack.vault.savePasskey(passkey)
        try rolledBack.vault.close()
        try VaultFileEdits.edit(rolledBack.url) { db in
            try db.execute(sql: "UPDATE passkey SET sealed = ?", arguments: [old])
        }
        VaultIntegrityTests.expectTampered(rolledBack.url)
    }

    @Test func changingTheMasterPasswordReSealsThem() throws {
        let test = try TestVault()
        let passkey = try Self.passkey("shiny.example", user: "ada", id: [4, 2])
        try test.vault.savePasskey(passkey)
        try test.vault.changeMasterPassword(
            to: "another master password",
            kdf: .random(logN: 10),
            allowInsecureKDF: true
        )
        try test.vault.close()
        let reopened = try Vault.open(at: test.url, masterPassword: "another master password", allowInsecureKDF: true)
        #expect(try reopened.passkeys(rpID: "shiny.example") == [passkey])
        // Still found and replaced under the new keys.
        var used = passkey
        used.signCount = 1
        try reopened.savePasskey(used)
        #expect(try reopened.passkeys() == [used])
    }
}

/// Passkeys through FIDO CXF: exported with their keys as PKCS#8, imported back to the same keys,
/// once (an import again adds nothing), and a passkey-only item is no longer skipped.
@Suite(.offCooperativePool)
struct PasskeyTransferTests {
    static func passkeys() throws -> [PasskeyCredential] {
        try [(-7, "shiny.example", "ada"), (-8, "github.com", "bob")].map { algorithm, site, user in
            try Authenticator().register(
                CreationRequest(
                    rpID: site,
                    rpName: site,
                    userID: Array("\(user)-handle".utf8),
                    userName: user,
                    userDisplayName: user.capitalized,
                    challenge: [1],
                    algorithms: [algorithm]
                ),
                origin: "https://\(site)",
                existing: [],
                userVerified: true
            ).credential
        }
    }

    @Test func cxfCarriesPasskeysAndTheyImportOnce() throws {
        let made = try Self.passkeys()
        let data = try Exporter.export([], passkeys: made, format: .cxf)
        let parsed = try ImportParser.parse(Array(data))
        #expect(parsed.format == .cxf && parsed.skipped.isEmpty && parsed.items.isEmpty)
        #expect(parsed.passkeys.count == 2)
        for (original, read) in zip(made, parsed.passkeys) {
            #expect(read.rpID == original.rpID && read.credentialID == original.credentialID)
            #expect(read.userHandle == original.userHandle && read.userName == original.userName)
            #expect(read.userDisplayName == original.userDisplayName && read.algorithm == original.algorithm)
            #expect(read.privateKey == original.privateKey)
            #expect(try read.publicKey() == original.publicKey())
        }
        #expect(!Exporter.carriesPasskeys(.csv) && Exporter.carriesPasskeys(.cxf))

        let test = try TestVault()
        #expect(try test.vault.previewImport(parsed).passkeys == 2)
        #expect(try test.vault.passkeys().isEmpty)
        #expect(try test.vault.importItems(parsed).passkeys == 2)
        #expect(try test.vault.importItems(parsed).passkeys == 0)
        #expect(try Set(test.vault.passkeys().map(\.credentialID)) == Set(made.map(\.credentialID)))
    }

    @Test func anUnreadablePasskeyIsReportedNotImported() throws {
        let document = """
            {"version": {"major": 1, "minor": 0}, "exporterRpId": "x", "exporterDisplayName": "x", "timestamp": 0,
             "accounts": [{"id": "YQ", "username": "", "email": "", "items": [
               {"id": "aXRlbQ", "title": "rsa", "credentials": [
                 {"type": "passkey", "credentialId": "AQID", "rpId": "rsa.example", "username": "u", "userDisplayName": "U",
                  "userHandle": "AQ", "key": "MIIBVQIBADANBgkqhkiG9w0BAQEFAASCAT8wggE7AgEAAkEA"}]}]}]}
            """
        let parsed = try ImportParser.parse(Array(document.utf8))
        #expect(parsed.passkeys.isEmpty)
        #expect(parsed.warnings.map(\.reason) == ["credential-not-imported"])
        #expect(parsed.skipped.map(\.reason) == ["passkey-only"])
    }

    @Test func bitwardenJSONCarriesPasskeysWithTheirAccountsAndReimportsThem() throws {
        let made = try Self.passkeys()
        let test = try TestVault()
        // ada's login for www.shiny.example takes her passkey (its RP ID is the parent); bob has none.
        let ada = try test.vault.add(
            CredentialContent(services: [.init("https://www.shiny.example")], user: "ada", password: "Ada-Password-1")
        )
        let credentials = try test.vault.list().credentials
        let data = try Exporter.export(credentials, passkeys: made, format: .bitwardenJSON)
        let document = try JSONValue.parse(data)
        let items = try #require(document["items"]?.array)
        #expect(items.count == 2)
        let adaItem = try #require(items.first { $0["id"]?.string == ada.rawValue })
        let adaPasskeys = try #require(adaItem["login"]?["fido2Credentials"]?.array)
        #expect(adaPasskeys.map { $0["rpId"]?.string } == ["shiny.example"])
        // Bitwarden's shapes: a 16-byte id as a UUID, ECDSA P-256, numbers as strings.
        #expect(adaPasskeys[0]["credentialId"]?.string.flatMap(UUID.init(uuidString:)) != nil)
        #expect(adaPasskeys[0]["keyAlgorithm"]?.string == "ECDSA" && adaPasskeys[0]["keyCurve"]?.string == "P-256")
        #expect(adaPasskeys[0]["counter"]?.string == "0")
        let bobItem = try #require(items.first { $0["id"]?.string != ada.rawValue })
        #expect(bobItem["name"]?.string == "github.com" && bobItem["login"]?["password"] == .null)
        #expect(bobItem["login"]?["fido2Credentials"]?.array?.first?["keyAlgorithm"]?.string == "EdDSA")

        let parsed = try ImportParser.parse(Array(data))
        #expect(parsed.format == .bitwardenJSON && parsed.warnings.isEmpty)
        #expect(parsed.passkeys.count == 2)
        for original in made {
            let read = try #require(parsed.passkeys.first { $0.credentialID == original.credentialID })
            #expect(read.rpID == original.rpID && read.userHandle == original.userHandle)
            #expect(read.userName == original.userName && read.userDisplayName == original.userDisplayName)
            #expect(read.privateKey == original.privateKey && read.algorithm == original.algorithm)
        }
        let other = try TestVault()
        #expect(try other.vault.importItems(parsed).passkeys == 2)
        #expect(try Set(other.vault.passkeys().map(\.credentialID)) == Set(made.map(\.credentialID)))
        #expect(Exporter.carriesPasskeys(.bitwardenJSON))
    }

    @Test func bitwardenCredentialIDsOfOtherLengthsUseTheB64Prefix() throws {
        let long = Array(repeating: UInt8(7), count: 32)
        #expect(Exporter.bitwardenCredentialID(long) == "b64." + Base64URL.encode(long))
        #expect(ImportParser.bitwardenCredentialID("b64." + Base64URL.encode(long)) == long)
        let uuid = "3f2c8a1e-7b4d-4e2a-9c1f-5d6e7f8a9b0c"
        #expect(ImportParser.bitwardenCredentialID(uuid).map(Exporter.bitwardenCredentialID) == uuid)
    }
}

/// KeePass 2 XML (`keepassxc-cli export --format xml`) with KeePassXC's passkey entries (issue 16).
struct KeePassXMLTests {
    /// A document in KeePassXC's shape: nested groups, a Recycle Bin, an entry's History, a TOTP, and
    /// a passkey entry (`KPEX_PASSKEY_*`, the key as a PKCS#8 PEM).
    static func document(passkey: PasskeyCredential) throws -> String {
        let pem = PEMText.encode(try passkey.pkcs8(), label: "PRIVATE KEY")
        return """
            <?xml version="1.0" encoding="utf-8" standalone="yes"?>
            <KeePassFile><Meta><Generator>KeePassXC</Generator></Meta><Root>
            <Group><UUID>AAAAAAAAAAAAAAAAAAAAAA==</UUID><Name>Passwords</Name>
              <Entry><UUID>AQ==</UUID><Times><CreationTime>2024-05-01T10:00:00Z</CreationTime></Times>
                <String><Key>Title</Key><Value>Mail &amp; more</Value></String>
                <String><Key>UserName</Key><Value>ada</Value></String>
                <String><Key>Password</Key><Value ProtectInMemory="True">p&lt;ss</Value></String>
                <String><Key>URL</Key><Value>https://mail.example</Value></String>
                <String><Key>Notes</Key><Value>line 1
            line 2</Value></String>
                <String><Key>otp</Key><Value ProtectInMemory="True">otpauth://totp/x?secret=JBSWY3DPEHPK3PXP</Value></String>
                <History><Entry><UUID>AQ==</UUID><String><Key>Title</Key><Value>old</Value></String>
                  <String><Key>Password</Key><Value>old-password</Value></String></Entry></History>
              </Entry>
              <Group><UUID>Ag==</UUID><Name>Work</Name>
                <Group><UUID>Aw==</UUID><Name>Shop</Name>
                  <Entry><UUID>Ag==</UUID>
                    <String><Key>Title</Key><Value>Shop</Value></String>
                    <String><Key>UserName</Key><Value>bob</Value></String>
                    <String><Key>Password</Key><Value>bob-pw</Value></String>
                    <String><Key>URL</Key><Value>https://shop.example</Value></String>
                  </Entry>
                  <Entry><UUID>Aw==</UUID>
                    <String><Key>Title</Key><Value>\(passkey.rpID)</Value></String>
                    <String><Key>UserName</Key><Value>\(passkey.userName)</Value></String>
                    <String><Key>Password</Key><Value></Value></String>
                    <String><Key>URL</Key><Value>https://\(passkey.rpID)</Value></String>
                    <String><Key>KPEX_PASSKEY_CREDENTIAL_ID</Key><Value>\(Base64URL.encode(passkey.credentialID))</Value></String>
                    <String><Key>KPEX_PASSKEY_PRIVATE_KEY_PEM</Key><Value ProtectInMemory="True">\(pem)</Value></String>
                    <String><Key>KPEX_PASSKEY_RELYING_PARTY</Key><Value>\(passkey.rpID)</Value></String>
                    <String><Key>KPEX_PASSKEY_USERNAME</Key><Value>\(passkey.userName)</Value></String>
                    <String><Key>KPEX_PASSKEY_USER_HANDLE</Key><Value>\(Base64URL.encode(passkey.userHandle))</Value></String>
                  </Entry>
                </Group>
              </Group>
              <Group><UUID>BA==</UUID><Name>Recycle Bin</Name>
                <Entry><UUID>BA==</UUID><String><Key>Title</Key><Value>gone</Value></String>
                  <String><Key>Password</Key><Value>x</Value></String></Entry>
              </Group>
            </Group></Root></KeePassFile>
            """
    }

    @Test func keepassXCExportsImportWithFoldersTOTPAndPasskeys() throws {
        let passkey = try PasskeyTransferTests.passkeys()[0]
        let parsed = try ImportParser.parse(Array(try Self.document(passkey: passkey).utf8))
        #expect(parsed.format == .keepassXML)
        #expect(parsed.items.map(\.content.title) == ["Mail & more", "Shop"])
        let mail = parsed.items[0].content
        #expect(mail.user == "ada" && mail.password == "p<ss" && mail.notes == "line 1\nline 2")
        #expect(mail.totp == "otpauth://totp/x?secret=JBSWY3DPEHPK3PXP" && mail.folder == nil)
        #expect(parsed.items[1].content.folder == "Work/Shop")
        #expect(parsed.skipped.map(\.reason) == ["recycle-bin"])
        let read = try #require(parsed.passkeys.first)
        #expect(parsed.passkeys.count == 1)
        #expect(read.rpID == passkey.rpID && read.credentialID == passkey.credentialID)
        #expect(read.userHandle == passkey.userHandle && read.privateKey == passkey.privateKey)
    }

    @Test func anExportReimportsToTheSameContentAndKeys() throws {
        let test = try TestVault()
        _ = try test.vault.add(
            CredentialContent(
                title: "A <b>",
                services: [.init("https://a.example"), .init("https://login.a.example")],
                user: "ada",
                password: "pw&\"'",
                notes: "n",
                totp: "JBSWY3DPEHPK3PXP",
                folder: "x/y"
            )
        )
        let made = try PasskeyTransferTests.passkeys()
        let data = try Exporter.export(try test.vault.list().credentials, passkeys: made, format: .keepassXML)
        let parsed = try ImportParser.parse(Array(data))
        #expect(parsed.format == .keepassXML && parsed.skipped.isEmpty && parsed.warnings.isEmpty)
        let item = try #require(parsed.items.first)
        #expect(parsed.items.count == 1)
        #expect(item.content.title == "A <b>" && item.content.password == "pw&\"'" && item.content.folder == "x/y")
        #expect(item.content.services.map(\.identifier) == ["https://a.example", "https://login.a.example"])
        #expect(item.content.totp == "JBSWY3DPEHPK3PXP")
        #expect(Set(parsed.passkeys.map(\.credentialID)) == Set(made.map(\.credentialID)))
        for original in made {
            let read = try #require(parsed.passkeys.first { $0.credentialID == original.credentialID })
            #expect(read.privateKey == original.privateKey && read.algorithm == original.algorithm)
        }
        #expect(Exporter.carriesPasskeys(.keepassXML))
    }

    @Test func notKeePassXMLIsRefused() {
        #expect(throws: VaultError.self) {
            try ImportParser.parse(Array("<html><body/></html>".utf8), format: .keepassXML)
        }
        #expect(throws: VaultError.self) {
            try ImportParser.parse(Array("<KeePassFile><Root>".utf8), format: .keepassXML)
        }
        // Mismatched tags: refused even where the parser recovers and goes on.
        #expect(throws: VaultError.self) {
            try ImportParser.parse(
                Array("<KeePassFile><Root><Group><Name>a</Nme></Group></Root></KeePassFile>".utf8),
                format: .keepassXML
            )
        }
        // Found by FuzzImport: invalid UTF-8 in a comment trapped inside Foundation's XMLParser.
        #expect(throws: VaultError.self) {
            try ImportParser.parse(
                Array("<KeePassFile><!-- a".utf8) + [0xE3, 0x20] + Array(" --><Root/></KeePassFile>".utf8),
                format: .keepassXML
            )
        }
    }

    /// Through KeePassXC itself: `keepassxc-cli import` reads Keyhaven's export into a KDBX database,
    /// `keepassxc-cli export --format xml` writes it back, and Keyhaven reads the same credentials
    /// and passkeys (their attributes travel through KeePassXC untouched).
    @Test(.enabled(if: ExternalTools.keepassxc, ExternalTools.keepassxcReason))
    func keepassXCReadsTheExportAndItsOwnExportReimports() async throws {
        let test = try TestVault()
        _ = try test.vault.add(
            CredentialContent(
                title: "Mail",
                services: [.init("https://mail.example")],
                user: "ada",
                password: "p<w&\"d",
                notes: "two\nlines",
                totp: "otpauth://totp/Mail:ada?secret=JBSWY3DPEHPK3PXP",
                folder: "Work/Mail"
            )
        )
        let made = try PasskeyTransferTests.passkeys()
        let directory = try TemporaryDirectory.make()
        let xml = directory.appendingPathComponent("keyhaven.xml")
        let database = directory.appendingPathComponent("keepassxc.kdbx")
        try Exporter.export(try test.vault.list().credentials, passkeys: made, format: .keepassXML).write(to: xml)
        let cli = CommandRunner(executable: URL(fileURLWithPath: "/usr/bin/env"))
        let imported = try await cli.runDetached(
            ["keepassxc-cli", "import", "-q", "-p", "-t", "100", xml.path, database.path],
            stdin: "kdbx secret\nkdbx secret\n"
        )
        #expect(imported.status == 0, "\(imported.stderr)")
        let exported = try await cli.runDetached(
            ["keepassxc-cli", "export", "-q", "-f", "xml", database.path],
            stdin: "kdbx secret\n"
        )
        #expect(exported.status == 0, "\(exported.stderr)")
        #expect(exported.stdout.contains("<Generator>KeePassXC</Generator>") || exported.stdout.contains("KeePassFile"))

        let parsed = try ImportParser.parse(Array(exported.stdout.utf8))
        #expect(parsed.format == .keepassXML && parsed.warnings.isEmpty, "\(parsed.warnings)")
        let item = try #require(parsed.items.first)
        #expect(parsed.items.count == 1)
        #expect(item.content.title == "Mail" && item.content.user == "ada" && item.content.password == "p<w&\"d")
        #expect(item.content.notes == "two\nlines" && item.content.folder == "Work/Mail")
        #expect(item.content.totp == "otpauth://totp/Mail:ada?secret=JBSWY3DPEHPK3PXP")
        #expect(Set(parsed.passkeys.map(\.credentialID)) == Set(made.map(\.credentialID)))
        for original in made {
            let read = try #require(parsed.passkeys.first { $0.credentialID == original.credentialID })
            #expect(read.privateKey == original.privateKey && read.userHandle == original.userHandle)
            #expect(read.rpID == original.rpID && read.userName == original.userName)
        }
    }
}
