public import Foundation
import GRDB

/// The outcome of an import.
public struct ImportReport: Hashable, Sendable, Codable {
    public var format: ImportFormat
    /// Credentials added to the vault.
    public var imported: Int
    /// Credentials identical (title, services, user, password, notes, TOTP, folder) to one earlier in
    /// the file or already in the vault, and therefore not added again.
    public var duplicatesMerged: Int
    /// Rows or items not imported, with where and why.
    public var skipped: [ImportProblem]
    /// Items imported in part.
    public var warnings: [ImportProblem]
    public var ids: [CredentialID]
    /// Passkeys added (the format's passkeys not already in the vault).
    public var passkeys: Int = 0
}

extension Vault {
    /// Stores what ``ImportParser`` read, in one transaction: all of it or, on failure, none of it.
    public func importItems(_ parsed: ParsedImport) throws(VaultError) -> ImportReport {
        try guarded {
            try authenticatedWrite { db in
                var report = try Self.plan(parsed, keys: keys, db)
                for item in report.pending {
                    let id = try insert(item.content, db)
                    for entry in item.history {
                        try appendHistory(id, password: entry.password, replaced: entry.replaced, db)
                    }
                    report.report.ids.append(id)
                }
                for passkey in parsed.passkeys where try insertPasskeyIfNew(passkey, db) {
                    report.report.passkeys += 1
                }
                return report.report
            }
        }
    }

    /// What ``importItems(_:)`` would do, without writing anything: the same counts of credentials
    /// added and duplicates merged, and no ids.
    public func previewImport(_ parsed: ParsedImport) throws(VaultError) -> ImportReport {
        try guarded {
            try database.read { db in
                var report = try Self.plan(parsed, keys: keys, db).report
                var seen = Set<String>()
                for passkey in parsed.passkeys where seen.insert(passkeyID(passkey)).inserted {
                    let stored =
                        try Int.fetchOne(
                            db,
                            sql: "SELECT COUNT(*) FROM passkey WHERE id = ?",
                            arguments: [passkeyID(passkey)]
                        )
                        ?? 0
                    if stored == 0 { report.passkeys += 1 }
                }
                return report
            }
        }
    }

    /// The one decision of what an import adds: items neither identical to one earlier in the file
    /// nor to a credential already in the vault.
    private static func plan(
        _ parsed: ParsedImport,
        keys: VaultKeys,
        _ db: Database
    ) throws -> (report: ImportReport, pending: [ParsedImport.Item]) {
        var seen = Set<Data>()
        for tag in try Data.fetchAll(db, sql: "SELECT contentTag FROM credential WHERE deleted IS NULL") {
            seen.insert(tag)
        }
        var report = ImportReport(
            format: parsed.format,
            imported: 0,
            duplicatesMerged: 0,
            skipped: parsed.skipped,
            warnings: parsed.warnings,
            ids: []
        )
        var pending: [ParsedImport.Item] = []
        for item in parsed.items {
            guard seen.insert(keys.contentTag(item.content)).inserted else {
                report.duplicatesMerged += 1
                continue
            }
            pending.append(item)
            report.imported += 1
        }
        return (report, pending)
    }

    /// Reads and imports a file: ``ImportParser/parse(_:format:)`` then ``importItems(_:)``.
    public func importFile(_ url: URL, format: ImportFormat? = nil) throws(VaultError) -> ImportReport {
        let bytes: [UInt8]
        do {
            bytes = Array(try Data(contentsOf: url))
        } catch {
            throw VaultError(.invalidInput, "cannot read \(url.path)")
        }
        return try importItems(ImportParser.parse(bytes, format: format))
    }
}
