import Foundation
import KeyhavenTesting
import OneTimeCodes
import Passkeys
import ShinyService
import Testing
import Vault

/// "Never lose a password": `keyhaven upgrade` killed with SIGKILL at every step (fault points are
/// compiled into test builds), then reconciled by the next start. Afterwards the vault must always
/// hold a password that signs in to shiny.
struct UpgradeFaultTests {
    static let points = ["start", "after-generate", "after-journal", "after-response", "after-commit"]

    /// A vault (scrypt N=2^10) with `runs` accounts `userN` on `origin`, each also created on shiny;
    /// the runner for `keyhaven` on it, its file, and the credential ids.
    static func accounts(
        _ runs: Int,
        on shiny: Shiny,
        origin: String
    ) async throws -> (keyhaven: CommandRunner, vaultURL: URL, ids: [CredentialID]) {
        let directory = try TemporaryDirectory.make()
        let vaultURL = directory.appendingPathComponent("vault.sqlite")
        var environment = ProcessInfo.processInfo.environment
        environment["KEYHAVEN_VAULT"] = vaultURL.path
        environment["KEYHAVEN_PASSWORD"] = "fault master"
        // The test vaults use scrypt N=2^10 (init --insecure-kdf); every command opts in to open them.
        environment["KEYHAVEN_INSECURE_KDF"] = "1"
        let keyhaven = CommandRunner.keyhaven(environment: environment)
        #expect(try await keyhaven.runDetached(["init", "--scrypt-log-n", "10", "--insecure-kdf"]).status == 0)
        let vault = try Vault.open(at: vaultURL, masterPassword: "fault master", allowInsecureKDF: true)
        defer { try? vault.close() }
        var ids: [CredentialID] = []
        for run in 0..<runs {
            let password = "Password\(1000 + run)x"
            try shiny.createAccount(user: "user\(run)", password: password)
            ids.append(
                try vault.add(CredentialContent(services: [.init(origin)], user: "user\(run)", password: password))
            )
        }
        return (keyhaven, vaultURL, ids)
    }

    @Test func sigkillAtEveryStepNeverLocksAnyoneOut() async throws {
        let shiny = try Shiny(configuration: .init(scryptLogN: 10))
        let (origin, server) = try await shiny.start()
        defer { server.cancel() }

        let runs = 100
        let (keyhaven, vaultURL, ids) = try await Self.accounts(runs, on: shiny, origin: origin)

        var killed = 0
        var upgraded = 0
        var kept = 0
        var lockouts = 0
        var lost = 0
        for run in 0..<runs {
            let point = Self.points[run % Self.points.count]
            let attempt = try await keyhaven.runDetached(
                ["upgrade", origin, "--user", "user\(run)", "--no-browser", "--no-interaction"],
                extraEnvironment: ["KEYHAVEN_FAULT": point]
            )
            #expect(attempt.signal == 9, "run \(run) at \(point): \(attempt.status) \(attempt.stderr)")
            if attempt.signal == 9 { killed += 1 }
            // The next start settles whatever was left.
            let next = try await keyhaven.runDetached(["upgrade", "--reconcile"])
            #expect(next.status == 0, "run \(run) at \(point): \(next.stdout) \(next.stderr)")

            let vault = try Vault.open(at: vaultURL, masterPassword: "fault master", allowInsecureKDF: true)
            let credential = try vault.credential(ids[run])
            guard let password = credential.password else {
                lost += 1
                continue
            }
            if try shiny.signIn(user: "user\(run)", password: password) {
                if password == "Password\(1000 + run)x" { kept += 1 } else { upgraded += 1 }
            } else {
                lockouts += 1
            }
            #expect(try vault.pendingUpgrades().isEmpty)
            try vault.close()
        }
        print(
            "SIGKILL fault injection: \(runs) runs over \(Self.points.count) steps, \(killed) killed; "
                + "afterwards \(upgraded) upgraded, \(kept) kept the old password, \(lockouts) lockouts, \(lost) lost credentials"
        )
        #expect(killed == runs)
        #expect(lockouts == 0)
        #expect(lost == 0)
        // Kills after the service answered must have kept the new password.
        #expect(upgraded >= runs * 2 / Self.points.count)
    }

    static let passkeyPoints = [
        "start", "after-generate", "after-journal", "after-passkey-journal", "after-response", "after-commit",
    ]

    /// The same for `upgrade --to passkey` (issue 16): shiny links the passkey and retires the
    /// password. After every kill and the reconcile that follows, the account signs in — with the
    /// vault's password, or with the vault's passkey when shiny retired the password — and every
    /// passkey shiny linked is in the vault.
    @Test func sigkillAtEveryStepOfAPasskeyUpgradeLosesNothing() async throws {
        // shiny on `localhost` (an IP address cannot be a passkey's RP ID).
        let shiny = try Shiny(configuration: .init(host: "localhost", scryptLogN: 10))
        let (origin, server) = try await shiny.start()
        defer { server.cancel() }

        let runs = 102
        let (keyhaven, vaultURL, ids) = try await Self.accounts(runs, on: shiny, origin: origin)

        var killed = 0
        var withPasskey = 0
        var kept = 0
        var lockouts = 0
        var lostPasskeys = 0
        for run in 0..<runs {
            let user = "user\(run)"
            let point = Self.passkeyPoints[run % Self.passkeyPoints.count]
            let attempt = try await keyhaven.runDetached(
                ["upgrade", origin, "--user", user, "--to", "passkey", "--no-browser", "--no-interaction"],
                extraEnvironment: ["KEYHAVEN_FAULT": point]
            )
            #expect(attempt.signal == 9, "run \(run) at \(point): \(attempt.status) \(attempt.stderr)")
            if attempt.signal == 9 { killed += 1 }
            let next = try await keyhaven.runDetached(["upgrade", "--reconcile"])
            #expect(next.status == 0, "run \(run) at \(point): \(next.stdout) \(next.stderr)")

            let vault = try Vault.open(at: vaultURL, masterPassword: "fault master", allowInsecureKDF: true)
            let passkeys = try vault.passkeys(rpID: "localhost").filter { $0.userName == user }
            // Every passkey shiny linked is in the vault.
            let linked = try shiny.passkeyCredentialIDs(user: user)
            lostPasskeys += linked.filter { id in !passkeys.contains { $0.credentialID == id } }.count
            if let password = try vault.credential(ids[run]).password, try shiny.signIn(user: user, password: password)
            {
                kept += 1
            } else if try passkeys.contains(where: { try shiny.signIn(user: user, passkey: $0) }) {
                withPasskey += 1
            } else {
                lockouts += 1
            }
            #expect(try vault.pendingUpgrades().isEmpty, "run \(run) at \(point)")
            try vault.close()
        }
        print(
            "SIGKILL fault injection (passkeys): \(runs) runs over \(Self.passkeyPoints.count) steps, \(killed) killed; "
                + "afterwards \(withPasskey) sign in with their passkey, \(kept) with their password, "
                + "\(lockouts) lockouts, \(lostPasskeys) lost passkeys"
        )
        #expect(killed == runs)
        #expect(lockouts == 0)
        #expect(lostPasskeys == 0)
        // Kills after shiny answered must have kept the passkey.
        #expect(withPasskey >= runs * 2 / Self.passkeyPoints.count)
    }
}
