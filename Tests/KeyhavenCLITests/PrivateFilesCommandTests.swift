import Foundation
import KeyhavenTesting
import Testing

/// Security review M4, M5 through the real binary, under the usual umask 022: every secret file
/// `keyhaven` writes (exports, the API token, team `.p8` keys, the provider's database and its
/// secrets key) is private from its first byte and never written through a link someone planted;
/// the provider's database holds no key in the clear; `keyhaven idp secrets rotate` re-seals it.
struct PrivateFilesCommandTests {
    static func mode(_ url: URL) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? NSNumber)?.intValue
    }

    static func isLink(_ url: URL) -> Bool {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: url.path)) != nil
    }

    /// Everything on disk for an SQLite database.
    static func onDisk(_ url: URL) -> Data {
        ["", "-wal", "-shm", "-journal"].reduce(into: Data()) { all, suffix in
            all += FileManager.default.contents(atPath: url.path + suffix) ?? Data()
        }
    }

    @Test func exportsArePrivateAndNeverWrittenThroughALink() async throws {
        useUsualUmask()
        let directory = try TemporaryDirectory.make()
        var environment = ProcessInfo.processInfo.environment
        environment["KEYHAVEN_VAULT"] = directory.appendingPathComponent("vault/vault.sqlite").path
        environment["KEYHAVEN_PASSWORD"] = "correct horse battery"
        environment["KEYHAVEN_INSECURE_KDF"] = "1"  // the N=2^10 test vaults
        let keyhaven = CommandRunner.keyhaven(environment: environment)
        #expect(try await keyhaven.runDetached(["init", "--scrypt-log-n", "10"]).status == 0)
        #expect(Self.mode(directory.appendingPathComponent("vault")) == 0o700)
        #expect(Self.mode(directory.appendingPathComponent("vault/vault.sqlite")) == 0o600)
        let fixture = Fixtures.packageRoot().appendingPathComponent("Tests/VaultTests/Fixtures/imports/chrome.csv")
        #expect(try await keyhaven.runDetached(["import", fixture.path]).status == 0)

        // Another user watches the folder the export goes to.
        let exports = try TemporaryDirectory.make()
        let watcher = FolderWatcher(exports)
        let file = exports.appendingPathComponent("passwords.csv")
        let exported = try await keyhaven.runDetached(["export", "--format", "csv", "--output", file.path])
        #expect(exported.status == 0, "\(exported.stderr)")
        let exposed = watcher.stop()
        #expect(exposed.isEmpty, "readable by others at some moment: \(exposed)")
        #expect(Self.mode(file) == 0o600)

        // A link planted at the output, dangling (the attacker reads its target later) or to a
        // file of the person's: refused, nothing written anywhere.
        let victim = exports.appendingPathComponent("victim")
        try Data("untouched".utf8).write(to: victim)
        for (name, target) in [
            ("dangling.csv", exports.appendingPathComponent("stolen.csv")), ("to-victim.csv", victim),
        ] {
            let link = exports.appendingPathComponent(name)
            try FileManager.default.createSymbolicLink(at: link, withDestinationURL: target)
            let refused = try await keyhaven.runDetached(["export", "--format", "csv", "--output", link.path])
            #expect(refused.status == 1 && refused.stderr.contains("already exists"), "\(refused.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: exports.appendingPathComponent("stolen.csv").path))
        #expect(FileManager.default.contents(atPath: victim.path) == Data("untouched".utf8))
    }

    @Test(.timeLimit(.minutes(2))) func theTokenFileReplacesAPlantedLinkAndIsPrivate() async throws {
        useUsualUmask()
        let directory = try TemporaryDirectory.make()
        var environment = ProcessInfo.processInfo.environment
        environment["KEYHAVEN_VAULT"] = directory.appendingPathComponent("vault.sqlite").path
        environment["KEYHAVEN_PASSWORD"] = "serve master under the old oak"
        environment["KEYHAVEN_INSECURE_KDF"] = "1"  // the N=2^10 test vault
        let keyhaven = CommandRunner.keyhaven(environment: environment)
        #expect(try await keyhaven.runDetached(["init", "--scrypt-log-n", "10"]).status == 0)
        let victim = directory.appendingPathComponent("victim")
        try Data("untouched".utf8).write(to: victim)
        let tokenFile = directory.appendingPathComponent("api-token")
        try FileManager.default.createSymbolicLink(at: tokenFile, withDestinationURL: victim)

        let process = Process()
        process.executableURL = keyhaven.executable
        process.arguments = ["serve", "--port", "0", "--token-file", tokenFile.path]
        process.environment = environment
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        let started = try await CommandRunner.detached { () -> String in
            var text = ""
            while process.isRunning && !text.contains("Ctrl-C stops") {
                text += String(decoding: errors.fileHandleForReading.availableData, as: UTF8.self)
            }
            return text
        }
        #expect(started.contains("Ctrl-C stops"), "\(started)")
        #expect(FileManager.default.contents(atPath: victim.path) == Data("untouched".utf8))
        #expect(!Self.isLink(tokenFile))
        #expect(Self.mode(tokenFile) == 0o600)
        #expect((FileManager.default.contents(atPath: tokenFile.path)?.count ?? 0) >= 32)
        process.terminate()
        try await CommandRunner.detached { process.waitUntilExit() }
    }

    @Test(.timeLimit(.minutes(2))) func theProvidersFilesArePrivateAndItsKeysSealed() async throws {
        useUsualUmask()
        let directory = try TemporaryDirectory.make()
        let data = directory.appendingPathComponent("idp-data")
        let database = data.appendingPathComponent("idp.sqlite")
        let keyFile = data.appendingPathComponent("idp.secrets-key")
        var environment = ProcessInfo.processInfo.environment
        environment["KEYHAVEN_IDP_DATABASE"] = database.path
        environment["KEYHAVEN_IDP_SCRYPT_LOG_N"] = "10"
        environment["KEYHAVEN_IDP_USER_PASSWORD"] = "grace's provider password"
        environment.removeValue(forKey: "KEYHAVEN_IDP_SECRETS_KEY_FILE")
        let keyhaven = CommandRunner.keyhaven(environment: environment)
        let watcher = FolderWatcher(directory)

        // The first command creates the folder, the database and the secrets key, all private.
        let team = try await keyhaven.runDetached(["idp", "team", "add", "Shiny Inc"])
        #expect(team.status == 0, "\(team.stderr)")
        let teamId = team.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(Self.mode(data) == 0o700)
        #expect(Self.mode(database) == 0o600)
        #expect(Self.mode(keyFile) == 0o600)
        let key = try #require(FileManager.default.contents(atPath: keyFile.path))
        let decoded = Data(
            base64Encoded: String(decoding: key, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        )
        #expect(decoded?.count == 32)
        let added = try await keyhaven.runDetached(["idp", "user", "add", "grace@example.com", "--totp"])
        #expect(added.status == 0, "\(added.stderr)")
        let totp = try #require(added.stdout.split(separator: " ").last).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try await keyhaven.runDetached(["idp", "keys", "rotate"]).status == 0)

        // The team's .p8: private; a planted link is refused before any key is registered.
        let p8 = directory.appendingPathComponent("team.p8")
        let created = try await keyhaven.runDetached(["idp", "team", "key", "create", teamId, "--output", p8.path])
        #expect(created.status == 0, "\(created.stderr)")
        #expect(Self.mode(p8) == 0o600)
        let planted = directory.appendingPathComponent("planted.p8")
        try FileManager.default.createSymbolicLink(
            at: planted,
            withDestinationURL: directory.appendingPathComponent("stolen.p8")
        )
        let refused = try await keyhaven.runDetached(["idp", "team", "key", "create", teamId, "--output", planted.path])
        #expect(refused.status == 1 && refused.stderr.contains("already exists"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("stolen.p8").path))

        // The attacker's copy of the database: no private key, no authenticator secret.
        var bytes = Self.onDisk(database)
        #expect(bytes.count > 10_000)
        #expect(bytes.range(of: Data("PRIVATE KEY".utf8)) == nil)
        #expect(bytes.range(of: Data(totp.utf8)) == nil)
        let exposed = watcher.stop()
        #expect(exposed.isEmpty, "readable by others at some moment: \(exposed)")

        // Rotation: a new key in the same file (still private, no .new left), the same signing keys.
        let kids = try await keyhaven.runDetached(["idp", "keys", "list"]).stdout
        let oldKey = directory.appendingPathComponent("old.secrets-key")
        try FileManager.default.copyItem(at: keyFile, to: oldKey)
        let rotated = try await keyhaven.runDetached(["idp", "secrets", "rotate"])
        #expect(
            rotated.status == 0 && rotated.stdout.contains("re-sealed 4 secrets"),
            "\(rotated.stdout)\(rotated.stderr)"
        )
        #expect(FileManager.default.contents(atPath: keyFile.path) != key)
        #expect(Self.mode(keyFile) == 0o600)
        #expect(!FileManager.default.fileExists(atPath: keyFile.path + ".new"))
        #expect(try await keyhaven.runDetached(["idp", "keys", "list"]).stdout == kids)
        bytes = Self.onDisk(database)
        #expect(bytes.range(of: Data("PRIVATE KEY".utf8)) == nil)

        // The old key opens nothing; without the key file, nothing is created that could pass.
        let withOld = try await keyhaven.runDetached(["idp", "team", "list", "--secrets-key-file", oldKey.path])
        #expect(withOld.status == 1 && withOld.stderr.contains("sealed with another secrets key"), "\(withOld.stderr)")
        let moved = directory.appendingPathComponent("moved.secrets-key")
        try FileManager.default.moveItem(at: keyFile, to: moved)
        let without = try await keyhaven.runDetached(["idp", "team", "list"])
        #expect(without.status == 1 && without.stderr.contains("sealed with another secrets key"), "\(without.stderr)")
        #expect(!FileManager.default.fileExists(atPath: keyFile.path))
        try FileManager.default.moveItem(at: moved, to: keyFile)

        // A database an earlier Keyhaven left readable by others is made private, with a warning.
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: database.path)
        let listed = try await keyhaven.runDetached(["idp", "team", "list"])
        #expect(listed.status == 0 && listed.stdout.contains(teamId), "\(listed.stderr)")
        #expect(listed.stderr.contains("warning") && listed.stderr.contains("now private"), "\(listed.stderr)")
        #expect(Self.mode(database) == 0o600)
    }
}
