import Foundation

/// Checks on the raw file, made before SQLite touches it, so that opening a foreign or damaged file
/// never writes to it (SQLite would, for instance, switch a foreign database to WAL).
enum VaultFile {
    static func check(_ url: URL) throws {
        let path = url.path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw VaultError(.noVault, "no vault at \(path); create one with `keyhaven init`")
        }
        guard !isDirectory.boolValue else {
            throw VaultError(.notAVault, "\(path) is a directory, not a Keyhaven vault")
        }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw VaultError(.storage, "cannot read \(path) (permissions?)")
        }
        defer { try? handle.close() }
        let header = (try? handle.read(upToCount: 100)) ?? Data()
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue ?? 0
        guard header.count == 100, header.starts(with: Data("SQLite format 3\0".utf8)) else {
            throw VaultError(.notAVault, "\(path) is not a Keyhaven vault (not an SQLite database)")
        }
        func bigEndian(_ offset: Int, _ count: Int) -> Int {
            header[offset..<offset + count].reduce(0) { $0 << 8 | Int($1) }
        }
        guard Int32(truncatingIfNeeded: bigEndian(68, 4)) == VaultSchema.applicationID else {
            throw VaultError(.notAVault, "\(path) is an SQLite database but not a Keyhaven vault")
        }
        var pageSize = bigEndian(16, 2)
        if pageSize == 1 { pageSize = 65_536 }
        let pages = bigEndian(28, 4)
        let counterMatches = bigEndian(24, 4) == bigEndian(92, 4)
        guard pageSize >= 512, size % pageSize == 0, !counterMatches || size >= pages * pageSize else {
            throw VaultError(
                .damaged,
                "\(path) is damaged: \(size) bytes where the header promises \(pages) pages of \(pageSize); "
                    + "restore it from a backup"
            )
        }
    }
}
