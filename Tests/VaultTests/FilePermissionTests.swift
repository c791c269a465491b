import Foundation
import KeyhavenTesting
import Testing
import Vault

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Security review M4: the vault, its WAL and shared-memory files, and the folder Keyhaven makes
/// for it are private from the moment they exist, under the usual umask 022.
@Suite(.offCooperativePool)
struct FilePermissionTests {
    static func mode(_ path: String) -> mode_t {
        var status = stat()
        return lstat(path, &status) == 0 ? status.st_mode & 0o777 : 0
    }

    /// Another user lists the folder the whole time the vault is created and written: no file
    /// ever appears that they could open, not even for a moment.
    @Test func theVaultIsPrivateFromItsFirstByte() throws {
        useUsualUmask()
        let parent = try TemporaryDirectory.make()
        let watcher = FolderWatcher(parent)
        let url = parent.appendingPathComponent("made/by/keyhaven/vault.sqlite")
        let vault = try Vault.create(
            at: url,
            masterPassword: "pw",
            kdf: .random(logN: TestVault.fastKDFLogN),
            allowInsecureKDF: true
        )
        for index in 0..<300 {
            try vault.add(CredentialContent(services: [.init("s\(index).example")], user: "u", password: "p\(index)"))
        }
        let again = try Vault.open(at: url, masterPassword: "pw", allowInsecureKDF: true)
        _ = try again.list()
        for suffix in ["", "-wal", "-shm"] {
            #expect(Self.mode(url.path + suffix) == 0o600, "vault.sqlite\(suffix)")
        }
        for folder in ["made", "made/by", "made/by/keyhaven"] {
            #expect(Self.mode(parent.appendingPathComponent(folder).path) == 0o700, "\(folder)")
        }
        let exposed = watcher.stop()
        #expect(exposed.isEmpty, "readable by others at some moment: \(exposed)")
        #expect(
            watcher.seenPaths.isSuperset(of: ["made/by/keyhaven/vault.sqlite", "made/by/keyhaven/vault.sqlite-wal"])
        )
    }

    /// A symbolic link planted where the vault will be (to a file the attacker reads later) is
    /// refused; nothing is written through it and nothing is left behind.
    @Test func aLinkPlantedAtTheVaultPathIsRefused() throws {
        let folder = try TemporaryDirectory.make()
        let url = folder.appendingPathComponent("vault.sqlite")
        let target = folder.appendingPathComponent("attacker-reads-this")
        try FileManager.default.createSymbolicLink(at: url, withDestinationURL: target)
        #expect(throws: VaultError(.alreadyExists, "")) {
            try Vault.create(
                at: url,
                masterPassword: "pw",
                kdf: .random(logN: TestVault.fastKDFLogN),
                allowInsecureKDF: true
            )
        }
        #expect(!FileManager.default.fileExists(atPath: target.path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["vault.sqlite"])
    }

    /// A vault an earlier Keyhaven left readable by others (mode 0644) is made private when it is
    /// opened with the right password, and the person is told; a wrong password changes nothing.
    @Test func aVaultOthersCouldReadIsMadePrivateWhenOpened() throws {
        let test = try TestVault()
        try test.vault.add(CredentialContent(services: [.init("example.com")], user: "alice", password: "pw1"))
        try test.vault.close()
        chmod(test.url.path, 0o644)
        #expect(throws: VaultError(.wrongPassword, "")) {
            try Vault.open(at: test.url, masterPassword: "wrong", allowInsecureKDF: true)
        }
        #expect(Self.mode(test.url.path) == 0o644)
        let reopened = try test.reopen()
        #expect(Self.mode(test.url.path) == 0o600)
        #expect(reopened.fileWarnings.count == 1)
        #expect(reopened.fileWarnings.first?.contains(test.url.path) == true)
        #expect(try test.reopen().fileWarnings.isEmpty)
    }
}
