import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
        // Another process may be writing the file right now (a checkpoint of its write-ahead log
        // writes the header's new page count before the pages that grow the file): a file that
        // looks short is read again for up to half a second before it is called damaged.
        var attempt = 0
        while true {
            let (header, size) = try read(path)
            let problem = try inconsistency(path, header: header, size: size)
            guard let problem else { return }
            attempt += 1
            guard attempt < 25 else { throw problem }
            usleep(20_000)
        }
    }

    /// The first 100 bytes and the size of the file.
    private static func read(_ path: String) throws -> (header: Data, size: Int) {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw VaultError(.storage, "cannot read \(path) (permissions?)")
        }
        defer { try? handle.close() }
        let header = (try? handle.read(upToCount: 100)) ?? Data()
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue ?? 0
        return (header, size)
    }

    /// Throws when the file is no Keyhaven vault; returns the error of a size that contradicts the
    /// header (damage, or a write under way), nil when the two agree.
    private static func inconsistency(_ path: String, header: Data, size: Int) throws -> VaultError? {
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
            return VaultError(
                .damaged,
                "\(path) is damaged: \(size) bytes where the header promises \(pages) pages of \(pageSize); "
                    + "restore it from a backup"
            )
        }
        return nil
    }
}
