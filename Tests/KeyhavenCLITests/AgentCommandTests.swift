import AutoFill
import Foundation
import KeyhavenAgent
import KeyhavenTesting
import Testing
import _KeyhavenSupport

/// `keyhaven agent`, `unlock`, `lock`, vault commands run through the agent, `browser-host` and
/// `browser install`, each with the real binary (issue 14, parts 1 and 2).
@Suite(.offCooperativePool)
struct AgentCommandTests {
    let directory: URL
    let environment: [String: String]
    let keyhaven: CommandRunner

    init() throws {
        directory = try TemporaryDirectory.make()
        environment = IsolatedEnvironment.make(in: directory, runtime: directory.appendingPathComponent("run"))
        keyhaven = CommandRunner.keyhaven(environment: environment)
    }

    static let password = ["KEYHAVEN_PASSWORD": "correct horse battery"]

    func run(_ arguments: [String], stdin: String = "", _ extra: [String: String] = [:]) throws -> CommandRunner.Result
    {
        try keyhaven.run(arguments, stdin: stdin, extraEnvironment: extra)
    }

    /// Starts `keyhaven agent` and waits for its socket; the process is stopped by the caller.
    func startAgent(_ arguments: [String] = []) throws -> Process {
        let process = Process()
        process.executableURL = keyhaven.executable
        process.arguments = ["agent"] + arguments
        process.environment = environment
        process.standardError = FileHandle.nullDevice
        try process.run()
        let socket = directory.appendingPathComponent("run/keyhaven/agent.sock").path
        for _ in 0..<100 where !FileManager.default.fileExists(atPath: socket) { Thread.sleep(forTimeInterval: 0.05) }
        try #require(FileManager.default.fileExists(atPath: socket), "the agent did not start")
        return process
    }

    func vaultWithOneAccount() throws {
        try #require(try run(["init", "--scrypt-log-n", "10"], Self.password).status == 0)
        try #require(
            try run(["add", "github.com", "--user", "alice", "--password", "alice-Pw-1"], Self.password).status == 0
        )
    }

    @Test func uiStartsTheAgentOnceAndPrintsAOneTimeURL() throws {
        try vaultWithOneAccount()
        defer { _ = try? run(["agent", "stop"]) }
        let first = try run(["ui", "--no-open", "--json"])
        #expect(first.status == 0, "\(first.stderr)")
        let answer = try JSONValue.parse(Data(first.stdout.utf8))
        let url = try #require(answer["url"]?.string)
        #expect(url.hasPrefix("http://127.0.0.1:") && url.contains("/launch?secret="))
        #expect(answer["agentStarted"]?.number != nil)
        #expect(first.stderr.contains("started an agent"))
        // The agent it started runs (locked) and serves the app; a second `ui` reuses both.
        let status = try JSONValue.parse(Data(try run(["agent", "status", "--json"]).stdout.utf8))
        #expect(status["state"]?.string == "locked")
        let second = try run(["ui", "--no-open"])
        #expect(second.status == 0)
        let again = second.stdout.split(separator: "\n").first.map(String.init) ?? ""
        #expect(again.hasPrefix(url.components(separatedBy: "/launch")[0] + "/launch?secret="))
        #expect(again != url, "a launch secret is never given twice")
        #expect(!second.stderr.contains("started an agent"))
        // With the password it unlocks first; a wrong one exits 2 and prints no URL.
        let wrong = try run(["ui", "--no-open", "--password-stdin"], stdin: "wrong horse battery\n")
        #expect(wrong.status == 2)
        #expect(wrong.stdout.isEmpty)
        #expect(try run(["ui", "--no-open"], Self.password).status == 0)
        let unlocked = try JSONValue.parse(Data(try run(["agent", "status", "--json"]).stdout.utf8))
        #expect(unlocked["state"]?.string == "unlocked")
    }

    @Test func anUnlockedAgentRunsVaultCommandsWithoutThePassword() throws {
        try vaultWithOneAccount()
        let agent = try startAgent(["--idle-lock", "1h"])
        defer {
            agent.terminate()
            agent.waitUntilExit()
        }
        // Locked: the command falls back to opening the vault itself, which needs the password.
        #expect(try run(["list"]).status == 1)
        #expect(try run(["unlock"], ["KEYHAVEN_PASSWORD": "wrong horse battery"]).status == 2)
        #expect(try run(["unlock"], Self.password).status == 0)
        let listed = try run(["list", "--json"])
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(listed.stdout.contains("\"alice\""))
        // Adding, editing, importing and exporting run in the agent too; relative paths are the CLI's.
        #expect(try run(["add", "example.org", "--user", "bob", "--password", "bob-Pw-2"]).status == 0)
        #expect(try run(["edit", "example.org", "--password", "bob-Pw-3"]).status == 0)
        let export = try CommandRunner(executable: URL(fileURLWithPath: "/usr/bin/env"), environment: environment)
            .run(["-C", directory.path, keyhaven.executable.path, "export", "--format", "csv", "--output", "out.csv"])
        #expect(export.status == 0, "\(export.stderr)")
        let csv = try String(contentsOfFile: directory.appendingPathComponent("out.csv").path, encoding: .utf8)
        #expect(csv.contains("bob-Pw-3") && csv.contains("alice-Pw-1"))
        let shown = try run(["show", "github.com", "--reveal"])
        #expect(shown.stdout.contains("alice-Pw-1"))
        // Shell completion of account names asks the unlocked agent for the vault's sites (the
        // arguments are what the generated bash script passes: word index, cursor, the words).
        let completion = ["---completion", "show", "--", "positional@0", "2", "2", "keyhaven", "show", "gi"]
        #expect(try run(completion).stdout.split(separator: "\n") == ["github.com"])
        let status = try run(["agent", "status", "--json"])
        #expect(status.stdout.contains("\"state\":\"unlocked\"") && status.stdout.contains("\"identities\":2"))
        // What `agent status` and `browser pairings` print is what they printed before the agent's
        // replies were typed: the same members, and the same lines.
        let members = try #require(try JSONValue.parse(Data(status.stdout.utf8)).object)
        #expect(
            Set(members.keys) == [
                "agentVersion", "identities", "idleLockSeconds", "lockInSeconds", "pairings", "pid", "revision",
                "running", "socket", "state", "sync", "vault",
            ]
        )
        #expect(members["sync"]?["phase"]?.string == "off", "sync is not on for this vault")
        #expect(members["running"] == true && members["idleLockSeconds"] == 3600 && members["pairings"] == 0)
        let line = try run(["agent", "status"]).stdout
        let pid = try #require(members["pid"]?.integer)
        #expect(
            line.hasPrefix("Agent \(pid) on \(members["socket"]?.string ?? "?"): unlocked, 2 credentials, locks in ")
        )
        #expect(line.hasSuffix(" s unless used (vault \(members["vault"]?.string ?? "?")).\n"), "\(line)")
        #expect(try run(["browser", "pairings"]).stdout == "No browser is paired (run `keyhaven browser pair`).\n")
        #expect(try run(["browser", "pairings", "--json"]).stdout == "[]\n")
        // The commands reach the agent with typed requests only: it runs no command line, whoever asks.
        let socket = try #require(
            try UnixSocket.connect(to: directory.appendingPathComponent("run/keyhaven/agent.sock").path)
        )
        try socket.send(["v": 1, "id": 1, "type": "agent.run", "arguments": ["list", "--json"]] as JSONValue)
        let refused = try JSONValue.parse(try #require(try socket.receive()))
        #expect(refused["error"]?["code"]?.string == "badRequest" && refused["ok"] == nil)
        // KEYHAVEN_NO_AGENT=1 opens the vault here (which needs the password); --password-stdin too.
        #expect(try run(["list"], ["KEYHAVEN_NO_AGENT": "1"]).status == 1)
        let local = try run(["list", "--password-stdin"], stdin: "correct horse battery\n")
        #expect(local.status == 0 && local.stdout.contains("alice"), "\(local.stderr)")
        #expect(try run(["lock"]).status == 0)
        #expect(try run(["list"]).status == 1)
        #expect(try run(completion).stdout.isEmpty)
        #expect(try run(["agent", "stop"]).status == 0)
        agent.waitUntilExit()
        #expect(
            !FileManager.default.fileExists(atPath: directory.appendingPathComponent("run/keyhaven/agent.sock").path)
        )
        #expect(try run(["agent", "status"]).status == 1)
    }

    /// Issue 27 item 2: through the agent, the commands send typed requests and print here exactly
    /// what they print when they open the vault themselves.
    @Test func typedRequestsThroughTheAgentPrintWhatTheVaultOpenedHerePrints() throws {
        try vaultWithOneAccount()
        let agent = try startAgent(["--idle-lock", "1h"])
        defer {
            agent.terminate()
            agent.waitUntilExit()
        }
        #expect(try run(["unlock"], Self.password).status == 0)
        let local = ["KEYHAVEN_NO_AGENT": "1"].merging(Self.password) { $1 }
        // Written through the agent (no password here): add, edit with a password generated here.
        let added = try run(["add", "--service", "example.org", "--user", "bob", "--password", "bob-Pw-2", "--json"])
        #expect(added.status == 0, "\(added.stderr)")
        #expect(added.stdout.contains("\"user\" : \"bob\""))
        let edited = try run([
            "edit", "example.org", "--generate", "--folder", "Work", "--add-service", "app.example.org",
        ])
        #expect(edited.status == 0, "\(edited.stderr)")
        let generated = try #require(
            edited.stdout.split(separator: "\n").last?.split(separator: " ").last.map(String.init)
        )
        #expect(edited.stdout.hasPrefix("Updated ") && edited.stdout.contains("Generated password: "))
        let revealed = try run(["show", "example.org", "--reveal"], local)
        #expect(revealed.stdout.contains("password:  \(generated)") && revealed.stdout.contains("bob-Pw-2"))
        #expect(try run(["rm", "github.com"]).status == 0)
        // Read through the agent and here: the same output, byte for byte.
        for arguments in [
            ["list", "--json"], ["list"], ["list", "--deleted", "--json"],
            ["show", "example.org", "--json", "--reveal"],
            ["show", "example.org"], ["search", "example.org", "--json"], ["search", "--text", "bob"],
        ] {
            let viaAgent = try run(arguments)
            let here = try run(arguments, local)
            #expect(viaAgent.status == 0 && here.status == 0, "\(arguments): \(viaAgent.stderr) \(here.stderr)")
            #expect(viaAgent.stdout == here.stdout, "\(arguments)")
        }
        let restored = try run(["list", "--deleted"]).stdout.split(separator: "\n").dropFirst().first
        let id = try #require(restored?.split(separator: " ").first.map(String.init))
        #expect(try run(["restore", id]).status == 0)
        // A failure comes back typed: the same message and status as here.
        let missing = try run(["show", "nothing.example"])
        let missingHere = try run(["show", "nothing.example"], local)
        #expect(missing.status == 1 && missing.stderr == missingHere.stderr)
        // Each write reached the agent's session: its AutoFill index holds all of them.
        #expect(try run(["agent", "status", "--json"]).stdout.contains("\"identities\":2"))
    }

    @Test func theAgentLocksItselfWhenIdle() throws {
        try vaultWithOneAccount()
        let agent = try startAgent(["--idle-lock", "2s"])
        defer {
            agent.terminate()
            agent.waitUntilExit()
        }
        #expect(try run(["unlock"], Self.password).status == 0)
        Thread.sleep(forTimeInterval: 4)
        #expect(try run(["agent", "status", "--json"]).stdout.contains("\"state\":\"locked\""))
    }

    /// Frames as the browser writes them: 4-byte length (little endian here), JSON.
    func frames(_ messages: [String]) -> String {
        messages.map { message in
            var data = Data()
            withUnsafeBytes(of: UInt32(message.utf8.count).littleEndian) { data.append(contentsOf: $0) }
            return String(decoding: data + Data(message.utf8), as: UTF8.self)
        }.joined()
    }

    func replies(_ output: String) -> [String] {
        var data = Data(output.utf8)
        var out: [String] = []
        while data.count >= 4 {
            let length =
                Int(data[data.startIndex]) | Int(data[data.startIndex + 1]) << 8
                | Int(data[data.startIndex + 2]) << 16 | Int(data[data.startIndex + 3]) << 24
            out.append(String(decoding: data.dropFirst(4).prefix(length), as: UTF8.self))
            data = Data(data.dropFirst(4 + length))
        }
        return out
    }

    @Test func theBrowserHostRelaysOurExtensionOnlyAndSaysWhenNoAgentRuns() throws {
        try vaultWithOneAccount()
        let installed = try run(["browser", "extension", "--output", directory.appendingPathComponent("ext").path])
        try #require(installed.status == 0, "\(installed.stderr)")
        let id = try #require(
            installed.stderr.split(separator: " ").last.map {
                String($0).trimmingCharacters(in: .whitespacesAndNewlines)
            }
        )
        let origin = "chrome-extension://\(id)/"

        let stranger = try run(
            ["browser-host", "chrome-extension://abcdefghijklmnopabcdefghijklmnop/"],
            stdin: frames([#"{"v":1,"id":1,"type":"hello"}"#])
        )
        #expect(stranger.status == 1)
        #expect(replies(stranger.stdout).first?.contains("originNotAllowed") == true)

        let noAgent = try run(["browser-host", origin], stdin: frames([#"{"v":1,"id":1,"type":"hello"}"#]))
        #expect(replies(noAgent.stdout).first?.contains("not running") == true)

        let agent = try startAgent()
        defer {
            agent.terminate()
            agent.waitUntilExit()
        }
        let hello = try run(
            ["browser-host", origin],
            stdin: frames([
                #"{"v":1,"id":1,"type":"hello","browser":"chromium"}"#,
                #"{"v":1,"id":2,"type":"identities.query","url":"https://github.com/"}"#,
            ])
        )
        let answers = replies(hello.stdout)
        #expect(answers.count == 2)
        #expect(answers.first?.contains(#""state":"locked""#) == true)
        #expect(answers.last?.contains("notPaired") == true)
        // A frame over 1 MiB gets one error frame, and the host ends.
        var oversized = Data()
        withUnsafeBytes(of: UInt32(1 << 20 + 1).littleEndian) { oversized.append(contentsOf: $0) }
        let tooLong = try run(["browser-host", origin], stdin: String(decoding: oversized, as: UTF8.self))
        #expect(replies(tooLong.stdout).last?.contains("badRequest") == true)
        // Firefox passes the manifest path and the extension id.
        let firefox = try run(
            ["browser-host", "/x/dev.keyhaven.autofill.json", "autofill@keyhaven.dev"],
            stdin: frames([#"{"v":1,"id":1,"type":"hello"}"#])
        )
        #expect(replies(firefox.stdout).first?.contains(#""protocol":2"#) == true)
    }

    @Test func installWritesTheHostManifestWhereEachBrowserReadsIt() throws {
        let profile = directory.appendingPathComponent("profile").path
        let chromium = try run(["browser", "install", "--browser", "chromium", "--user-data-dir", profile])
        #expect(chromium.status == 0, "\(chromium.stderr)")
        let manifestPath = "\(profile)/NativeMessagingHosts/dev.keyhaven.autofill.json"
        #expect(chromium.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == manifestPath)
        let manifest =
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: manifestPath)))
            as? [String: Any]
        let launcher = try #require(manifest?["path"] as? String)
        #expect(FileManager.default.isExecutableFile(atPath: launcher))
        #expect((manifest?["allowed_origins"] as? [String])?.first?.hasPrefix("chrome-extension://") == true)
        #expect(try String(contentsOfFile: launcher, encoding: .utf8).contains("browser-host"))

        let firefox = try run(["browser", "install", "--browser", "firefox"])
        #expect(firefox.stdout.contains("\(directory.path)/.mozilla/native-messaging-hosts/dev.keyhaven.autofill.json"))
        let chrome = try run(["browser", "install", "--browser", "chrome"])
        #expect(chrome.stdout.contains("config/google-chrome/NativeMessagingHosts/"))
        #expect(try run(["browser", "install", "--browser", "firefox", "--user-data-dir", profile]).status == 64)
    }

    @Test func installServiceWritesAUnitWithThisBinary() throws {
        let output = directory.appendingPathComponent("units").path
        let written = try run(["agent", "install-service", "--output", output, "--idle-lock", "10m"])
        #expect(written.status == 0, "\(written.stderr)")
        let unit = try String(contentsOfFile: "\(output)/keyhaven-agent.service", encoding: .utf8)
        #expect(unit.contains("ExecStart=\"\(keyhaven.executable.path)\" agent start --vault"))
        #expect(unit.contains("--idle-lock \"10m\""))
        #expect(try run(["agent", "install-service", "--output", output, "--idle-lock", "soon"]).status == 64)
    }
}
