import Foundation
import GRDB
import KeyhavenTesting
import Testing

/// `keyhaven init` and `passwd` against the review's findings, end to end: weak master passwords
/// and cheap key derivation (L15), `passwd` that only re-wrapped the key (M7), and a vault file
/// edited behind Keyhaven's back (M11).
struct MasterPasswordCommandTests {
    let directory: URL
    let keyhaven: CommandRunner
    var vaultPath: String { directory.appendingPathComponent("vault.sqlite").path }

    init() throws {
        directory = try TemporaryDirectory.make()
        var environment = ProcessInfo.processInfo.environment
        environment["KEYHAVEN_VAULT"] = directory.appendingPathComponent("vault.sqlite").path
        environment["KEYHAVEN_PASSWORD"] = "correct horse battery"
        // No opt-in by default here: each test says when cheap parameters are allowed.
        environment.removeValue(forKey: "KEYHAVEN_INSECURE_KDF")
        environment.removeValue(forKey: "KEYHAVEN_NEW_PASSWORD")
        keyhaven = CommandRunner.keyhaven(environment: environment)
    }

    /// Copies the vault and its write-ahead log, if any.
    func copyVault(to path: String) throws {
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: vaultPath + suffix) {
            try FileManager.default.copyItem(atPath: vaultPath + suffix, toPath: path + suffix)
        }
    }

    func sql(_ path: String, _ statements: String...) throws {
        let database = try DatabaseQueue(path: path)
        try database.writeWithoutTransaction { db in
            for statement in statements { try db.execute(sql: statement) }
        }
        try database.close()
    }

    /// The review: no strength check on the master password beyond non-empty.
    @Test func weakMasterPasswordsAreRefusedUnlessForced() async throws {
        let weak = try await keyhaven.runDetached(
            ["init", "--scrypt-log-n", "10", "--insecure-kdf"],
            extraEnvironment: ["KEYHAVEN_PASSWORD": "password1"]
        )
        #expect(weak.status == 1)
        #expect(weak.stderr.contains("too easy to guess (zxcvbn score 0/4"), "\(weak.stderr)")
        #expect(weak.stderr.contains("This is a very common password."))
        #expect(weak.stderr.contains("--force-weak-password"))
        #expect(!FileManager.default.fileExists(atPath: vaultPath))

        let forced = try await keyhaven.runDetached(
            ["init", "--scrypt-log-n", "10", "--insecure-kdf", "--force-weak-password"],
            extraEnvironment: ["KEYHAVEN_PASSWORD": "password1"]
        )
        #expect(forced.status == 0, "\(forced.stderr)")
        #expect(forced.stderr.contains("warning: the master password is too easy to guess"))

        // passwd: the review's new password `x` is refused, and the old one still opens the vault.
        let passwd = try await keyhaven.runDetached(
            ["passwd", "--insecure-kdf", "--scrypt-log-n", "10"],
            extraEnvironment: ["KEYHAVEN_PASSWORD": "password1", "KEYHAVEN_NEW_PASSWORD": "x"]
        )
        #expect(passwd.status == 1)
        #expect(passwd.stderr.contains("too easy to guess"), "\(passwd.stderr)")
        let list = try await keyhaven.runDetached(
            ["list", "--insecure-kdf"],
            extraEnvironment: ["KEYHAVEN_PASSWORD": "password1"]
        )
        #expect(list.status == 0, "\(list.stderr)")
    }

    /// The review: `passwd --scrypt-log-n 10` with new password `x` succeeded silently; `init` only
    /// warned.
    @Test func cheapKeyDerivationNeedsInsecureKDF() async throws {
        let refused = try await keyhaven.runDetached(["init", "--scrypt-log-n", "10"])
        #expect(refused.status == 64)
        #expect(refused.stderr.contains("below Keyhaven's floor of N=2^17"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: vaultPath))

        let allowed = try await keyhaven.runDetached(["init", "--scrypt-log-n", "10", "--insecure-kdf"])
        #expect(allowed.status == 0, "\(allowed.stderr)")
        #expect(allowed.stderr.contains("warning: N=2^10 is below Keyhaven's floor"))

        let add = try await keyhaven.runDetached(["add", "--service", "example.com", "--password", "pw"])
        #expect(add.status == 1)
        #expect(add.stderr.contains("below Keyhaven's floor") && add.stderr.contains("--insecure-kdf"), "\(add.stderr)")
        let environmentOptIn = try await keyhaven.runDetached(
            ["add", "--service", "example.com", "--password", "pw"],
            extraEnvironment: ["KEYHAVEN_INSECURE_KDF": "1"]
        )
        #expect(environmentOptIn.status == 0, "\(environmentOptIn.stderr)")

        let cheapPasswd = try await keyhaven.runDetached(
            ["passwd", "--scrypt-log-n", "10"],
            extraEnvironment: ["KEYHAVEN_NEW_PASSWORD": "another long master password"]
        )
        #expect(cheapPasswd.status == 64)
        #expect(cheapPasswd.stderr.contains("below Keyhaven's floor"))

        // Re-keying with calibrated parameters lifts the vault above the floor: no opt-in needed.
        let passwd = try await keyhaven.runDetached(
            ["passwd", "--insecure-kdf"],
            extraEnvironment: ["KEYHAVEN_NEW_PASSWORD": "another long master password"]
        )
        #expect(passwd.status == 0, "\(passwd.stderr)")
        #expect(passwd.stdout.contains("re-keyed"))
        let list = try await keyhaven.runDetached(
            ["list", "--json"],
            extraEnvironment: ["KEYHAVEN_PASSWORD": "another long master password"]
        )
        #expect(list.status == 0, "\(list.stderr)")
        #expect(list.stdout.contains("example.com"))
    }

    /// The review's M7 experiment: the old `kdf` and `wrappedKey` placed into the file after
    /// `passwd` let the old password read a credential added afterwards. And M11's: an older
    /// `sealed` blob copied back, and `deleted = 0` purging everything on the next `list`.
    @Test func passwdReKeysAndEditedFilesAreRefused() async throws {
        let optIn = ["KEYHAVEN_INSECURE_KDF": "1"]
        #expect(try await keyhaven.runDetached(["init", "--scrypt-log-n", "10"], extraEnvironment: optIn).status == 0)
        #expect(
            try await keyhaven.runDetached(
                ["add", "--service", "example.com", "--user", "alice", "--password", "before-passwd"],
                extraEnvironment: optIn
            ).status == 0
        )
        let backup = directory.appendingPathComponent("backup.sqlite").path
        try copyVault(to: backup)
        let passwd = try await keyhaven.runDetached(
            ["passwd", "--scrypt-log-n", "10", "--insecure-kdf"],
            extraEnvironment: ["KEYHAVEN_NEW_PASSWORD": "the new master password"]
        )
        #expect(passwd.status == 0, "\(passwd.stderr)")
        let newPassword = ["KEYHAVEN_INSECURE_KDF": "1", "KEYHAVEN_PASSWORD": "the new master password"]
        #expect(
            try await keyhaven.runDetached(
                ["add", "--service", "later.example", "--user", "bob", "--password", "written-after-passwd"],
                extraEnvironment: newPassword
            ).status == 0
        )

        // The old header in the new file: the old password opens nothing.
        let spliced = directory.appendingPathComponent("spliced.sqlite").path
        try copyVault(to: spliced)
        try sql(
            spliced,
            "ATTACH DATABASE '\(backup)' AS old",
            "UPDATE vault SET kdf = (SELECT kdf FROM old.vault), wrappedKey = (SELECT wrappedKey FROM old.vault)"
        )
        let old = try await keyhaven.runDetached(
            ["list", "--json", "--vault", spliced],
            extraEnvironment: optIn
        )
        #expect(old.status == 1)
        #expect(old.stderr.contains("re-keyed"), "\(old.stderr)")
        #expect(!old.stdout.contains("written-after-passwd"))
        // The old copy is just the old vault.
        let backupList = try await keyhaven.runDetached(["list", "--json", "--vault", backup], extraEnvironment: optIn)
        #expect(backupList.status == 0 && !backupList.stdout.contains("later.example"), "\(backupList.stderr)")

        // M11: the review's `UPDATE credential SET deleted = 0`: refused, nothing purged.
        let edited = directory.appendingPathComponent("edited.sqlite").path
        try copyVault(to: edited)
        try sql(edited, "UPDATE credential SET deleted = 0")
        let list = try await keyhaven.runDetached(["list", "--vault", edited], extraEnvironment: newPassword)
        #expect(list.status == 1)
        #expect(list.stderr.contains("altered outside Keyhaven"), "\(list.stderr)")
        let remaining = try await DatabaseQueue(path: edited).read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM credential")
        }
        #expect(remaining == 2)

        // And the genuine vault opens with the new password, everything in it.
        let current = try await keyhaven.runDetached(["list", "--json"], extraEnvironment: newPassword)
        #expect(current.status == 0 && current.stdout.contains("later.example") && current.stdout.contains("alice"))
    }
}
