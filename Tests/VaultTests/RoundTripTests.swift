import Foundation
import KeyhavenTesting
import Testing
import Vault

/// Export → import gives back the same vault content, for every export format.
@Suite(.offCooperativePool)
struct RoundTripTests {
    static func contents(_ vault: Vault) throws -> [CredentialContent] {
        try vault.list().credentials.map(\.content).sorted { "\($0)" < "\($1)" }
    }

    @Test(arguments: ExportFormat.allCases)
    func exportReimportsToTheSameContent(_ format: ExportFormat) throws {
        let source = try TestVault()
        for sample in ["chrome.csv", "bitwarden.json", "keepassxc.csv", "cxf.json", "lastpass.csv"] {
            _ = try source.vault.importFile(Fixtures.url("imports/\(sample)"))
        }
        // A credential with every field, several services and a TOTP URI.
        let id = try source.vault.add(
            CredentialContent(
                title: "Everything, \"quoted\"",
                services: [
                    .init("https://a.example.com/login"), .init("b.example.com"), .init("androidapp://com.example.b"),
                    // Found by FuzzImport: CXF exported an app identifier with a path as the bare
                    // app, and would move an app listed before a URL behind it.
                    .init("androidapp://com.example.c/login"), .init("androidapp://com.example.d"),
                    .init("https://e.example.com"),
                ],
                user: " spaced user ",
                password: "p,a\"s\ns",
                notes: "line 1\r\nline 2, “curly”",
                totp: "otpauth://totp/Example:alice?secret=JBSWY3DPEHPK3PXP&issuer=Example&digits=8&period=60",
                folder: "Work/Deep/Nested"
            )
        )
        try source.vault.update(id) { $0.password = "second" }

        let credentials = try source.vault.list().credentials
        var history: [CredentialID: [PasswordHistoryEntry]] = [:]
        for credential in credentials {
            history[credential.id] = try source.vault.history(credential.id)
        }
        let exported = try Exporter.export(credentials, history: history, format: format)

        let target = try TestVault()
        let parsed = try ImportParser.parse(Array(exported))
        #expect(parsed.skipped.isEmpty, "\(parsed.skipped)")
        let report = try target.vault.importItems(parsed)
        #expect(report.imported == credentials.count)
        #expect(try Self.contents(target.vault) == Self.contents(source.vault))
        if format == .bitwardenJSON {
            let copied = try target.vault.list().credentials.first { $0.password == "second" }!
            #expect(try target.vault.history(copied.id).map(\.password) == ["p,a\"s\ns"])
        }
    }
}

/// Found by FuzzImport: a Bitwarden CSV `login_uri` whose second URI held a line break imported as one
/// service with a line break inside; Keyhaven's CSV writes further services one per line, so the
/// re-import had an extra service. A field's line breaks now separate services in every format.
@Suite struct ServicesWithLineBreaksTests {
    @Test func aLineBreakInsideAURIFieldSeparatesServices() throws {
        let csv = """
            folder,favorite,type,name,notes,fields,reprompt,login_uri,login_username,login_password,login_totp
            ,,login,Example Shop,,,0,"https://shop.example.com/login,https://
            eckout.example.com/",shopper42,Sh0p!Vw8rT2yL5nK,

            """
        let parsed = try ImportParser.parse(Array(csv.utf8), format: .bitwardenCSV)
        let services = try #require(parsed.items.first).content.services.map(\.identifier)
        #expect(services == ["https://shop.example.com/login", "https://", "eckout.example.com/"])
        #expect(services.allSatisfy { !$0.contains(where: \.isNewline) })

        let vault = try TestVault().vault
        _ = try vault.importItems(parsed)
        let exported = try Exporter.export(vault.list().credentials, history: [:], format: .csv)
        let again = try ImportParser.parse(Array(exported))
        let before: [CredentialContent] = parsed.items.map { $0.content }
        let after: [CredentialContent] = again.items.map { $0.content }
        #expect(after == before)
    }
}

/// Found by FuzzImport: a field holding "\r\n" was written unquoted (in Swift "\r\n" is one
/// Character, equal to neither "\r" nor "\n") and split the row on re-import.
@Suite struct CSVLineBreakTests {
    @Test(arguments: ["a\r\nb", "a\rb", "a\nb", "\r\n"])
    func fieldsWithLineBreaksSurviveTheCSVExport(_ secret: String) throws {
        let vault = try TestVault().vault
        _ = try vault.add(
            CredentialContent(
                title: "T",
                services: [.init("example.com")],
                user: secret,
                password: secret,
                notes: secret
            )
        )
        let exported = try Exporter.export(vault.list().credentials, history: [:], format: .csv)
        let again = try ImportParser.parse(Array(exported))
        #expect(again.skipped.isEmpty, "\(again.skipped)")
        let item = try #require(again.items.first)
        #expect(item.content.password == secret && item.content.user == secret && item.content.notes == secret)
    }
}

/// CXF keeps apps apart from URLs: an app after every URL is exported as an Android app (for other
/// managers to read), one before a URL or with a path stays an `androidapp://` URL (found by
/// FuzzImport: the re-import had moved or shortened it).
@Suite struct CXFAppsTests {
    @Test func appsGoToAndroidAppsOnlyWhenTheOrderSurvives() throws {
        let test = try TestVault()
        _ = try test.vault.add(
            CredentialContent(services: [.init("https://x.example"), .init("androidapp://com.example.y")], user: "a")
        )
        _ = try test.vault.add(
            CredentialContent(services: [.init("androidapp://com.example.z"), .init("https://w.example")], user: "b")
        )
        let credentials = try test.vault.list().credentials
        let exported = try Exporter.export(credentials, history: [:], format: .cxf)
        let text = String(decoding: exported, as: UTF8.self)
        #expect(text.contains(#""bundleId":"com.example.y""#) || text.contains(#""bundleId" : "com.example.y""#))
        #expect(!text.contains("\"com.example.z\""))
        let again = try ImportParser.parse(Array(exported)).items.map { $0.content.services.map(\.identifier) }
        #expect(
            Set(again.map { $0.joined(separator: " ") }) == [
                "https://x.example androidapp://com.example.y", "androidapp://com.example.z https://w.example",
            ]
        )
    }
}
