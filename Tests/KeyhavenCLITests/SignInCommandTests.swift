import Foundation
import KeyhavenTesting
import ShinyService
import Testing
import Vault

/// The Sign in with Keyhaven commands end to end, as an operator and a person would run them:
/// `keyhaven idp team/service/user/keys/outbox`, `keyhaven idp serve` as a process, `keyhaven idp
/// login`, `keyhaven upgrade --to sign-in`, `keyhaven idp services`.
struct SignInCommandTests {
    /// Starts `keyhaven idp serve --port PORT` (0: a free one) and returns it with the port it printed.
    static func serve(
        _ keyhaven: CommandRunner,
        issuer: String,
        port: Int = 0,
        extra: [String] = []
    ) async throws -> (Process, Int) {
        try await CommandRunner.detached {
            let process = Process()
            process.executableURL = keyhaven.executable
            process.arguments =
                ["idp", "serve", "--port", String(port), "--issuer", issuer, "--allow-insecure-urls"] + extra
            process.environment = keyhaven.environment
            let errors = Pipe()
            process.standardError = errors
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            var text = ""
            let deadline = Date().addingTimeInterval(30)
            while Date() < deadline {
                let chunk = errors.fileHandleForReading.availableData
                text += String(decoding: chunk, as: UTF8.self)
                if let range = text.range(of: #"http://127\.0\.0\.1:[0-9]+"#, options: .regularExpression),
                    let port = Int(text[range].split(separator: ":").last!)
                {
                    return (process, port)
                }
                if chunk.isEmpty && !process.isRunning { break }
            }
            process.terminate()
            throw CommandError(message: "keyhaven idp serve did not start: \(text)")
        }
    }

    struct CommandError: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    /// GET `url` with python's urllib (installed by the test dependencies); the body.
    static func fetch(_ url: String) async throws -> String {
        try await CommandRunner(executable: URL(fileURLWithPath: "/usr/bin/env")).runDetached([
            "python3", "-c", "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1]).read().decode())",
            url,
        ]).stdout
    }

    static let postgresURL = ProcessInfo.processInfo.environment["KEYHAVEN_TEST_POSTGRES_URL"]

    /// `--database postgres://…` from the command line: admin commands and `idp serve` on one
    /// PostgreSQL database (a fresh one, created with `psql`).
    @Test(
        .enabled(if: postgresURL != nil, "set KEYHAVEN_TEST_POSTGRES_URL (scripts/test.sh does)"),
        .enabled(if: ExternalTools.python3, ExternalTools.python3Reason),
        .timeLimit(.minutes(2))
    )
    func adminAndServeOnPostgres() async throws {
        let base = try #require(Self.postgresURL)
        let name = "kh_cli_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(12)
        let created = try await CommandRunner(executable: URL(fileURLWithPath: "/usr/bin/env"))
            .runDetached(["psql", base, "-v", "ON_ERROR_STOP=1", "-q", "-c", "CREATE DATABASE \(name)"])
        #expect(created.status == 0, "\(created.stderr)")
        var components = try #require(URLComponents(string: base))
        components.path = "/" + name
        let database = try #require(components.string)
        var environment = ProcessInfo.processInfo.environment
        environment.removeValue(forKey: "KEYHAVEN_IDP_DATABASE")
        environment.removeValue(forKey: "KEYHAVEN_IDP_SECRETS_KEY_FILE")
        // PostgreSQL has no folder of its own: the secrets key is made in Keyhaven's data folder.
        let data = try TemporaryDirectory.make()
        environment["XDG_DATA_HOME"] = data.path
        let keyhaven = CommandRunner.keyhaven(environment: environment)

        let team = try await keyhaven.runDetached(["idp", "team", "add", "Postgres Inc", "--database", database])
        #expect(team.status == 0, "\(team.stderr)")
        let keyFile = data.appendingPathComponent("keyhaven/idp-postgres.secrets-key")
        let mode = try FileManager.default.attributesOfItem(atPath: keyFile.path)[.posixPermissions] as? NSNumber
        #expect(mode?.intValue == 0o600)
        let teamId = team.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let listed = try await keyhaven.runDetached(["idp", "team", "list", "--database", database])
        #expect(listed.stdout.contains(teamId) && listed.stdout.contains("Postgres Inc"), "\(listed.stdout)")
        let rotated = try await keyhaven.runDetached(["idp", "keys", "rotate", "--database", database])
        #expect(rotated.status == 0, "\(rotated.stderr)")

        let (provider, port) = try await Self.serve(
            keyhaven,
            issuer: "https://idp.postgres.test",
            extra: ["--database", database]
        )
        let keys = try await Self.fetch("http://127.0.0.1:\(port)/auth/keys")
        let jwks = try JSONSerialization.jsonObject(with: Data(keys.utf8)) as? [String: [[String: Any]]]
        #expect(jwks?["keys"]?.count == 2, "\(keys)")
        let discovery = try await Self.fetch("http://127.0.0.1:\(port)/.well-known/openid-configuration")
        #expect(discovery.contains(#""issuer":"https://idp.postgres.test""#), "\(discovery)")
        provider.terminate()
        try await CommandRunner.detached { provider.waitUntilExit() }
        #expect(provider.terminationReason == .exit && provider.terminationStatus == 0)

        // Rotation on PostgreSQL; an instance without the key file is refused and creates none.
        let resealed = try await keyhaven.runDetached(["idp", "secrets", "rotate", "--database", database])
        #expect(
            resealed.status == 0 && resealed.stdout.contains("re-sealed 3 secrets"),
            "\(resealed.stdout)\(resealed.stderr)"
        )
        #expect(
            try await keyhaven.runDetached(["idp", "team", "list", "--database", database]).stdout.contains(teamId)
        )
        var elsewhere = environment
        elsewhere["XDG_DATA_HOME"] = try TemporaryDirectory.make().path
        let other = try await CommandRunner.keyhaven(environment: elsewhere)
            .runDetached(["idp", "team", "list", "--database", database])
        #expect(other.status == 1 && other.stderr.contains("sealed with another secrets key"), "\(other.stderr)")
        #expect(
            !FileManager.default.fileExists(atPath: elsewhere["XDG_DATA_HOME"]! + "/keyhaven/idp-postgres.secrets-key")
        )
    }

    /// `--secrets-key-file`: authenticator secrets are sealed in the database; a bad key file is a
    /// clear error.
    @Test(.enabled(if: ExternalTools.python3, ExternalTools.python3Reason))
    func aSecretsKeyFileSealsAuthenticatorSecrets() async throws {
        let directory = try TemporaryDirectory.make()
        let database = directory.appendingPathComponent("idp.sqlite").path
        let keyFile = directory.appendingPathComponent("idp-secrets.key")
        try Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
            .write(to: keyFile, atomically: true, encoding: .utf8)
        var environment = ProcessInfo.processInfo.environment
        environment["KEYHAVEN_IDP_SCRYPT_LOG_N"] = "10"
        environment["KEYHAVEN_IDP_USER_PASSWORD"] = "grace's provider password"
        let keyhaven = CommandRunner.keyhaven(environment: environment)

        let added = try await keyhaven.runDetached([
            "idp", "user", "add", "grace@example.com", "--totp", "--database", database, "--secrets-key-file",
            keyFile.path,
        ])
        #expect(added.status == 0, "\(added.stderr)")
        let secret = try #require(
            added.stdout.split(separator: " ").last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        )
        #expect(secret.count >= 32)
        let stored = try await CommandRunner(executable: URL(fileURLWithPath: "/usr/bin/env")).runDetached([
            "python3", "-c",
            "import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT totp_secret FROM users').fetchone()[0])",
            database,
        ])
        #expect(stored.stdout.hasPrefix("sealed:v1:"), "\(stored.stdout) \(stored.stderr)")
        #expect(!stored.stdout.contains(secret))

        try "not a key".write(to: keyFile, atomically: true, encoding: .utf8)
        let bad = try await keyhaven.runDetached([
            "idp", "team", "list", "--database", database, "--secrets-key-file", keyFile.path,
        ])
        #expect(bad.status == 1)
        #expect(bad.stderr.contains("must hold 32 bytes in base64"), "\(bad.stderr)")
        let missing = try await keyhaven.runDetached([
            "idp", "team", "list", "--database", database, "--secrets-key-file",
            directory.appendingPathComponent("nope").path,
        ])
        #expect(missing.status == 1 && missing.stderr.contains("cannot read the secrets key file"), "\(missing.stderr)")
    }

    /// `KEYHAVEN_IDP_SCRYPT_LOG_N` is for tests: out of range it is refused, below the default every
    /// command says it weakens new password hashes, at the default it is silent.
    @Test func aCheaperPasswordHashCostIsBoundedAndNeverSilent() async throws {
        let directory = try TemporaryDirectory.make()
        var environment = ProcessInfo.processInfo.environment
        environment["KEYHAVEN_IDP_DATABASE"] = directory.appendingPathComponent("idp.sqlite").path
        for (value, status, says) in [
            ("4", Int32(1), "must be a whole number from 10 to 22"),
            ("ten", 1, "must be a whole number from 10 to 22"),
            ("10", 0, "cheaper to crack than the default 2^15"),
        ] {
            environment["KEYHAVEN_IDP_SCRYPT_LOG_N"] = value
            let listed = try await CommandRunner.keyhaven(environment: environment).runDetached(["idp", "team", "list"])
            #expect(listed.status == status, "\(value): \(listed.stderr)")
            #expect(listed.stderr.contains(says), "\(value): \(listed.stderr)")
        }
        environment["KEYHAVEN_IDP_SCRYPT_LOG_N"] = "15"
        let standard = try await CommandRunner.keyhaven(environment: environment).runDetached(["idp", "team", "list"])
        #expect(standard.status == 0 && !standard.stderr.contains("KEYHAVEN_IDP_SCRYPT_LOG_N"), "\(standard.stderr)")
    }

    @Test(.timeLimit(.minutes(3))) func operatorAndPersonCommands() async throws {
        let directory = try TemporaryDirectory.make()
        var environment = ProcessInfo.processInfo.environment
        environment["KEYHAVEN_IDP_DATABASE"] = directory.appendingPathComponent("idp.sqlite").path
        environment["KEYHAVEN_IDP_SCRYPT_LOG_N"] = "10"
        environment["KEYHAVEN_IDP_USER_PASSWORD"] = "ada's provider password"
        environment["KEYHAVEN_IDP_PASSWORD"] = "ada's provider password"
        environment["KEYHAVEN_VAULT"] = directory.appendingPathComponent("vault.sqlite").path
        environment["KEYHAVEN_PASSWORD"] = "sign-in master"
        // The test vaults use scrypt N=2^10 (init --insecure-kdf); every command opts in to open them.
        environment["KEYHAVEN_INSECURE_KDF"] = "1"
        let keyhaven = CommandRunner.keyhaven(environment: environment)

        // The operator registers a team, its key, the service and a person.
        let team = try await keyhaven.runDetached(["idp", "team", "add", "Shiny Inc"])
        #expect(team.status == 0, "\(team.stderr)")
        let teamId = team.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let p8 = directory.appendingPathComponent("team.p8")
        let key = try await keyhaven.runDetached(["idp", "team", "key", "create", teamId, "--output", p8.path])
        let keyId = key.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(key.status == 0 && keyId.count == 10)

        let shiny = try Shiny(configuration: .init(scryptLogN: 10))
        let (origin, server) = try await shiny.start()
        defer { server.cancel() }
        let register = [
            "idp", "service", "add", "com.example.shiny", "--team", teamId, "--name", "shiny",
            "--redirect-uri", origin + Shiny.signInCallbackPath, "--notification-url", origin + Shiny.notificationPath,
        ]
        let refused = try await keyhaven.runDetached(register)
        #expect(refused.status == 1 && refused.stderr.contains("must use https"))
        #expect(try await keyhaven.runDetached(register + ["--allow-insecure-urls"]).status == 0)
        let user = try await keyhaven.runDetached(["idp", "user", "add", "ada@example.com", "--first-name", "Ada"])
        #expect(user.status == 0, "\(user.stderr)")

        // The issuer is the provider's own URL: `keyhaven idp login` accepts nothing else.
        let providerPort = try LoopbackPort.unused()
        let providerURL = "http://127.0.0.1:\(providerPort)"
        let (provider, _) = try await Self.serve(keyhaven, issuer: providerURL, port: providerPort)
        defer { provider.terminate() }
        try shiny.enableSignIn(
            ShinySignInConfiguration(
                issuer: providerURL,
                providerURL: providerURL,
                clientId: "com.example.shiny",
                teamId: teamId,
                keyId: keyId,
                privateKeyPEM: try String(contentsOf: p8, encoding: .utf8),
                redirectURI: origin + Shiny.signInCallbackPath
            )
        )

        // The person: a vault with shiny's account, Keyhaven signed in to the provider, the upgrade.
        try shiny.createAccount(user: "ada", password: "Welcome12345")
        #expect(try await keyhaven.runDetached(["init", "--scrypt-log-n", "10", "--insecure-kdf"]).status == 0)
        #expect(
            try await keyhaven.runDetached(["add", "--service", origin, "--user", "ada", "--password", "Welcome12345"])
                .status == 0
        )
        // Another URL for the same server is not its issuer: refused before the password is asked for.
        let elsewhere = providerURL.replacingOccurrences(of: "127.0.0.1", with: "localhost")
        let refusedLogin = try await keyhaven.runDetached(["idp", "login", elsewhere, "--email", "ada@example.com"])
        #expect(
            refusedLogin.status == 1 && refusedLogin.stderr.contains("names another issuer"),
            "\(refusedLogin.stderr)"
        )
        let login = try await keyhaven.runDetached(["idp", "login", providerURL, "--email", "ada@example.com"])
        #expect(login.status == 0, "\(login.stderr)")
        #expect(login.stdout.contains("Signed in to \(providerURL) as ada@example.com."))

        let upgrade = try await keyhaven.runDetached(["upgrade", origin, "--to", "sign-in", "--email", "hide"])
        #expect(upgrade.status == 0, "\(upgrade.stdout) \(upgrade.stderr)")
        #expect(upgrade.stderr.contains("switching \(origin) to Sign in with Keyhaven"), "\(upgrade.stderr)")
        #expect(upgrade.stderr.contains("as shiny (com.example.shiny)"), "\(upgrade.stderr)")
        #expect(upgrade.stdout.contains("now signs in with Keyhaven"))
        #expect(upgrade.stderr.contains("private relay address"))
        #expect(try !shiny.signIn(user: "ada", password: "Welcome12345"))

        let vault = try Vault.open(
            at: directory.appendingPathComponent("vault.sqlite"),
            masterPassword: "sign-in master",
            allowInsecureKDF: true
        )
        let record = try #require(try vault.credentials(forService: origin).credentials.first)
        #expect(record.password == nil)
        #expect(record.content.signIn?.issuer == providerURL)
        #expect(record.content.signIn?.subject == (try shiny.linkedSubject(user: "ada")))

        // The person's services; stopping one reaches shiny as a notification.
        let services = try await keyhaven.runDetached(["idp", "services", "--json"])
        let listed = try #require(
            try JSONSerialization.jsonObject(with: Data(services.stdout.utf8)) as? [[String: Any]]
        )
        #expect(listed.first?["clientId"] as? String == "com.example.shiny")
        #expect(listed.first?["hidesEmail"] as? Bool == true)
        let stopped = try await keyhaven.runDetached(["idp", "services", "--stop-using", "com.example.shiny"])
        #expect(stopped.status == 0 && stopped.stdout.contains("revoked"), "\(stopped.stderr)")
        let deadline = ContinuousClock.now + .seconds(20)
        while shiny.receivedNotifications.isEmpty && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(shiny.receivedNotifications.map(\.type) == ["consent-revoked"])
        let outbox = try await keyhaven.runDetached(["idp", "outbox", "--json"])
        #expect(outbox.stdout.contains(#""delivered":1"#), "\(outbox.stdout)")

        // Key rotation from the command line.
        let rotated = try await keyhaven.runDetached(["idp", "keys", "rotate"])
        let keys = try await keyhaven.runDetached(["idp", "keys", "list"])
        #expect(keys.lines.count == 2 && keys.lines.first == rotated.stdout.trimmingCharacters(in: .newlines))
        let again = try await keyhaven.runDetached(["upgrade", origin, "--to", "sign-in", "--email", "hide"])
        #expect(again.status == 1 && again.stderr.contains("already signs in with Keyhaven"))
    }
}
