import Foundation
import Testing
import _KeyhavenSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Security review M4, M5: secret files are private from their first byte, and a file or link
/// planted at the path is never written through.
@Suite struct PrivateFileTests {
    static func folder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("kh-private-\(UUID().uuidString)")
        try PrivateFile.createDirectory(at: url)
        return url
    }

    static func mode(_ path: String) -> mode_t {
        var status = stat()
        return lstat(path, &status) == 0 ? status.st_mode & 0o777 : 0
    }

    /// With the widest umask, files are still 0600 and folders 0700: the mode is given to
    /// open/mkdir, not left to the umask and not fixed afterwards.
    @Test func modesDoNotDependOnTheUmask() throws {
        let previous = umask(0)
        defer { umask(previous) }
        let folder = try Self.folder()
        let nested = folder.appendingPathComponent("a/b/c")
        try PrivateFile.createDirectory(at: nested)
        for path in ["a", "a/b", "a/b/c"] {
            #expect(Self.mode(folder.appendingPathComponent(path).path) == 0o700, "\(path)")
        }
        let file = nested.appendingPathComponent("secret")
        try PrivateFile.create(at: file, contents: Array("s3cret".utf8))
        #expect(Self.mode(file.path) == 0o600)
        #expect(FileManager.default.contents(atPath: file.path) == Data("s3cret".utf8))
        let replaced = nested.appendingPathComponent("token")
        try PrivateFile.replace(at: replaced, contents: Array("one".utf8))
        try PrivateFile.replace(at: replaced, contents: Array("two".utf8))
        #expect(Self.mode(replaced.path) == 0o600)
        #expect(FileManager.default.contents(atPath: replaced.path) == Data("two".utf8))
        let database = nested.appendingPathComponent("db.sqlite").path
        #expect(try PrivateFile.prepareDatabase(at: database).isEmpty)
        #expect(Self.mode(database) == 0o600)
        // No temporary file is left behind.
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: nested.path).sorted() == [
                "db.sqlite", "secret", "token",
            ]
        )
    }

    /// An attacker who can write to the folder plants a symbolic link (to a file they will read,
    /// or to one of ours they want overwritten) or a file of their own they keep open: `create`
    /// refuses both and writes nothing anywhere.
    @Test func aPlantedLinkOrFileIsNeverWrittenThrough() throws {
        let folder = try Self.folder()
        let victim = folder.appendingPathComponent("victim")
        try Data("untouched".utf8).write(to: victim)
        let dangling = folder.appendingPathComponent("nowhere")
        for (name, destination) in [("to-file", victim), ("dangling", dangling)] {
            let link = folder.appendingPathComponent(name)
            try FileManager.default.createSymbolicLink(at: link, withDestinationURL: destination)
            #expect(throws: PrivateFileError(.exists, "")) {
                try PrivateFile.create(at: link, contents: Array("secret".utf8))
            }
        }
        #expect(FileManager.default.contents(atPath: victim.path) == Data("untouched".utf8))
        #expect(!FileManager.default.fileExists(atPath: dangling.path))

        let planted = folder.appendingPathComponent("planted")
        try Data().write(to: planted)
        chmod(planted.path, 0o666)
        #expect(throws: PrivateFileError(.exists, "")) {
            try PrivateFile.create(at: planted, contents: Array("secret".utf8))
        }
        #expect(FileManager.default.contents(atPath: planted.path) == Data())
    }

    /// `replace` renames a new private file over the path: a link there is replaced, its target
    /// untouched.
    @Test func replaceReplacesALinkWithoutFollowingIt() throws {
        let folder = try Self.folder()
        let victim = folder.appendingPathComponent("victim")
        try Data("untouched".utf8).write(to: victim)
        let link = folder.appendingPathComponent("api-token")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: victim)
        try PrivateFile.replace(at: link, contents: Array("token".utf8))
        #expect(FileManager.default.contents(atPath: victim.path) == Data("untouched".utf8))
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: link.path)) == nil)
        #expect(Self.mode(link.path) == 0o600)
        #expect(FileManager.default.contents(atPath: link.path) == Data("token".utf8))
    }

    /// `move` never replaces what appeared at the destination.
    @Test func moveRefusesAnExistingDestination() throws {
        let folder = try Self.folder()
        let source = folder.appendingPathComponent("new")
        try PrivateFile.create(at: source, contents: Array("new".utf8))
        let destination = folder.appendingPathComponent("existing")
        try FileManager.default.createSymbolicLink(
            at: destination,
            withDestinationURL: folder.appendingPathComponent("x")
        )
        #expect(throws: PrivateFileError(.exists, "")) { try PrivateFile.move(source, to: destination) }
        #expect(FileManager.default.contents(atPath: source.path) == Data("new".utf8))
        try FileManager.default.removeItem(at: destination)
        try PrivateFile.move(source, to: destination)
        #expect(!FileManager.default.fileExists(atPath: source.path))
        #expect(Self.mode(destination.path) == 0o600)
    }

    /// A database (and its companions) a Keyhaven before this fix left readable by others is made
    /// private, with a warning that names the file and never its contents.
    @Test func anExposedDatabaseIsMadePrivateWithAWarning() throws {
        let folder = try Self.folder()
        let database = folder.appendingPathComponent("vault.sqlite").path
        for suffix in ["", "-wal"] {
            #expect(FileManager.default.createFile(atPath: database + suffix, contents: Data("data".utf8)))
            chmod(database + suffix, 0o644)
        }
        let warnings = try PrivateFile.prepareDatabase(at: database)
        #expect(warnings.count == 2)
        #expect(warnings.allSatisfy { $0.contains("mode 644") && $0.contains("now private") })
        #expect(Self.mode(database) == 0o600 && Self.mode(database + "-wal") == 0o600)
        #expect(try PrivateFile.prepareDatabase(at: database).isEmpty)
    }
}
