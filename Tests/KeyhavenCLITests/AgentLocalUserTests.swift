import Foundation
import KeyhavenTesting
import Testing
import _KeyhavenSupport

#if canImport(Glibc)
import Glibc
#endif

/// Security review #6, #8 and #12 (issue 26, part 5): the agent's socket is only ever the
/// person's own. Another local user (uid 65534 through `setpriv`, as in the review) who gets to
/// the socket's place first receives nothing; the agent refuses a folder that is not only the
/// person's; a planted `agent.log` link is not followed; SIGTERM, SIGINT and SIGHUP lock and end
/// the agent; an agent `keyhaven ui` starts inherits no master password.
@Suite(.offCooperativePool)
struct AgentLocalUserTests {
    let directory: URL
    /// A folder every user may write, sticky, as the shared temporary folder is.
    let shared: URL
    let environment: [String: String]
    let keyhaven: CommandRunner

    static let password = "correct horse battery staple 42"

    init() throws {
        directory = try TemporaryDirectory.make()
        // Others may pass through (to reach `shared`), not write.
        chmod(directory.path, 0o711)
        shared = directory.appendingPathComponent("shared")
        try PrivateFile.createDirectory(at: shared)
        chmod(shared.path, 0o1777)
        environment = IsolatedEnvironment.make(
            in: directory,
            home: directory.appendingPathComponent("home"),
            runtime: nil,
            removing: ["XDG_STATE_HOME"]
        )
        keyhaven = CommandRunner.keyhaven(environment: environment)
    }

    func run(_ arguments: [String], stdin: String = "", _ extra: [String: String] = [:]) throws -> CommandRunner.Result
    {
        try keyhaven.run(arguments, stdin: stdin, extraEnvironment: extra)
    }

    func makeVault() throws {
        let made = try run(["init", "--scrypt-log-n", "10"], ["KEYHAVEN_PASSWORD": Self.password])
        try #require(made.status == 0, "\(made.stderr)")
    }

    /// One frame as the browser writes it: 4-byte length (little endian), JSON (short, so ASCII).
    static func frame(_ message: String) -> String {
        var data = Data()
        withUnsafeBytes(of: UInt32(message.utf8.count).littleEndian) { data.append(contentsOf: $0) }
        return String(decoding: data + Data(message.utf8), as: UTF8.self)
    }

    static func mode(_ path: String) -> mode_t {
        var status = stat()
        return lstat(path, &status) == 0 ? status.st_mode & 0o7777 : 0
    }

    // MARK: Another local user

    static let asAnotherUser =
        getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")
        && FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")
    static let asAnotherUserReason: Comment =
        "a second local user needs root (setpriv --reuid=65534; CI runs as root) and /usr/bin/python3"

    /// Where the other user puts a fake agent, and how the person's Keyhaven finds it.
    enum Squat: String, CaseIterable, CustomTestStringConvertible {
        /// `$XDG_RUNTIME_DIR` is a shared folder (as /tmp was for the old fallback): the other
        /// user makes `keyhaven/` in it first (the review's attack).
        case runtimeFolder
        /// No `$XDG_RUNTIME_DIR`; the fallback's parent `$XDG_STATE_HOME` is shared: the other
        /// user makes `keyhaven/run/` in it first.
        case fallbackFolder
        /// `$KEYHAVEN_AGENT_SOCKET` names a socket in a shared sticky folder; the other user binds it first.
        case chosenSocket
        /// As `chosenSocket`, and the socket file is then given to the person (root can): only
        /// the peer's uid (`SO_PEERCRED`) tells.
        case peerOnly

        var testDescription: String { rawValue }
    }

    /// A fake agent run as uid 65534: it answers every frame as an unlocked agent would, and
    /// writes down each connection and every byte it receives.
    final class FakeAgent {
        let process = Process()
        let received: URL
        let connections: URL

        static let script = """
            import json, os, socket, struct, sys, threading
            path, received, connections, vault = sys.argv[1:5]
            os.umask(0)
            os.makedirs(os.path.dirname(path), mode=0o777, exist_ok=True)
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(path)
            listener.listen(16)
            def serve(connection):
                with open(connections, "a") as log:
                    log.write("connected\\n")
                pending = b""
                while True:
                    data = connection.recv(65536)
                    if not data:
                        return
                    with open(received, "ab") as log:
                        log.write(data)
                    pending += data
                    while len(pending) >= 4:
                        length = struct.unpack("<I", pending[:4])[0]
                        if len(pending) < 4 + length:
                            break
                        request = json.loads(pending[4:4 + length])
                        pending = pending[4 + length:]
                        ok = {"state": "unlocked", "vault": vault, "status": 0, "standardOutput": "",
                              "standardError": "", "url": "http://127.0.0.1:9/launch?secret=fake", "protocol": 1}
                        reply = json.dumps({"v": 1, "id": request.get("id"), "ok": ok}).encode()
                        connection.sendall(struct.pack("<I", len(reply)) + reply)
            while True:
                connection, _ = listener.accept()
                threading.Thread(target=serve, args=(connection,), daemon=True).start()
            """

        init(socket: String, shared: URL, vault: String) throws {
            let scriptURL = shared.appendingPathComponent("fake_agent.py")
            try Data(Self.script.utf8).write(to: scriptURL)
            chmod(scriptURL.path, 0o644)
            received = shared.appendingPathComponent("received.bin")
            connections = shared.appendingPathComponent("connections.log")
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments = [
                "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", scriptURL.path, socket,
                received.path, connections.path, vault,
            ]
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            for _ in 0..<100 where !FileManager.default.fileExists(atPath: socket) {
                Thread.sleep(forTimeInterval: 0.05)
            }
            try #require(FileManager.default.fileExists(atPath: socket), "the fake agent did not start")
        }

        var receivedBytes: Int { (try? Data(contentsOf: received).count) ?? 0 }
        var connectionCount: Int {
            ((try? String(contentsOf: connections, encoding: .utf8)) ?? "").split(separator: "\n").count
        }

        /// SIGKILL: a process Foundation starts inherits the signal mask of the test's thread,
        /// where SIGTERM is blocked.
        func stop() {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// The review's attack (x6_fake_agent_in_tmp.py), in each place a socket can be: `unlock`
    /// refuses before it sends the master password, a forwarded `add` before it sends its
    /// arguments, and `ui`, `agent status`, `browser-host` and completion likewise; each refusal
    /// names the other uid and the path. The real agent refuses to start there. The fake agent
    /// receives not one byte.
    @Test(
        .enabled(if: AgentLocalUserTests.asAnotherUser, AgentLocalUserTests.asAnotherUserReason),
        arguments: AgentLocalUserTests.Squat.allCases
    )
    func anotherUsersAgentGetsNeitherThePasswordNorACommand(squat: Squat) throws {
        try makeVault()
        var extra: [String: String] = [:]
        let socket: String
        let named: String  // the path the refusal must name
        switch squat {
        case .runtimeFolder:
            extra["XDG_RUNTIME_DIR"] = shared.path
            socket = shared.appendingPathComponent("keyhaven/agent.sock").path
            named = shared.appendingPathComponent("keyhaven").path
        case .fallbackFolder:
            extra["XDG_STATE_HOME"] = shared.path
            socket = shared.appendingPathComponent("keyhaven/run/agent.sock").path
            named = shared.appendingPathComponent("keyhaven").path
        case .chosenSocket, .peerOnly:
            socket = shared.appendingPathComponent("agent.sock").path
            extra["KEYHAVEN_AGENT_SOCKET"] = socket
            named = socket
        }
        let fake = try FakeAgent(socket: socket, shared: shared, vault: environment["KEYHAVEN_VAULT"] ?? "")
        defer { fake.stop() }
        if squat == .peerOnly {
            try #require(chown(socket, getuid(), getgid()) == 0)
        }
        let password = extra.merging(["KEYHAVEN_PASSWORD": Self.password]) { $1 }

        let unlock = try run(["unlock"], password)
        #expect(unlock.status == 1, "\(unlock.stdout)")
        #expect(unlock.stderr.contains("uid 65534") && unlock.stderr.contains(named), "\(unlock.stderr)")
        #expect(!unlock.stdout.contains("Unlocked"))
        let add = try run(
            ["add", "https://bank.example", "--user", "victim", "--password", "New-Bank-Secret-7"],
            extra
        )
        #expect(add.status == 1)
        #expect(add.stderr.contains("uid 65534") && add.stderr.contains("KEYHAVEN_NO_AGENT=1"), "\(add.stderr)")
        let ui = try run(["ui", "--no-open"], password)
        #expect(ui.status == 1 && ui.stdout.isEmpty)
        #expect(ui.stderr.contains("uid 65534"), "\(ui.stderr)")
        #expect(try run(["agent", "status"], extra).stderr.contains("uid 65534"))
        let host = try run(
            ["browser-host", "/x/dev.keyhaven.autofill.json", "autofill@keyhaven.dev"],
            stdin: Self.frame(#"{"v":1,"id":1,"type":"hello"}"#),
            extra
        )
        #expect(host.status == 1)
        #expect(host.stdout.contains("uid 65534") && !host.stdout.contains(#""protocol":1"#), "\(host.stdout)")
        let completion = ["---completion", "show", "--", "positional@0", "2", "2", "keyhaven", "show", "ba"]
        #expect(try run(completion, extra).stdout.isEmpty)

        // The person's own agent does not start there, and says why.
        let agent = try run(["agent"], extra)
        #expect(agent.status == 1)
        #expect(agent.stderr.contains("uid 65534") && agent.stderr.contains(named), "\(agent.stderr)")

        #expect(fake.receivedBytes == 0, "the fake agent received something")
        if squat != .peerOnly {
            #expect(fake.connectionCount == 0, "refused before connecting")
        }
    }

    // MARK: The agent's own folder

    /// A folder of the person's that is open to others (it may hold what they put there) or a
    /// link (it may lead into theirs): the agent does not start, the clients do not connect, and
    /// nothing is repaired behind the person's back.
    @Test(arguments: ["0777", "0755", "link"])
    func theAgentRefusesAFolderThatIsNotOnlyItsOwn(kind: String) throws {
        try makeVault()
        let runtime = directory.appendingPathComponent("run")
        try PrivateFile.createDirectory(at: runtime)
        let folder = runtime.appendingPathComponent("keyhaven").path
        switch kind {
        case "link":
            let elsewhere = directory.appendingPathComponent("elsewhere")
            try PrivateFile.createDirectory(at: elsewhere)
            try #require(symlink(elsewhere.path, folder) == 0)
        default:
            try #require(mkdir(folder, 0o700) == 0 && chmod(folder, kind == "0777" ? 0o777 : 0o755) == 0)
        }
        let extra = ["XDG_RUNTIME_DIR": runtime.path]
        let agent = try run(["agent"], extra)
        #expect(agent.status == 1)
        let why = kind == "link" ? "is a symbolic link" : "has mode \(kind.dropFirst())"
        #expect(agent.stderr.contains(folder) && agent.stderr.contains(why), "\(agent.stderr)")
        #expect(agent.stderr.contains("rm"), "says what to do")
        let unlock = try run(["unlock"], extra.merging(["KEYHAVEN_PASSWORD": Self.password]) { $1 })
        #expect(unlock.status == 1 && unlock.stderr.contains(why), "\(unlock.stderr)")
        if kind != "link" { #expect(Self.mode(folder) == (kind == "0777" ? 0o777 : 0o755)) }
    }

    /// Without `$XDG_RUNTIME_DIR` the agent and its clients use a private folder under the home
    /// (never the shared temporary folder), and SIGTERM there too locks and ends it.
    @Test func withoutARuntimeFolderTheAgentLivesUnderTheHome() throws {
        try makeVault()
        let folder = directory.appendingPathComponent("home/.local/state/keyhaven/run").path
        let agent = try startAgent(socket: folder + "/agent.sock")
        defer { agent.stop() }
        #expect(Self.mode(folder) == 0o700)
        #expect(try run(["unlock"], ["KEYHAVEN_PASSWORD": Self.password]).status == 0)
        let status = try run(["agent", "status", "--json"])
        #expect(status.stdout.contains(#""state":"unlocked""#) && status.stdout.contains(folder + "/agent.sock"))
        kill(agent.process.processIdentifier, SIGTERM)
        #expect(agent.exited(within: 5))
        #expect(!FileManager.default.fileExists(atPath: folder + "/agent.sock"))
    }

    // MARK: agent.log

    /// `keyhaven ui` appends the agent's output to `agent.log` beside the socket: a symbolic link
    /// (or a hard link) planted there is refused, not written through, and no agent starts.
    @Test func aPlantedAgentLogLinkIsNotFollowed() throws {
        try makeVault()
        let runtime = directory.appendingPathComponent("run")
        let folder = runtime.appendingPathComponent("keyhaven")
        try PrivateFile.createDirectory(at: folder)
        let log = folder.appendingPathComponent("agent.log").path
        let victim = directory.appendingPathComponent("victim.txt")
        try Data("untouched\n".utf8).write(to: victim)
        let extra = ["XDG_RUNTIME_DIR": runtime.path]
        defer { _ = try? run(["agent", "stop"], extra) }

        try #require(symlink(victim.path, log) == 0)
        let linked = try run(["ui", "--no-open"], extra)
        #expect(linked.status == 1 && linked.stdout.isEmpty)
        #expect(linked.stderr.contains("\(log) is a symbolic link"), "\(linked.stderr)")
        #expect(try String(contentsOf: victim, encoding: .utf8) == "untouched\n")
        #expect(try run(["agent", "status"], extra).status == 1, "no agent was started")

        unlink(log)
        try #require(link(victim.path, log) == 0)
        let hardLinked = try run(["ui", "--no-open"], extra)
        #expect(hardLinked.status == 1 && hardLinked.stderr.contains("not a plain file"), "\(hardLinked.stderr)")
        #expect(try String(contentsOf: victim, encoding: .utf8) == "untouched\n")

        unlink(log)
        let started = try run(["ui", "--no-open"], extra)
        #expect(started.status == 0, "\(started.stderr)")
        #expect(Self.mode(log) == 0o600)
        #expect(try String(contentsOfFile: log, encoding: .utf8).contains("keyhaven agent: listening"))
    }

    // MARK: Signals

    final class RunningAgent {
        let process = Process()
        let errors: URL

        init(_ runner: CommandRunner, directory: URL, socket: String, extra: [String: String]) throws {
            errors = directory.appendingPathComponent("agent-\(UUID().uuidString).err")
            _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
            process.executableURL = runner.executable
            process.arguments = ["agent", "--idle-lock", "1h"]
            process.environment = runner.environment.merging(extra) { $1 }
            process.standardError = try FileHandle(forWritingTo: errors)
            try process.run()
            for _ in 0..<100 where !FileManager.default.fileExists(atPath: socket) {
                Thread.sleep(forTimeInterval: 0.05)
            }
            try #require(FileManager.default.fileExists(atPath: socket), "the agent did not start: \(output)")
        }

        var output: String { (try? String(contentsOf: errors, encoding: .utf8)) ?? "" }

        func exited(within seconds: Double) -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
            return !process.isRunning
        }

        func stop() {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
    }

    func startAgent(socket: String, _ extra: [String: String] = [:]) throws -> RunningAgent {
        try RunningAgent(keyhaven, directory: directory, socket: socket, extra: extra)
    }

    /// Security review #12: `kill PID`, Ctrl-C and a hang-up (logout, `systemctl --user stop`)
    /// lock the unlocked agent and end it within seconds, its socket removed — also once it serves
    /// the web app (`keyhaven ui`), whose HTTP server once took SIGTERM and SIGINT for itself and
    /// left the agent running unlocked.
    @Test(arguments: [SIGTERM, SIGINT, SIGHUP], [false, true])
    func aSignalLocksAndEndsTheAgent(signal: Int32, servingTheWebApp: Bool) throws {
        try makeVault()
        let runtime = directory.appendingPathComponent("run")
        let socket = runtime.appendingPathComponent("keyhaven/agent.sock").path
        let extra = ["XDG_RUNTIME_DIR": runtime.path]
        let agent = try startAgent(socket: socket, extra)
        defer { agent.stop() }
        #expect(try run(["unlock"], extra.merging(["KEYHAVEN_PASSWORD": Self.password]) { $1 }).status == 0)
        #expect(try run(["agent", "status", "--json"], extra).stdout.contains(#""state":"unlocked""#))
        if servingTheWebApp {
            let ui = try run(["ui", "--no-open"], extra)
            #expect(ui.status == 0 && ui.stdout.contains("/launch?secret="), "\(ui.stderr)")
        }
        kill(agent.process.processIdentifier, signal)
        #expect(agent.exited(within: 5), "the agent still runs 5 s after signal \(signal)")
        #expect(agent.process.terminationReason == .exit && agent.process.terminationStatus == 0)
        #expect(!FileManager.default.fileExists(atPath: socket))
        #expect(agent.output.contains("locking and stopping") && agent.output.contains("keyhaven agent: stopped"))
        #expect(try run(["agent", "status"], extra).status == 1)
    }

    // MARK: The environment of an agent `ui` starts

    /// Security review #8: `KEYHAVEN_PASSWORD=… keyhaven ui` unlocks the agent it starts through
    /// the socket; the agent's own environment holds no password and no other secret.
    @Test func anAgentStartedByUIInheritsNoSecret() throws {
        try makeVault()
        let runtime = directory.appendingPathComponent("run")
        let extra = [
            "XDG_RUNTIME_DIR": runtime.path, "KEYHAVEN_PASSWORD": Self.password,
            "KEYHAVEN_IDP_PASSWORD": "provider-secret", "AWS_SECRET_ACCESS_KEY": "aws-secret",
            "GITHUB_TOKEN": "ghp_secret", "SSH_AUTH_SOCK": "/tmp/ssh-agent.sock",
        ]
        defer { _ = try? run(["agent", "stop"], ["XDG_RUNTIME_DIR": runtime.path]) }
        let ui = try run(["ui", "--no-open", "--json"], extra)
        #expect(ui.status == 0, "\(ui.stderr)")
        let pid = try #require(try JSONValue.parse(Data(ui.stdout.utf8))["agentStarted"]?.integer)
        let environ = try Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/environ"))
        let variables = Dictionary(
            String(decoding: environ, as: UTF8.self).split(separator: "\0").map {
                let pair = $0.split(separator: "=", maxSplits: 1).map(String.init)
                return (pair[0], pair.count > 1 ? pair[1] : "")
            }
        ) { first, _ in first }
        for secret in ["KEYHAVEN_PASSWORD", "KEYHAVEN_IDP_PASSWORD", "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN"] {
            #expect(variables[secret] == nil, "\(secret) reached the agent")
        }
        #expect(variables["SSH_AUTH_SOCK"] == nil)
        #expect(!String(decoding: environ, as: UTF8.self).contains(Self.password))
        // What it needs to find its socket and vault is kept.
        #expect(variables["XDG_RUNTIME_DIR"] == runtime.path)
        #expect(variables["KEYHAVEN_VAULT"] == environment["KEYHAVEN_VAULT"])
        #expect(variables["HOME"] == environment["HOME"])
        // And it was unlocked through the socket.
        let status = try run(["agent", "status", "--json"], ["XDG_RUNTIME_DIR": runtime.path])
        #expect(status.stdout.contains(#""state":"unlocked""#))
    }
}
