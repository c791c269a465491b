import Foundation

@testable import Vault

/// One fuzz input: a password-manager export. The first byte chooses the format the way a person
/// does: 0 lets Keyhaven detect it from the file (as `keyhaven import` does without `--format`),
/// 1 … 11 name one of the eleven formats (`--format`), so every parser sees every input; the rest
/// is the file.
///
/// Beyond "no crash": every problem has a location and a reason; and what was read survives Keyhaven's
/// own export in the same family (CSV dialects → Keyhaven CSV, Bitwarden JSON → Bitwarden JSON, CXF
/// → CXF, KeePass XML → KeePass XML): re-importing the export, with the format detected, gives the same credentials (title,
/// services, user, password, notes, TOTP, folder; Bitwarden's password history too).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: start, count: count)
    guard let selector = bytes.first else { return 0 }
    let file = Array(bytes.dropFirst())
    let formats = ImportFormat.allCases
    let format = selector == 0 ? nil : formats[(Int(selector) - 1) % formats.count]
    guard let parsed = try? ImportParser.parse(file, format: format) else { return 0 }
    if let format, parsed.format != format { fatalError("asked for \(format), parsed \(parsed.format)") }

    for problem in parsed.skipped + parsed.warnings {
        let location = problem.location
        if problem.reason.isEmpty
            || [location.line, location.account, location.index, location.credential].allSatisfy({ $0 == nil })
        {
            fatalError("a problem without a reason or a location: \(problem)")
        }
    }
    guard !parsed.items.isEmpty else { return 0 }

    // Export what was read in its own family and read it back.
    let exportFormat: ExportFormat =
        switch parsed.format {
        case .bitwardenJSON: .bitwardenJSON
        case .cxf: .cxf
        case .keepassXML: .keepassXML
        default: .csv
        }
    let epoch = Date(timeIntervalSince1970: 1_700_000_000)
    var credentials: [Credential] = []
    var history: [CredentialID: [PasswordHistoryEntry]] = [:]
    for item in parsed.items {
        let id = CredentialID()
        let credential = Credential(id: id, content: item.content, created: epoch, modified: epoch)
        credentials.append(credential)
        history[id] = item.history
    }
    let exported: Data
    do {
        exported = try Exporter.export(credentials, history: history, format: exportFormat, now: epoch)
    } catch {
        fatalError("what was imported cannot be exported as \(exportFormat): \(error)")
    }
    let again: ParsedImport
    do {
        again = try ImportParser.parse(Array(exported))
    } catch {
        fatalError("Keyhaven's own \(exportFormat) export does not import: \(error)")
    }
    guard again.skipped.isEmpty else {
        fatalError("re-importing the \(exportFormat) export skipped \(again.skipped)")
    }
    guard again.items.count == parsed.items.count else {
        fatalError("\(parsed.items.count) items exported, \(again.items.count) re-imported")
    }
    // KeePass XML groups entries by folder: the same items, in the groups' order.
    let ordered = { (items: [ParsedImport.Item]) -> [ParsedImport.Item] in
        exportFormat == .keepassXML ? items.sorted { "\($0.content)" < "\($1.content)" } : items
    }
    for (first, second) in zip(ordered(parsed.items), ordered(again.items)) where first.content != second.content {
        fatalError("\(exportFormat) round trip changed an item:\n\(first.content)\n\(second.content)")
    }
    if exportFormat == .bitwardenJSON {
        for (first, second) in zip(parsed.items, again.items)
        where first.history.map(\.password) != second.history.map(\.password)
            || zip(first.history, second.history).contains(where: {
                abs($0.replaced.timeIntervalSince($1.replaced)) > 0.001
            })
        {
            fatalError("the password history changed in the round trip")
        }
    }
    return 0
}

/// No generated seeds: scripts/fuzz.sh copies the import fixtures in, one per format selector.
func seeds() -> [[UInt8]] { [] }
