import AccountModification
import Foundation
import KeyhavenTesting
import ShinyService
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `keyhaven demo` (the README's main command) and `keyhaven serve` (the local API for apps).
struct DemoAndServeTests {
    @Test func theDemoRunsEveryCheck() async throws {
        let result = try await CommandRunner.keyhaven().runDetached(["demo"])
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(result.stdout.contains("All checks passed."))
        #expect(result.stdout.contains("✓ alice's new password signs in to shiny"))
        #expect(result.stdout.contains("the demo entered bob's authenticator code: accepted"))
        // It ends with the web app on its vault (and, with no terminal, does not wait).
        #expect(result.stdout.contains("▶ keyhaven ui"))
        #expect(result.stdout.contains("/launch?secret="))
        #expect(result.stdout.contains("✓ bob's new password (with his code) signs in"))
        #expect(result.stdout.contains("✓ carol now signs in to shiny with Keyhaven"))
        #expect(result.stdout.contains("✓ shiny linked carol's account to the same sub"))
        #expect(result.stdout.contains("shiny received the server-to-server notification: consent-revoked"))
        #expect(!result.stdout.contains("✗"))
        // shiny ran as a process of its own, the one built next to keyhaven, and is gone.
        let pid = try #require(Self.shinyProcess(in: result.stdout))
        let beside = CommandRunner.keyhaven().executable.deletingLastPathComponent().appendingPathComponent("shiny")
        #expect(URL(fileURLWithPath: pid.path).resolvingSymlinksInPath() == beside.resolvingSymlinksInPath())
        #expect(!Self.isRunning(pid.id))
    }

    /// The shiny the demo started: `▶ shiny, … running at ORIGIN (PATH, pid N)`.
    static func shinyProcess(in output: String) -> (path: String, id: Int32)? {
        guard let match = output.firstMatch(of: #/is running at http://127\.0\.0\.1:\d+ \((.+), pid (\d+)\)/#)
        else { return nil }
        return Int32(match.2).map { (String(match.1), $0) }
    }

    static func isRunning(_ pid: Int32) -> Bool {
        kill(pid, 0) == 0 || errno != ESRCH
    }

    @Test func theDemoSaysHowToBuildShinyWhenItIsMissing() async throws {
        // keyhaven alone in a folder (a hard link: the same binary, another place).
        let keyhaven = CommandRunner.keyhaven().executable
        let folder = keyhaven.deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("demo-without-shiny-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let alone = folder.appendingPathComponent("keyhaven")
        do {
            try FileManager.default.linkItem(at: keyhaven, to: alone)
        } catch {
            try FileManager.default.copyItem(at: keyhaven, to: alone)
        }
        var environment = ProcessInfo.processInfo.environment
        environment["KEYHAVEN_SHINY"] = nil
        let missing = try await CommandRunner(executable: alone, environment: environment).runDetached(["demo"])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("swift build --product shiny"), "\(missing.stderr)")
        #expect(missing.stderr.contains(folder.lastPathComponent))
        #expect(!missing.stdout.contains("▶"))  // nothing started

        let notExecutable = try await CommandRunner.keyhaven()
            .runDetached(["demo"], extraEnvironment: ["KEYHAVEN_SHINY": folder.appendingPathComponent("nothing").path])
        #expect(notExecutable.status == 1)
        #expect(notExecutable.stderr.contains("KEYHAVEN_SHINY="), "\(notExecutable.stderr)")
        #expect(notExecutable.stderr.contains("swift build --product shiny"))
    }

    @Test func theDemoStopsShinyWhenItFails() async throws {
        // A "shiny" that says it listens where nothing does: the demo's first call fails.
        let folder = try TemporaryDirectory.make()
        let script = folder.appendingPathComponent("shiny")
        let pidFile = folder.appendingPathComponent("pid")
        try Data(
            """
            #!/bin/sh
            echo $$ > "\(pidFile.path)"
            echo "shiny listening on http://127.0.0.1:1"
            exec sleep 300
            """.utf8
        ).write(to: script)
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: script.path)
        let result = try await CommandRunner.keyhaven().runDetached(
            ["demo"],
            extraEnvironment: ["KEYHAVEN_SHINY": script.path]
        )
        #expect(result.status == 1)
        #expect(result.stderr.contains("could not reach shiny at http://127.0.0.1:1"), "\(result.stderr)")
        let pid = try #require(
            Int32(
                String(decoding: try Data(contentsOf: pidFile), as: UTF8.self).trimmingCharacters(
                    in: .whitespacesAndNewlines
                )
            )
        )
        #expect(!Self.isRunning(pid))

        // One that stops before it says where it listens.
        let silent = try await CommandRunner.keyhaven().runDetached(
            ["demo"],
            extraEnvironment: ["KEYHAVEN_SHINY": "/bin/false"]
        )
        #expect(silent.status == 1)
        #expect(silent.stderr.contains("shiny (/bin/false) did not start"), "\(silent.stderr)")
    }

    @Test(.enabled(if: ExternalTools.pythonClients, ExternalTools.pythonClientsReason))
    func serveAnswersAnAppsRequest() async throws {
        let shiny = try Shiny(configuration: .init(scryptLogN: 10))
        let (origin, server) = try await shiny.start()
        defer { server.cancel() }
        try shiny.createAccount(user: "erin", password: "Password1234")

        let directory = try TemporaryDirectory.make()
        var environment = ProcessInfo.processInfo.environment
        environment["KEYHAVEN_VAULT"] = directory.appendingPathComponent("vault.sqlite").path
        environment["KEYHAVEN_PASSWORD"] = "serve master"
        // The test vaults use scrypt N=2^10 (init --insecure-kdf); every command opts in to open them.
        environment["KEYHAVEN_INSECURE_KDF"] = "1"
        let keyhaven = CommandRunner.keyhaven(environment: environment)
        #expect(try await keyhaven.runDetached(["init", "--scrypt-log-n", "10", "--insecure-kdf"]).status == 0)
        #expect(
            try await keyhaven.runDetached(["add", "--service", origin, "--user", "erin", "--password", "Password1234"])
                .status == 0
        )

        let tokenFile = directory.appendingPathComponent("token")
        let process = Process()
        process.executableURL = keyhaven.executable
        process.arguments = ["serve", "--port", "0", "--token-file", tokenFile.path]
        process.environment = environment
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        let port = try await CommandRunner.detached { () -> Int in
            var text = ""
            while process.isRunning {
                text += String(decoding: errors.fileHandleForReading.availableData, as: UTF8.self)
                if let range = text.range(of: #"127\.0\.0\.1:(\d+) "#, options: .regularExpression) {
                    return Int(text[range].dropFirst("127.0.0.1:".count).dropLast())!
                }
            }
            return 0
        }
        #expect(port > 0)
        let attributes = try FileManager.default.attributesOfItem(atPath: tokenFile.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let token = try String(contentsOf: tokenFile, encoding: .utf8)

        // The app signs in to shiny itself and asks Keyhaven to upgrade the account.
        let script = """
            import json, sys, requests
            shiny, api, token = sys.argv[1], sys.argv[2], sys.argv[3]
            session = requests.post(shiny + "/api/signin", json={"user": "erin", "password": "Password1234"}).json()["token"]
            body = {"type": "change-password", "user": "erin", "serviceIdentifier": shiny, "userInfo": {"sessionToken": session}}
            denied = requests.post(api + "/v1/requests", json=body, headers={"Authorization": "Bearer wrong"})
            assert denied.status_code == 401, denied.status_code
            # A page that rebound its name to 127.0.0.1 still sends its own Host; a page elsewhere sends its Origin.
            rebound = requests.post(api + "/v1/requests", json=body, headers={"Authorization": "Bearer " + token, "Host": "attacker.example"})
            assert rebound.status_code == 403, rebound.status_code
            cross = requests.post(api + "/v1/requests", json=body, headers={"Authorization": "Bearer " + token, "Origin": "https://attacker.example"})
            assert cross.status_code == 403, cross.status_code
            result = requests.post(api + "/v1/requests", json=body, headers={"Authorization": "Bearer " + token}, timeout=30)
            print(json.dumps(result.json()))
            """
        let app = try await CommandRunner(executable: URL(fileURLWithPath: "/usr/bin/env"))
            .runDetached(["python3", "-c", script, origin, "http://127.0.0.1:\(port)", token])
        #expect(app.status == 0, "\(app.stderr)")
        let result = try JSONDecoder().decode(InAppResult.self, from: Data(app.stdout.utf8))
        #expect(result.status == .completed)
        #expect(result.credentialUpdated)
        process.terminate()
        try await CommandRunner.detached { process.waitUntilExit() }

        let shown = try await keyhaven.runDetached(["search", origin, "--json"])
        struct Item: Decodable { var id: String }
        let id = try #require(try JSONDecoder().decode([Item].self, from: Data(shown.stdout.utf8)).first?.id)
        let revealed = try await keyhaven.runDetached(["show", id, "--json", "--reveal"])
        struct Shown: Decodable { var password: String? }
        let password = try #require(try JSONDecoder().decode(Shown.self, from: Data(revealed.stdout.utf8)).password)
        #expect(password != "Password1234")
        #expect(try shiny.signIn(user: "erin", password: password))
    }
}
