import Foundation
import KeyhavenApp
import KeyhavenTesting
import Testing
import Vault

/// The import use case: what a preview promises is exactly what the import then does, a preview
/// writes nothing, and files too large to be an export are refused before they are read.
struct ImportServiceTests {
    static let chrome = Fixtures.packageRoot().appendingPathComponent("Tests/VaultTests/Fixtures/imports/chrome.csv")

    @Test func previewWritesNothingAndPredictsTheImport() throws {
        let test = try TestVault()
        let service = ImportService(vault: test.vault)
        let parsed = try ImportService.read(contentsOf: Self.chrome)
        #expect(parsed.format == .chromeCSV)

        let preview = try service.preview(parsed)
        #expect(preview.imported == 11 && preview.duplicatesMerged == 1 && preview.ids.isEmpty)
        #expect(try test.vault.count() == 0)

        let report = try service.run(parsed)
        #expect(report.imported == preview.imported && report.duplicatesMerged == preview.duplicatesMerged)
        #expect(report.ids.count == 11)
        #expect(try test.vault.count() == 11)

        let again = try service.preview(parsed)
        #expect(again.imported == 0 && again.duplicatesMerged == 12)
    }

    @Test func oversizedFilesAreRefusedBeforeReading() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("import-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // A sparse file: its size is past the limit without writing 64 MiB.
        let huge = folder.appendingPathComponent("huge.csv")
        #expect(FileManager.default.createFile(atPath: huge.path, contents: Data("name,url,username,password\n".utf8)))
        let handle = try FileHandle(forWritingTo: huge)
        try handle.truncate(atOffset: UInt64(ImportService.maximumFileSize) + 1)
        try handle.close()
        #expect {
            try ImportService.read(contentsOf: huge)
        } throws: { error in
            (error as? VaultError)?.code == .invalidInput && "\(error)".contains("larger than 64 MiB")
        }
        #expect(throws: VaultError(.invalidInput, "")) {
            try ImportService.read(Array(repeating: 0x41, count: ImportService.maximumFileSize + 1))
        }
        #expect(throws: VaultError(.invalidInput, "")) {
            try ImportService.read(contentsOf: folder.appendingPathComponent("missing.csv"))
        }
    }
}
