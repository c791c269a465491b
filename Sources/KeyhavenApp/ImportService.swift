public import Foundation
public import Vault

/// The use case behind `keyhaven import` and the web app's import page: read an export
/// from another password manager, show what it would change, then write it in one transaction.
///
/// Reading is bounded (``maximumFileSize``) so a huge or endless file is refused with a clear
/// message before it is read into memory; the parser itself touches no vault.
public struct ImportService: Sendable {
    /// The largest export read: 64 MiB (a 100,000-item Bitwarden JSON export is about 60 MB).
    public static let maximumFileSize = 64 << 20

    public var vault: Vault

    public init(vault: Vault) {
        self.vault = vault
    }

    /// Parses an export held in memory, detecting the format unless `format` is given.
    public static func read(_ bytes: [UInt8], format: ImportFormat? = nil) throws(VaultError) -> ParsedImport {
        guard bytes.count <= maximumFileSize else { throw tooLarge(bytes.count) }
        return try ImportParser.parse(bytes, format: format)
    }

    /// Reads and parses the export at `url` (a regular file, or a pipe such as `/dev/stdin`), never
    /// more than ``maximumFileSize`` bytes of it.
    public static func read(contentsOf url: URL, format: ImportFormat? = nil) throws(VaultError) -> ParsedImport {
        let handle: FileHandle
        do {
            handle = try FileHandle(forReadingFrom: url)
        } catch {
            throw VaultError(.invalidInput, "cannot read \(url.path): no such file, or not readable")
        }
        defer { try? handle.close() }
        let data: Data
        do {
            data = try handle.read(upToCount: maximumFileSize + 1) ?? Data()
        } catch {
            throw VaultError(.invalidInput, "cannot read \(url.path)")
        }
        guard data.count <= maximumFileSize else { throw tooLarge(nil) }
        return try ImportParser.parse(Array(data), format: format)
    }

    /// What ``run(_:)`` would add and merge; nothing is written.
    public func preview(_ parsed: ParsedImport) throws(VaultError) -> ImportReport {
        try vault.previewImport(parsed)
    }

    /// Adds every new credential of `parsed`, all or nothing.
    public func run(_ parsed: ParsedImport) throws(VaultError) -> ImportReport {
        try vault.importItems(parsed)
    }

    private static func tooLarge(_ size: Int?) -> VaultError {
        let limit = maximumFileSize >> 20
        let actual = size.map { " (\($0 >> 20) MiB)" } ?? ""
        return VaultError(
            .invalidInput,
            "the file is larger than \(limit) MiB\(actual); an export of a password manager is far smaller — "
                + "is this the right file?"
        )
    }
}
