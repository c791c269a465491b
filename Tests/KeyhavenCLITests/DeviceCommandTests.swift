import Foundation
import KeyhavenTesting
import Testing

@testable import KeyhavenCLI

/// `keyhaven sync join` and `keyhaven device approve|list|revoke` as processes, two vaults (a
/// laptop and a phone) against `keyhaven sync serve` as a process.
@Suite(.offCooperativePool)
struct DeviceCommandTests {
    struct Entry: Decodable {
        var id: String
        var name: String
        var created: String
        var approvedBy: String?
        var revoked: String?
        var current: Bool
    }

    struct Approval: Decodable {
        var deviceID: String
        var deviceName: String
        var account: String
    }

    @Test func aPhoneJoinsWithTheCodeTheLaptopApproves() async throws {
        let directory = try TemporaryDirectory.make()
        var environment = IsolatedEnvironment.make(in: directory, runtime: directory.appendingPathComponent("run"))
        environment["KEYHAVEN_PASSWORD"] = "sync master 7f3q gravel lantern"
        environment["KEYHAVEN_NO_AGENT"] = "1"
        let keyhaven = CommandRunner.keyhaven(environment: environment)
        let phoneVault = ["--vault", directory.appendingPathComponent("phone.sqlite").path]
        #expect(try await keyhaven.runDetached(["init", "--scrypt-log-n", "10", "--insecure-kdf"]).status == 0)
        #expect(
            try await keyhaven.runDetached(phoneVault + ["init", "--scrypt-log-n", "10", "--insecure-kdf"]).status == 0
        )
        for user in ["ada", "bob"] {
            let added = try await keyhaven.runDetached(
                ["add", "--service", "mail.example", "--user", user, "--password", "pw-\(user)"]
            )
            #expect(added.status == 0, "\(added.stderr)")
        }
        let own = try await keyhaven.runDetached(
            phoneVault + ["add", "--service", "shop.example", "--user", "carol", "--password", "pw-carol"]
        )
        #expect(own.status == 0, "\(own.stderr)")
        let (server, url) = try await SyncCommandTests.startServer(keyhaven, in: directory)
        defer { if server.isRunning { server.terminate() } }
        let enabled = try await keyhaven.runDetached(["sync", "enable", "--server", url, "--name", "laptop"])
        #expect(enabled.status == 0, "\(enabled.stderr)")

        // The phone asks to join and shows its code; the laptop approves it.
        let join = Process()
        join.executableURL = keyhaven.executable
        join.arguments = phoneVault + ["sync", "join", "--server", url, "--name", "phone", "--timeout", "60", "--json"]
        join.environment = environment
        let (errors, output) = (Pipe(), Pipe())
        join.standardError = errors
        join.standardOutput = output
        try join.run()
        defer { if join.isRunning { join.terminate() } }
        let shown = try await CommandRunner.detached { () -> String in
            var text = ""
            while join.isRunning || !text.isEmpty {
                let data = errors.fileHandleForReading.availableData
                if data.isEmpty && !join.isRunning { break }
                text += String(decoding: data, as: UTF8.self)
                if text.contains("Waiting for approval") { return text }
            }
            return text
        }
        let range = try #require(
            shown.range(of: #"[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}"#, options: .regularExpression),
            "sync join shows its code: \(shown)"
        )
        let code = String(shown[range])
        #expect(shown.contains("on a device already in sync run `keyhaven device approve` and type this code"))

        // The code goes in on standard input, never on the command line (`ps`, shell history).
        let both = try await keyhaven.runDetached(["device", "approve", code, "--code-stdin"])
        #expect(both.status != 0 && both.stderr.contains("either as an argument or with --code-stdin"))
        let empty = try await keyhaven.runDetached(["device", "approve", "--code-stdin"], stdin: "")
        #expect(empty.status == 1 && empty.stderr.contains("standard input has no code line"), "\(empty.stderr)")
        let approved = try await keyhaven.runDetached(
            ["device", "approve", "--code-stdin", "--json"],
            stdin: code.lowercased() + "\n"
        )
        #expect(approved.status == 0, "\(approved.stderr)")
        let approval = try JSONDecoder().decode(Approval.self, from: Data(approved.stdout.utf8))
        #expect(approval.deviceName == "phone" && approval.deviceID.count == 32)

        let joined = try await CommandRunner.detached { () -> (Int32, Data) in
            let data = output.fileHandleForReading.readDataToEndOfFile()
            join.waitUntilExit()
            return (join.terminationStatus, data)
        }
        #expect(joined.0 == 0)
        let status = try JSONDecoder().decode(SyncCommandTests.Status.self, from: joined.1)
        #expect(status.enabled && status.deviceName == "phone" && status.account == approval.account)
        let phoneList = try await keyhaven.runDetached(phoneVault + ["list"])
        for user in ["ada", "bob", "carol"] { #expect(phoneList.stdout.contains(user), "\(phoneList.stdout)") }
        #expect(try await keyhaven.runDetached(["sync", "now"]).status == 0)
        #expect(try await keyhaven.runDetached(["list"]).stdout.contains("carol"))

        // The list, as text and JSON.
        let listed = try await keyhaven.runDetached(["device", "list", "--json"])
        #expect(listed.status == 0, "\(listed.stderr)")
        let devices = try JSONDecoder().decode([Entry].self, from: Data(listed.stdout.utf8))
        #expect(devices.map(\.name).sorted() == ["laptop", "phone"])
        let laptop = try #require(devices.first { $0.current })
        #expect(laptop.name == "laptop" && laptop.approvedBy == nil)
        #expect(devices.first { $0.name == "phone" }?.approvedBy == laptop.id)
        #expect(devices.allSatisfy { $0.revoked == nil })
        let text = try await keyhaven.runDetached(["device", "list"])
        #expect(text.stdout.contains("(this device)") && text.stdout.contains("approved by \(laptop.id)"))

        // Revoking: not this device; asks first; --yes does not.
        let itself = try await keyhaven.runDetached(["device", "revoke", laptop.id, "--yes"])
        #expect(itself.status == 1 && itself.stderr.contains("sync disable"), "\(itself.stderr)")
        let declined = try await keyhaven.runDetached(["device", "revoke", approval.deviceID])
        #expect(declined.status == 1 && declined.stderr.contains("pass --yes"), "\(declined.stderr)")
        let revoked = try await keyhaven.runDetached(["device", "revoke", approval.deviceID, "--yes", "--json"])
        #expect(revoked.status == 0, "\(revoked.stderr)")
        #expect(try JSONDecoder().decode(Entry.self, from: Data(revoked.stdout.utf8)).revoked != nil)
        let refused = try await keyhaven.runDetached(phoneVault + ["sync", "now"])
        #expect(refused.status == 1, "\(refused.stderr)")

        // A code nobody made.
        let unknown = try await keyhaven.runDetached(["device", "approve", "K7QM-2XPA-9FRT-4HDW"])
        #expect(unknown.status == 1 && unknown.stderr.contains("no join request for this code"), "\(unknown.stderr)")
        let typo = try await keyhaven.runDetached(["device", "approve", "K7QM-2XPA-9FRT"])
        #expect(typo.status == 1 && typo.stderr.contains("16 letters and digits"), "\(typo.stderr)")
    }

    @Test func theHelpExplainsJoiningAndRevoking() async throws {
        let keyhaven = CommandRunner.keyhaven()
        /// The help as one line (the parser wraps it to the terminal's width).
        func help(_ arguments: [String]) async throws -> String {
            try await keyhaven.runDetached(arguments + ["--help"]).stdout.split(whereSeparator: \.isWhitespace)
                .joined(separator: " ")
        }
        let device = try await help(["device"])
        for subcommand in ["approve", "list", "revoke"] { #expect(device.contains(subcommand)) }
        let join = try await help(["sync", "join"])
        #expect(join.contains("keyhaven device approve") && join.contains("--timeout"), "\(join)")
        #expect(join.contains("sync stays off") && join.contains("with or without the agent"))
        let revoke = try await help(["device", "revoke"])
        #expect(revoke.contains("rotating the account's sync key") && revoke.contains("still holds the sync key"))
        let approve = try await help(["device", "approve"])
        #expect(approve.contains("it never goes to the server") && approve.contains("Examples:"), "\(approve)")
        #expect(approve.contains("--code-stdin") && approve.contains("visible to other users of this machine (ps)"))
        let list = try await help(["device", "list"])
        #expect(list.contains("{id, name, created, approvedBy, revoked, current}"))
        #expect(try await help(["sync"]).contains("keyhaven sync join --server"))
    }
}
