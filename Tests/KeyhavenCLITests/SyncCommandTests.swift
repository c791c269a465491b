import Foundation
import KeyhavenTesting
import Testing

@testable import KeyhavenCLI

/// `keyhaven sync enable|now|status` as processes, against `keyhaven sync serve` as a process.
@Suite(.offCooperativePool)
struct SyncCommandTests {
    /// `keyhaven sync serve` on a free loopback port with its data in `directory`; its URL.
    static func startServer(_ keyhaven: CommandRunner, in directory: URL) async throws -> (Process, String) {
        let process = Process()
        process.executableURL = keyhaven.executable
        process.arguments = [
            "sync", "serve", "--port", "0", "--database", directory.appendingPathComponent("sync.sqlite").path,
        ]
        process.environment = keyhaven.environment
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
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
        try #require(port > 0, "keyhaven sync serve did not start")
        return (process, "http://127.0.0.1:\(port)")
    }

    struct Status: Decodable {
        var enabled: Bool
        var server: String?
        var account: String?
        var deviceID: String?
        var deviceName: String?
        var pending: Int
        var conflicts: Int
        var lastSync: String?
    }

    struct Report: Decodable {
        var pushed: Int
        var pulled: Int
        var status: Status
    }

    @Test func enableSyncAndStatusThroughTheCommandLine() async throws {
        let directory = try TemporaryDirectory.make()
        var environment = IsolatedEnvironment.make(in: directory, runtime: directory.appendingPathComponent("run"))
        environment["KEYHAVEN_PASSWORD"] = "sync master 7f3q gravel lantern"
        let keyhaven = CommandRunner.keyhaven(environment: environment)
        #expect(try await keyhaven.runDetached(["init", "--scrypt-log-n", "10", "--insecure-kdf"]).status == 0)
        for user in ["ada", "bob"] {
            let added = try await keyhaven.runDetached(
                ["add", "--service", "mail.example", "--user", user, "--password", "pw-\(user)"]
            )
            #expect(added.status == 0, "\(added.stderr)")
        }
        let (server, url) = try await Self.startServer(keyhaven, in: directory)
        defer { if server.isRunning { server.terminate() } }

        let help = try await keyhaven.runDetached(["sync", "--help"])
        for subcommand in ["enable", "now", "status", "serve"] { #expect(help.stdout.contains(subcommand)) }
        let off = try await keyhaven.runDetached(["sync", "status", "--json"])
        #expect(try JSONDecoder().decode(Status.self, from: Data(off.stdout.utf8)).enabled == false)
        let early = try await keyhaven.runDetached(["sync", "now"])
        #expect(early.status == 1 && early.stderr.contains("sync is off"), "\(early.stderr)")

        let enabled = try await keyhaven.runDetached(["sync", "enable", "--server", url, "--name", "laptop", "--json"])
        #expect(enabled.status == 0, "\(enabled.stderr)")
        let status = try JSONDecoder().decode(Status.self, from: Data(enabled.stdout.utf8))
        #expect(status.enabled && status.server == url && status.deviceName == "laptop" && status.pending == 0)
        #expect(status.account?.count == 32 && status.lastSync != nil)
        let again = try await keyhaven.runDetached(["sync", "enable", "--server", url])
        #expect(again.status == 1 && again.stderr.contains("already on"), "\(again.stderr)")

        #expect(try await keyhaven.runDetached(["edit", "mail.example/ada", "--password", "new-pw"]).status == 0)
        let pending = try await keyhaven.runDetached(["sync", "status"])
        #expect(pending.stdout.contains("Pending: 1 item;"), "\(pending.stdout)")
        let synced = try await keyhaven.runDetached(["sync", "now", "--json"])
        #expect(synced.status == 0, "\(synced.stderr)")
        let report = try JSONDecoder().decode(Report.self, from: Data(synced.stdout.utf8))
        #expect(report.pushed == 1 && report.status.pending == 0)

        // The server gone: the sync fails at once, the edit stays pending.
        server.terminate()
        server.waitUntilExit()
        #expect(try await keyhaven.runDetached(["edit", "mail.example/bob", "--notes", "offline"]).status == 0)
        let started = ContinuousClock.now
        let offline = try await keyhaven.runDetached(["sync", "now"])
        #expect(ContinuousClock.now - started < .seconds(10))
        #expect(offline.status == 1 && offline.stderr.contains("1 change stays pending"), "\(offline.stderr)")
        let still = try await keyhaven.runDetached(["sync", "status", "--json"])
        #expect(try JSONDecoder().decode(Status.self, from: Data(still.stdout.utf8)).pending == 1)

        // Off again: it says what it does and asks; only a yes removes the state.
        let declined = try await keyhaven.runDetached(["sync", "disable"], stdin: "n\n")
        #expect(declined.status == 1 && declined.stderr.contains("keeps account"), "\(declined.stderr)")
        #expect(declined.stderr.contains("1 pending change will not be sent"), "\(declined.stderr)")
        let kept = try await keyhaven.runDetached(["sync", "status", "--json"])
        #expect(try JSONDecoder().decode(Status.self, from: Data(kept.stdout.utf8)).enabled)
        let disabled = try await keyhaven.runDetached(["sync", "disable"], stdin: "y\n")
        #expect(disabled.status == 0, "\(disabled.stderr)")
        #expect(disabled.stdout.contains("Sync is off") && disabled.stdout.contains("keyhaven device revoke"))
        let gone = try await keyhaven.runDetached(["sync", "status", "--json"])
        #expect(try JSONDecoder().decode(Status.self, from: Data(gone.stdout.utf8)).enabled == false)
        let twice = try await keyhaven.runDetached(["sync", "disable", "--yes", "--json"])
        #expect(twice.status == 1 && twice.stderr.contains("sync is off"), "\(twice.stderr)")
        let list = try await keyhaven.runDetached(["list"])
        #expect(list.stdout.contains("ada") && list.stdout.contains("bob"), "the credentials stay")
    }

    @Test func theDefaultDeviceNameFitsTheServersLimits() {
        #expect(SyncEnable.deviceName("  laptop \n") == "laptop")
        #expect(SyncEnable.deviceName(String(repeating: "a", count: 150)).count == 100)
        let wide = SyncEnable.deviceName(String(repeating: "é", count: 150))  // 2 bytes each
        #expect(wide.count == 100 && wide.utf8.count == 200)
        let wider = SyncEnable.deviceName(String(repeating: "€", count: 150))  // 3 bytes each
        #expect(wider.utf8.count <= 200 && wider.count == 66)
        #expect(SyncEnable.deviceName(" ") == "this device")
        #expect(!SyncEnable.hostName().isEmpty)
    }

    @Test func anUnlockedAgentSyncsWithoutThePassword() async throws {
        let directory = try TemporaryDirectory.make()
        let environment = IsolatedEnvironment.make(in: directory, runtime: directory.appendingPathComponent("run"))
        let keyhaven = CommandRunner.keyhaven(environment: environment)
        let password = ["KEYHAVEN_PASSWORD": "sync master 7f3q gravel lantern"]
        #expect(
            try await keyhaven.runDetached(["init", "--scrypt-log-n", "10"], extraEnvironment: password).status == 0
        )
        let added = try await keyhaven.runDetached(
            ["add", "--service", "mail.example", "--user", "ada", "--password", "pw-ada"],
            extraEnvironment: password
        )
        #expect(added.status == 0, "\(added.stderr)")
        let (server, url) = try await Self.startServer(keyhaven, in: directory)
        defer { if server.isRunning { server.terminate() } }
        let agent = Process()
        agent.executableURL = keyhaven.executable
        agent.arguments = ["agent", "--idle-lock", "1h"]
        agent.environment = environment
        agent.standardError = FileHandle.nullDevice
        try agent.run()
        defer {
            agent.terminate()
            agent.waitUntilExit()
        }
        let socket = directory.appendingPathComponent("run/keyhaven/agent.sock").path
        for _ in 0..<100 where !FileManager.default.fileExists(atPath: socket) {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(try await keyhaven.runDetached(["unlock"], extraEnvironment: password).status == 0)

        // No password from here on: the commands are typed requests the agent's session answers.
        let enabled = try await keyhaven.runDetached(["sync", "enable", "--server", url, "--name", "agent", "--json"])
        #expect(enabled.status == 0, "\(enabled.stderr)")
        #expect(try JSONDecoder().decode(Status.self, from: Data(enabled.stdout.utf8)).deviceName == "agent")
        #expect(try await keyhaven.runDetached(["edit", "mail.example/ada", "--notes", "via the agent"]).status == 0)
        // A manual sync waits for the background one that may run, rather than failing `busy`;
        // the background sync may have sent the edit already.
        let synced = try await keyhaven.runDetached(["sync", "now", "--json"])
        #expect(synced.status == 0, "\(synced.stderr)")
        #expect(try JSONDecoder().decode(Report.self, from: Data(synced.stdout.utf8)).pushed <= 1)
        let status = try await keyhaven.runDetached(["sync", "status", "--json"])
        #expect(try JSONDecoder().decode(Status.self, from: Data(status.stdout.utf8)).pending == 0)

        // The agent syncs in the background: an edit leaves without `sync now`.
        #expect(
            try await keyhaven.runDetached(["edit", "mail.example/ada", "--notes", "in the background"]).status == 0
        )
        let deadline = ContinuousClock.now + .seconds(20)
        var pending = 1
        while pending > 0, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(200))
            let polled = try await keyhaven.runDetached(["sync", "status", "--json"])
            pending = try JSONDecoder().decode(Status.self, from: Data(polled.stdout.utf8)).pending
        }
        #expect(pending == 0, "the background sync sent the edit")
        struct AgentStatus: Decodable {
            struct Sync: Decodable {
                var phase: String
                var lastSync: String?
                var lastError: String?
            }
            var sync: Sync?
        }
        // The loop may still be ending its sync (its state is set after the vault's): poll.
        var background: AgentStatus.Sync?
        let waiting = ContinuousClock.now + .seconds(20)
        repeat {
            let agentStatus = try await keyhaven.runDetached(["agent", "status", "--json"])
            background = try JSONDecoder().decode(AgentStatus.self, from: Data(agentStatus.stdout.utf8)).sync
            if background?.phase == "waiting" { break }
            try await Task.sleep(for: .milliseconds(200))
        } while ContinuousClock.now < waiting
        #expect(background?.phase == "waiting" && background?.lastSync != nil && background?.lastError == nil)
        let agentText = try await keyhaven.runDetached(["agent", "status"])
        #expect(agentText.stdout.contains("Background sync: waiting for changes"), "\(agentText.stdout)")
        // Without the agent, the vault needs the password: the answers above were the agent's.
        let local = try await keyhaven.runDetached(["sync", "status"], extraEnvironment: ["KEYHAVEN_NO_AGENT": "1"])
        #expect(local.status != 0)
        #expect(try await keyhaven.runDetached(["agent", "stop"]).status == 0)
    }
}
