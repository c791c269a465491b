public import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Another local user's view of a folder: a thread that lists the folder (and the folders in it)
/// over and over, and records every entry it sees with each mode it had. A file that exists even
/// for a moment with a mode its group or others could open (a temporary file before a `chmod`, a
/// database SQLite created with the umask) shows up in ``exposed``.
///
/// ```swift
/// let watcher = FolderWatcher(folder)
/// try writeSecrets(into: folder)
/// #expect(watcher.stop().isEmpty)   // nothing was ever readable by others
/// ```
public final class FolderWatcher: Sendable {
    private struct State {
        var running = true
        var finished = false
        /// Every mode (permission bits and file type) seen per path relative to the folder.
        var seen: [String: Set<UInt32>] = [:]
    }

    private let folder: String
    private let state = Mutex(State())

    /// Starts watching `folder`, which must exist.
    public init(_ folder: URL) {
        self.folder = folder.path
        let thread = Thread { [self] in
            while state.withLock({ $0.running }) {
                var found: [(String, UInt32)] = []
                scan(self.folder, prefix: "", into: &found)
                state.withLock { state in
                    for (path, mode) in found { state.seen[path, default: []].insert(mode) }
                }
            }
            state.withLock { $0.finished = true }
        }
        thread.start()
    }

    /// Stops watching; the files and folders that were ever accessible to their group or others
    /// (any of the bits 0o077), each with the modes seen (octal). Symbolic links are not counted.
    @discardableResult
    public func stop() -> [String: [String]] {
        state.withLock { $0.running = false }
        while !state.withLock({ $0.finished }) { usleep(1_000) }
        return exposed
    }

    /// What ``stop()`` returns, so far.
    public var exposed: [String: [String]] {
        state.withLock { state in
            var result: [String: [String]] = [:]
            for (path, modes) in state.seen {
                let open = modes.filter { $0 & 0o077 != 0 && $0 & UInt32(S_IFMT) != UInt32(S_IFLNK) }
                if !open.isEmpty { result[path] = open.map { String($0 & 0o777, radix: 8) }.sorted() }
            }
            return result
        }
    }

    /// Every path seen (relative to the folder).
    public var seenPaths: Set<String> {
        state.withLock { Set($0.seen.keys) }
    }

    private func scan(_ path: String, prefix: String, into found: inout [(String, UInt32)]) {
        guard let directory = opendir(path) else { return }
        defer { closedir(directory) }
        let descriptor = dirfd(directory)
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name == "." || name == ".." { continue }
            var status = stat()
            guard fstatat(descriptor, name, &status, AT_SYMLINK_NOFOLLOW) == 0 else { continue }
            let relative = prefix + name
            found.append((relative, UInt32(status.st_mode)))
            if status.st_mode & S_IFMT == S_IFDIR {
                scan(path + "/" + name, prefix: relative + "/", into: &found)
            }
        }
    }
}

/// Sets the process's umask to 022 — the usual one, under which files are created readable by
/// everyone unless the code asks otherwise — so a test of file modes could fail. (Tests that
/// call it all set the same value, so running them in parallel changes nothing.)
public func useUsualUmask() {
    umask(0o022)
}
