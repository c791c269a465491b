import Crypto
import Foundation
import GRDB
import KeyhavenTesting
import Testing
import Vault

/// What is on disk: no secret in plaintext anywhere, and damage that stays contained.
@Suite(.offCooperativePool)
struct StorageSecurityTests {
    static func fileBytes(_ url: URL) -> [Data] {
        ["", "-wal", "-shm", "-journal"].compactMap { FileManager.default.contents(atPath: url.path + $0) }
    }

    @Test func noSecretAppearsInTheDatabaseWALOrSHM() throws {
        let test = try TestVault()
        var secrets = Set<String>()
        for sample in [
            "chrome.csv", "firefox.csv", "safari.csv", "bitwarden.csv", "bitwarden.json", "1password.csv",
            "keepassxc.csv", "lastpass.csv", "cxf.json", "broken-1000.csv",
        ] {
            let report = try test.vault.importFile(Fixtures.url("imports/\(sample)"))
            #expect(report.imported > 0 || report.duplicatesMerged > 0)
        }
        let credentials = try test.vault.list().credentials
        #expect(credentials.count > 1000)
        try test.vault.update(credentials[0].id) { $0.password = "a-replaced-password-9157" }
        secrets.insert("a-replaced-password-9157")
        for credential in credentials {
            let fields =
                [
                    credential.title, credential.user, credential.password ?? "", credential.notes,
                    credential.totp ?? "", credential.folder ?? "",
                ] + credential.services.map(\.identifier)
                + credential.services.compactMap(\.host)
            for field in fields where field.utf8.count >= 5 {
                secrets.insert(field)
            }
        }
        // While the vault is open the WAL holds the latest writes.
        let files = Self.fileBytes(test.url)
        #expect(files.count >= 2, "expected the database and its WAL")
        #expect(files.reduce(0) { $0 + $1.count } > 100_000)
        var found: [String] = []
        for secret in secrets {
            let needle = Data(secret.utf8)
            if files.contains(where: { $0.range(of: needle) != nil }) {
                found.append(secret)
            }
        }
        #expect(found.isEmpty, "plaintext found on disk: \(found.count) values")
        #expect(secrets.count > 3000)
    }

    @Test func wrongPasswordIsRefusedAndTheFileUntouched() throws {
        let test = try TestVault()
        try test.vault.add(CredentialContent(services: [.init("example.com")], user: "alice", password: "pw1"))
        try test.vault.close()
        func digest(_ suffix: String) -> Data? {
            FileManager.default.contents(atPath: test.url.path + suffix).map { Data(SHA256.hash(data: $0)) }
        }
        let before = ["", "-wal"].map(digest)
        #expect(throws: VaultError(.wrongPassword, "")) {
            try Vault.open(at: test.url, masterPassword: "not the password", allowInsecureKDF: true)
        }
        // The database and its write-ahead log are byte for byte the same.
        #expect(["", "-wal"].map(digest) == before)
        #expect(try test.reopen().count() == 1)
    }

    @Test func aFlippedByteNamesTheRecordAndSparesTheOthers() throws {
        let test = try TestVault()
        let good = try test.vault.add(CredentialContent(services: [.init("good.example")], user: "a", password: "p1"))
        let bad = try test.vault.add(CredentialContent(services: [.init("bad.example")], user: "b", password: "p2"))
        try test.vault.close()
        // Flip one byte of the sealed field, as disk corruption or tampering would.
        let database = try DatabaseQueue(path: test.url.path)
        try database.write { db in
            var sealed = try Data.fetchOne(
                db,
                sql: "SELECT sealed FROM credential WHERE id = ?",
                arguments: [bad.rawValue]
            )!
            sealed[sealed.count / 2] ^= 0x01
            try db.execute(sql: "UPDATE credential SET sealed = ? WHERE id = ?", arguments: [sealed, bad.rawValue])
        }
        try database.close()

        let vault = try test.reopen()
        #expect {
            try vault.credential(bad)
        } throws: { error in
            let error = error as! VaultError
            return error.code == .corruptRecord && error.record == bad && error.message.contains(bad.rawValue)
        }
        #expect(try vault.credential(good).password == "p1")
        let listing = try vault.list()
        #expect(listing.credentials.map(\.id) == [good])
        #expect(listing.failures.map(\.record) == [bad])
    }

    @Test func sealedFieldsCannotBeMovedBetweenRecords() throws {
        let test = try TestVault()
        let a = try test.vault.add(CredentialContent(services: [.init("a.example")], user: "a", password: "pa"))
        let b = try test.vault.add(CredentialContent(services: [.init("b.example")], user: "b", password: "pb"))
        try test.vault.close()
        let database = try DatabaseQueue(path: test.url.path)
        try database.write { db in
            let sealed = try Data.fetchOne(
                db,
                sql: "SELECT sealed FROM credential WHERE id = ?",
                arguments: [a.rawValue]
            )!
            try db.execute(sql: "UPDATE credential SET sealed = ? WHERE id = ?", arguments: [sealed, b.rawValue])
        }
        try database.close()
        // Errors compare by code: the record is checked on its own.
        #expect {
            try test.reopen().credential(b)
        } throws: { error in
            (error as? VaultError)?.code == .corruptRecord && (error as? VaultError)?.record == b
        }
    }

    @Test(arguments: ["truncated", "text", "foreign-sqlite", "empty", "directory"])
    func badFilesAreRefusedWithoutBeingWritten(_ kind: String) throws {
        let directory = try TemporaryDirectory.make()
        let url = directory.appendingPathComponent("vault.sqlite")
        let expected: VaultError.Code
        switch kind {
        case "truncated":
            let test = try TestVault()
            for index in 0..<200 {
                try test.vault.add(
                    CredentialContent(services: [.init("s\(index).example")], user: "u", password: "p\(index)")
                )
            }
            try test.vault.close()
            let data = try Data(contentsOf: test.url)
            try data.prefix(data.count / 2).write(to: url)
            expected = .damaged
        case "text":
            try Data("name,url,username,password\n".utf8).write(to: url)
            expected = .notAVault
        case "foreign-sqlite":
            let other = try DatabaseQueue(path: url.path)
            try other.write { db in try db.execute(sql: "CREATE TABLE notes (body TEXT)") }
            try other.close()
            expected = .notAVault
        case "empty":
            #expect(FileManager.default.createFile(atPath: url.path, contents: Data()))
            expected = .notAVault
        default:
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            expected = .notAVault
        }
        let before = Self.fileBytes(url)
        #expect {
            try Vault.open(at: url, masterPassword: "whatever")
        } throws: { error in
            let error = error as! VaultError
            return error.code == expected && error.message.contains(url.path)
        }
        #expect(Self.fileBytes(url) == before)
        // And init refuses to overwrite it.
        #expect(throws: VaultError(.alreadyExists, "")) {
            try Vault.create(at: url, masterPassword: "pw", kdf: .random(logN: 10), allowInsecureKDF: true)
        }
        #expect(Self.fileBytes(url) == before)
    }

    @Test func defaultKeyDerivationMeetsTheFloor() throws {
        let kdf = KDFParameters.calibrated()
        #expect(kdf.logN >= 17 && kdf.r == 8 && kdf.p == 1 && kdf.salt.count == 32)
        #expect(kdf.meetsFloor)
    }
}
