public import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Files only their owner can read, from the moment they exist, and folders only their owner can
/// enter: the one way every Keyhaven target writes a secret to disk (security review M4, M5).
///
/// A file is opened with `O_CREAT | O_EXCL | O_NOFOLLOW` and mode 0600 and written through that
/// descriptor (then `fsync`ed), so there is never a moment when another user could open it, and a
/// file or symbolic link someone planted at the path is refused rather than written through. A
/// file that must replace another is written that way under a temporary name in the same folder
/// and renamed over it (a rename replaces a symbolic link, it never follows one). Folders are made
/// with `mkdir(path, 0700)`. Nothing is written and then `chmod`ed.
///
/// ```swift
/// try PrivateFile.create(at: url, contents: Array(token.utf8))   // refuses an existing path
/// try PrivateFile.replace(at: url, contents: Array(token.utf8))  // replaces it atomically
/// let warnings = try PrivateFile.prepareDatabase(at: path)       // before SQLite opens it
/// ```
public enum PrivateFile {
    /// The mode of every file: read and write for the owner only.
    static let fileMode: mode_t = 0o600
    /// The mode of every folder Keyhaven creates.
    static let directoryMode: mode_t = 0o700
    /// The companions SQLite creates next to a database.
    public static let sqliteSiblings = ["-wal", "-shm", "-journal"]

    /// Creates a new file at `url` holding `contents`, readable by its owner only.
    ///
    /// - Throws: ``PrivateFileError`` `.exists` when anything (a file, a folder, a symbolic link,
    ///   dangling or not) is at the path; `.io` otherwise. A file that could not be completed is
    ///   removed.
    public static func create(at url: URL, contents: some Collection<UInt8>) throws(PrivateFileError) {
        let path = url.path
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, fileMode)
        guard descriptor >= 0 else {
            let code = errno
            if code == EEXIST || code == ELOOP {
                throw PrivateFileError(.exists, "\(path) already exists; Keyhaven never writes through or over it")
            }
            throw PrivateFileError(.io, "cannot create \(path): \(describe(code))")
        }
        do throws(PrivateFileError) {
            try writeAll(Array(contents), to: descriptor, path: path)
            guard fsync(descriptor) == 0 else {
                throw PrivateFileError(.io, "cannot write \(path) to disk: \(describe(errno))")
            }
        } catch {
            close(descriptor)
            unlink(path)
            throw error
        }
        guard close(descriptor) == 0 else {
            let code = errno
            unlink(path)
            throw PrivateFileError(.io, "cannot write \(path): \(describe(code))")
        }
    }

    /// Writes `contents` to `url`, replacing whatever is there: a new private file under a
    /// temporary name in the same folder, renamed over `url`. Readers see the old file or the
    /// new one, never a part of either; a symbolic link at `url` is replaced, not followed.
    public static func replace(at url: URL, contents: some Collection<UInt8>) throws(PrivateFileError) {
        let temporary = temporaryURL(beside: url)
        try create(at: temporary, contents: contents)
        do throws(PrivateFileError) {
            try rename(temporary, over: url)
        } catch {
            unlink(temporary.path)
            throw error
        }
    }

    /// Renames `source` over `destination` (in the same folder), replacing what is there in one
    /// step, and makes the rename durable.
    public static func rename(_ source: URL, over destination: URL) throws(PrivateFileError) {
        guard renameFile(source.path, destination.path) == 0 else {
            throw PrivateFileError(.io, "cannot rename \(source.path) to \(destination.path): \(describe(errno))")
        }
        syncFolder(of: destination)
    }

    /// Moves `source` to `destination` in the same folder, unless something is already there:
    /// `link` then `unlink`, so the check and the move are one step (a rename would replace a file
    /// that appeared in between).
    public static func move(_ source: URL, to destination: URL) throws(PrivateFileError) {
        guard link(source.path, destination.path) == 0 else {
            let code = errno
            if code == EEXIST {
                throw PrivateFileError(
                    .exists,
                    "\(destination.path) already exists; Keyhaven never writes through or over it"
                )
            }
            throw PrivateFileError(.io, "cannot move \(source.path) to \(destination.path): \(describe(code))")
        }
        unlink(source.path)
        syncFolder(of: destination)
    }

    /// Creates the folder `url` and any missing parents, each with mode 0700 given to `mkdir`
    /// itself. Folders that exist already are left as they are (they may be the person's own).
    public static func createDirectory(at url: URL) throws(PrivateFileError) {
        var path = ""
        for component in url.standardizedFileURL.path.split(separator: "/", omittingEmptySubsequences: true) {
            path += "/" + component
            if mkdir(path, directoryMode) == 0 { continue }
            let code = errno
            var status = stat()
            guard code == EEXIST, stat(path, &status) == 0, status.st_mode & S_IFMT == S_IFDIR else {
                throw PrivateFileError(.io, "cannot create the folder \(path): \(describe(code))")
            }
        }
    }

    /// Makes ready a path where SQLite will keep a database of secrets, before SQLite opens it.
    ///
    /// A missing database is created here, empty and private (SQLite takes an empty file for a new
    /// database), so SQLite never creates it with the process umask. SQLite gives the journal, WAL
    /// and shared-memory files it creates later the mode of the database file (`findCreateFileMode`
    /// and `unixOpenSharedMemory` in its Unix VFS), so they are private too: no process-wide umask
    /// change is needed, which would be a race with every other thread that creates files.
    ///
    /// A database that exists is checked with ``restrict(_:)``, with its companions: a file a
    /// Keyhaven before this check made readable by others is made private, and the returned
    /// warnings say so, or say that it could not be (another owner, a read-only file system).
    /// We do not refuse to open it: that would lock people out of every vault made before, while
    /// making it private ends the exposure from now on (copies made earlier stay exposed, which
    /// the warning tells).
    public static func prepareDatabase(at path: String) throws(PrivateFileError) -> [String] {
        var status = stat()
        if lstat(path, &status) != 0 && errno == ENOENT {
            let result = Result { () throws(PrivateFileError) in
                try create(at: URL(fileURLWithPath: path), contents: [])
            }
            switch result {
            case .success: return []
            case .failure(let error) where error.code == .exists: break  // made meanwhile: check it below
            case .failure(let error): throw error
            }
        }
        return ([""] + sqliteSiblings).compactMap { restrict(path + $0) }
    }

    /// When the file at `path` can be read or written by its group or others, makes it private
    /// (mode 0600 kept to its owner bits) and returns a warning saying so; when it cannot, returns
    /// a warning saying that. `nil` for a private or missing file.
    public static func restrict(_ path: String) -> String? {
        var status = stat()
        guard stat(path, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return nil }
        let mode = status.st_mode & 0o777
        guard mode & 0o077 != 0 else { return nil }
        let shown = String(mode, radix: 8)
        if chmod(path, mode & 0o700) == 0 {
            return "\(path) was readable by other users (mode \(shown)); it is now private (0600). "
                + "Copies made before, backups included, stay as readable as they were."
        }
        return "\(path) is readable by other users (mode \(shown)) and could not be made private "
            + "(\(describe(errno))); make it mode 0600 (chmod 600)"
    }

    /// A name for a temporary file beside `url`, hidden and unique.
    public static func temporaryURL(beside url: URL) -> URL {
        url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString).tmp")
    }

    private static func writeAll(_ bytes: [UInt8], to descriptor: Int32, path: String) throws(PrivateFileError) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { buffer in
                write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
            }
            if written < 0 {
                if errno == EINTR { continue }
                throw PrivateFileError(.io, "cannot write \(path): \(describe(errno))")
            }
            offset += written
        }
    }

    /// Makes a rename in the folder of `url` durable (best effort).
    private static func syncFolder(of url: URL) {
        let descriptor = open(url.deletingLastPathComponent().path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        fsync(descriptor)
        close(descriptor)
    }

    private static func describe(_ code: Int32) -> String {
        String(cString: strerror(code))
    }
}

/// `rename(2)` (the enum's own `rename` hides it there).
private func renameFile(_ source: String, _ destination: String) -> Int32 {
    rename(source, destination)
}

/// A private file or folder could not be made. Messages name paths, never contents.
public typealias PrivateFileError = KeyhavenError<PrivateFileErrorDomain>

/// The domain of ``PrivateFileError``.
public enum PrivateFileErrorDomain: KeyhavenErrorDomain {}

extension PrivateFileError.Code {
    /// Something is at the path already (a file, a folder or a symbolic link).
    public static var exists: Self { Self("exists") }
    /// The operating system refused (permissions, a full disk, a missing folder).
    public static var io: Self { Self("io") }
}
