import Foundation
import KeyhavenTesting
import Testing

@testable import Vault

/// Every supported export format, read from real-shaped samples (Fixtures/imports, see
/// docs/import-formats.md), compared with the expected credentials, skips and merges.
@Suite(.offCooperativePool)
struct ImportFixtureTests {
    struct Expected: Decodable {
        struct Item: Decodable, Equatable {
            var title: String
            var services: [String]
            var user: String
            var password: String
            var notes: String
            var totp: String?
            var folder: String?
        }
        struct Problem: Decodable {
            var line: Int?
            var account: Int?
            var index: Int?
            var credential: Int?
            var reason: String
        }
        var format: String
        var credentials: [Item]
        var skipped: [Problem]
        var duplicatesMerged: Int
        var warnings: [Problem]?
    }

    static let samples: [(file: String, expected: String)] = [
        ("chrome.csv", "chrome.expected.json"),
        ("chrome-old.csv", "chrome-old.expected.json"),
        ("firefox.csv", "firefox.expected.json"),
        ("safari.csv", "safari.expected.json"),
        ("bitwarden.csv", "bitwarden.expected.json"),
        ("bitwarden.json", "bitwarden-json.expected.json"),
        ("1password.csv", "1password.expected.json"),
        ("keepassxc.csv", "keepassxc.expected.json"),
        ("lastpass.csv", "lastpass.expected.json"),
        ("cxf.json", "cxf.expected.json"),
        ("broken-1000.csv", "broken-1000.expected.json"),
    ]

    static func bytes(_ name: String) throws -> [UInt8] {
        Array(try Fixtures.data("imports/\(name)"))
    }

    @Test(arguments: samples)
    func detectsAndReadsEachFormat(_ file: String, _ expectedFile: String) throws {
        let expected = try Fixtures.decode(Expected.self, "imports/\(expectedFile)")
        let data = try Self.bytes(file)
        #expect(ImportFormat.detect(data)?.rawValue == expected.format)
        let parsed = try ImportParser.parse(data)
        #expect(parsed.format.rawValue == expected.format)

        // Merge exact duplicates in file order, as an import into an empty vault does.
        var seen: [CredentialContent] = []
        var merged = 0
        for item in parsed.items {
            if seen.contains(item.content) { merged += 1 } else { seen.append(item.content) }
        }
        let items = seen.map {
            Expected.Item(
                title: $0.title,
                services: $0.services.map(\.identifier),
                user: $0.user,
                password: $0.password ?? "",
                notes: $0.notes,
                totp: $0.totp,
                folder: $0.folder
            )
        }
        #expect(items.count == expected.credentials.count)
        for (ours, theirs) in zip(items, expected.credentials) {
            #expect(ours == theirs)
        }
        #expect(merged == expected.duplicatesMerged)
        #expect(parsed.skipped.map(\.reason) == expected.skipped.map(\.reason))
        #expect(parsed.skipped.map(\.location.line) == expected.skipped.map(\.line))
        #expect(parsed.skipped.map(\.location.index) == expected.skipped.map(\.index))
        #expect(parsed.warnings.map(\.reason) == (expected.warnings ?? []).map(\.reason))
        #expect(parsed.warnings.map(\.location.credential) == (expected.warnings ?? []).map(\.credential))
    }

    @Test func brokenRowsAreReportedAndTheRestImported() throws {
        let test = try TestVault()
        let report = try test.vault.importItems(ImportParser.parse(try Self.bytes("broken-1000.csv")))
        #expect(report.imported == 995)
        #expect(report.skipped.count == 5)
        #expect(report.skipped.compactMap(\.location.line) == [137, 402, 588, 771, 950])
        #expect(try test.vault.count() == 995)
        // Reports never carry a password.
        let passwords = try test.vault.list().credentials.compactMap(\.password)
        let reportText = report.skipped.map(\.description).joined()
        #expect(!passwords.contains { reportText.contains($0) })
    }

    @Test func importsMergeWithTheVault() throws {
        let test = try TestVault()
        let first = try test.vault.importFile(Fixtures.url("imports/chrome.csv"))
        #expect(first.imported == 11 && first.duplicatesMerged == 1)
        // The same file again: everything is already there.
        let second = try test.vault.importFile(Fixtures.url("imports/chrome.csv"))
        #expect(second.imported == 0 && second.duplicatesMerged == 12)
        #expect(try test.vault.count() == 11)
    }

    @Test func unknownAndEncryptedFilesAreRefusedClearly() throws {
        #expect(throws: VaultError(.invalidInput, "")) {
            try ImportParser.parse(Array("col1,col2\na,b\n".utf8))
        }
        let encrypted = #"{"encrypted": true, "encKeyValidation_DO_NOT_EDIT": "2.x", "items": []}"#
        #expect {
            try ImportParser.parse(Array(encrypted.utf8))
        } throws: { error in
            (error as? VaultError)?.message.contains("encrypted") == true
        }
        // Forcing a format whose columns are missing says which.
        #expect {
            try ImportParser.parse(try Self.bytes("firefox.csv"), format: .lastpassCSV)
        } throws: { error in
            (error as? VaultError)?.message.contains("name") == true
        }
    }

    @Test func bitwardenHistoryIsImported() throws {
        let test = try TestVault()
        let report = try test.vault.importFile(Fixtures.url("imports/bitwarden.json"))
        var histories = 0
        for id in report.ids {
            histories += try test.vault.history(id).count
        }
        let document = try JSONSerialization.jsonObject(with: Fixtures.data("imports/bitwarden.json")) as! [String: Any]
        let expected = (document["items"] as! [[String: Any]]).reduce(0) { sum, item in
            sum + ((item["passwordHistory"] as? [Any])?.count ?? 0)
        }
        #expect(histories == expected)
    }
}

/// Security review Low #12 and #21: crafted exports are errors or reported rows, never a crash or a
/// blow-up in memory.
struct HostileImportTests {
    /// `Int(Double)` trapped on these (SIGILL); now each is read as "not a number we accept".
    @Test func hugeNumbersInJSONDoNotCrash() throws {
        let bitwarden =
            #"{"encrypted": false, "items": [{"type": 1e300, "name": "x", "login": {"username": "u", "password": "p"}}]}"#
        let parsed = try ImportParser.parse(Array(bitwarden.utf8), format: .bitwardenJSON)
        #expect(parsed.items.isEmpty && parsed.skipped.count == 1)

        let cxfVersion = #"{"version": {"major": 1e300, "minor": 0}, "accounts": []}"#
        #expect {
            try ImportParser.parse(Array(cxfVersion.utf8), format: .cxf)
        } throws: { error in
            (error as? VaultError)?.code == .invalidInput && "\(error)".contains("not supported")
        }

        for (digits, period) in [("1e300", "30"), ("6", "1e300"), ("-6", "30"), ("6", "0.5")] {
            let cxf = """
                {"version": {"major": 1, "minor": 0}, "exporterRpId": "x", "exporterDisplayName": "x", "timestamp": 0,
                 "accounts": [{"id": "a", "username": "", "email": "", "collections": [], "items": [{
                   "id": "i", "title": "T", "scope": {"urls": ["https://t.example"]},
                   "credentials": [
                     {"type": "basic-auth", "username": {"fieldType": "string", "value": "u"},
                      "password": {"fieldType": "concealed-string", "value": "p"}},
                     {"type": "totp", "secret": "JBSWY3DPEHPK3PXP", "digits": \(digits), "period": \(period),
                      "algorithm": "sha1"}]}]}]}
                """
            let parsed = try ImportParser.parse(Array(cxf.utf8), format: .cxf)
            #expect(parsed.items.count == 1, "\(digits) \(period)")
            #expect(parsed.items.first?.content.totp == nil)
            #expect(parsed.warnings.contains { $0.reason == "credential-not-imported" })
        }
    }

    /// 20 MB of commas took 536 MB of memory; a row now keeps at most the header's fields plus one.
    @Test func aRowOfMillionsOfCommasIsCapped() throws {
        var bytes = Array("name,url,username,password\n".utf8)
        bytes += Array(repeating: UInt8(ascii: ","), count: 2_000_000)
        bytes += Array("\nsite,https://site.example,alice,pw\n".utf8)
        let records = CSVReader.records(bytes)
        #expect(records.count == 3)
        #expect(records[1].fields.count == 5 && records[1].problem == .tooManyFields)
        let parsed = try ImportParser.parse(bytes, format: .chromeCSV)
        #expect(parsed.items.count == 1)
        #expect(parsed.skipped.map(\.reason) == ["too-many-fields"])
    }
}
