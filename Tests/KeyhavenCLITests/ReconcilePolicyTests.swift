import Foundation
import KeyhavenTesting
import Testing
import Vault

#if canImport(Glibc)
import Glibc
#endif

/// Settling interrupted upgrades contacts services, so it happens only where the person asked for
/// network work (`upgrade`, `serve`): read-only commands and `--no-network` contact nothing, and a
/// damaged journal is an error, never "No upgrade is pending."
struct ReconcilePolicyTests {
    /// A loopback TCP port that records whether anything connected (the kernel completes the
    /// handshake from the backlog; nothing is ever answered).
    final class Listener {
        let fd: Int32
        let port: Int

        init() throws {
            (fd, port) = try LoopbackPort.bound()
            guard listen(fd, 16) == 0 else { throw POSIXError(.EADDRINUSE) }  // deinit closes fd
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }

        /// Whether a connection is waiting (and takes it).
        func wasContacted() -> Bool {
            let client = accept(fd, nil, nil)
            if client >= 0 { close(client) }
            return client >= 0
        }

        deinit { close(fd) }
    }

    /// A new vault (`keyhaven init`) and a runner whose environment names it and its password.
    static func newVault() async throws -> (URL, CommandRunner) {
        let vaultURL = try TemporaryDirectory.make().appendingPathComponent("vault.sqlite")
        var environment = ProcessInfo.processInfo.environment
        environment["KEYHAVEN_VAULT"] = vaultURL.path
        environment["KEYHAVEN_PASSWORD"] = "policy master"
        // The test vaults use scrypt N=2^10 (init --insecure-kdf); every command opts in to open them.
        environment["KEYHAVEN_INSECURE_KDF"] = "1"
        let keyhaven = CommandRunner.keyhaven(environment: environment)
        #expect(try await keyhaven.runDetached(["init", "--scrypt-log-n", "10", "--insecure-kdf"]).status == 0)
        return (vaultURL, keyhaven)
    }

    /// Review #16: `upgrade` on one port never picks the credential saved for another port of the
    /// same host (its password would have been sent to the wrong service).
    @Test func upgradeMatchesTheExactOrigin() async throws {
        let saved = try Listener()
        let other = try Listener()
        let (vaultURL, keyhaven) = try await Self.newVault()
        do {
            let vault = try Vault.open(at: vaultURL, masterPassword: "policy master", allowInsecureKDF: true)
            try vault.add(
                CredentialContent(services: [.init("http://127.0.0.1:\(saved.port)")], user: "ada", password: "pw1")
            )
            try vault.close()
        }
        let result = try await keyhaven.runDetached(["upgrade", "http://127.0.0.1:\(other.port)", "--no-browser"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("no credential for http://127.0.0.1:\(other.port)"), "\(result.stderr)")
        #expect(!saved.wasContacted() && !other.wasContacted())
    }

    @Test func readOnlyCommandsAndNoNetworkContactNothing() async throws {
        let listener = try Listener()
        let (vaultURL, keyhaven) = try await Self.newVault()
        let origin = "http://127.0.0.1:\(listener.port)"
        let id: CredentialID
        do {
            let vault = try Vault.open(at: vaultURL, masterPassword: "policy master", allowInsecureKDF: true)
            id = try vault.add(CredentialContent(services: [.init(origin)], user: "ada", password: "password1"))
            try vault.beginUpgrade(
                UpgradeJournalEntry(
                    credentialID: id,
                    kind: .strongPassword,
                    user: "ada",
                    service: origin,
                    endpoint: "\(origin)/account-modification",
                    requestId: "pending-1",
                    oldPassword: "password1",
                    newPassword: "Fresh-Strong-Password-1",
                    started: Date()
                )
            )
            try vault.close()
        }

        for arguments in [
            ["list"], ["show", String(id.rawValue.prefix(8))], ["search", "ada"],
            ["audit", "--no-network", "--no-breach-check"],
        ] {
            let result = try await keyhaven.runDetached(arguments)
            #expect(result.status == 0 || arguments[0] == "audit", "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains("unconfirmed"), "\(arguments) should mention the pending upgrade")
            #expect(!listener.wasContacted(), "\(arguments) contacted the service")
        }
        // The pending entry is intact: both passwords kept.
        let vault = try Vault.open(at: vaultURL, masterPassword: "policy master", allowInsecureKDF: true)
        #expect(try vault.pendingUpgrades().count == 1)
        try vault.close()

        // `upgrade --reconcile` is where the service is asked (here it never answers: still pending).
        let reconcile = try await keyhaven.runDetached(["upgrade", "--reconcile"])
        #expect(listener.wasContacted())
        #expect(reconcile.status == 3, "\(reconcile.stdout) \(reconcile.stderr)")
    }

    @Test(.enabled(if: ExternalTools.python3, ExternalTools.python3Reason))
    func aDamagedJournalIsAnErrorNotNothingPending() async throws {
        let (vaultURL, keyhaven) = try await Self.newVault()
        do {
            let vault = try Vault.open(at: vaultURL, masterPassword: "policy master", allowInsecureKDF: true)
            let id = try vault.add(CredentialContent(services: [.init("example.com")], user: "ada", password: "pw1"))
            try vault.beginUpgrade(
                UpgradeJournalEntry(
                    credentialID: id,
                    kind: .strongPassword,
                    service: "example.com",
                    endpoint: "https://example.com/amp",
                    requestId: "r",
                    oldPassword: "pw1",
                    newPassword: "Fresh-Strong-Password-1",
                    started: Date()
                )
            )
            try vault.close()
        }
        // Damage the sealed entry the way a bad disk would.
        let damage = Process()
        damage.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        damage.arguments = [
            "python3", "-c",
            "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute(\"UPDATE upgradeJournal SET sealed=x'00112233'\"); c.commit()",
            vaultURL.path,
        ]
        try damage.run()
        damage.waitUntilExit()
        try #require(damage.terminationStatus == 0)

        let reconcile = try await keyhaven.runDetached(["upgrade", "--reconcile"])
        #expect(reconcile.status == 1, "\(reconcile.stdout) \(reconcile.stderr)")
        #expect(!reconcile.stdout.contains("No upgrade is pending"))
        #expect(reconcile.stderr.contains("upgrade journal cannot be read"))
        let list = try await keyhaven.runDetached(["list"])
        #expect(list.status == 0)
        #expect(list.stderr.contains("upgrade journal cannot be read"))
    }
}
