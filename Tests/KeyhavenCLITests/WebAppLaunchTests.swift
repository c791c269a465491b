import Foundation
import KeyhavenTesting
import Testing
import _KeyhavenSupport

#if canImport(Glibc)
import Glibc
#endif

/// `keyhaven ui` and the secrets of the web app (issue 26, item 4; security review #3 and the note
/// on port squatting), with the real binary, a $BROWSER that records what a browser would get, and,
/// as root, a second local user (uid 65534) who watches command lines and holds ports.
@Suite(.offCooperativePool)
struct WebAppLaunchTests {
    let directory: URL
    let environment: [String: String]
    let keyhaven: CommandRunner

    init() throws {
        directory = try TemporaryDirectory.make()
        environment = IsolatedEnvironment.make(
            in: directory,
            runtime: directory.appendingPathComponent("run"),
            removing: ["BROWSER", "DISPLAY", "WAYLAND_DISPLAY"]
        )
        keyhaven = CommandRunner.keyhaven(environment: environment)
    }

    static let password = "correct horse battery"

    func run(_ arguments: [String], _ extra: [String: String] = [:]) throws -> CommandRunner.Result {
        try keyhaven.run(arguments, extraEnvironment: extra)
    }

    func vaultWithOneAccount() throws {
        let password = ["KEYHAVEN_PASSWORD": Self.password]
        try #require(try run(["init", "--scrypt-log-n", "10"], password).status == 0)
        try #require(
            try run(["add", "bank.example", "--user", "ada", "--password", "Bank-Secret-123"], password).status == 0
        )
    }

    /// A $BROWSER that writes its arguments and environment as JSON to `record`, after waiting
    /// `seconds` (so that a watcher has time to see its command line).
    func recorder(waiting seconds: Double = 0) throws -> (browser: URL, record: URL) {
        let record = directory.appendingPathComponent("browser-record.json")
        let browser = directory.appendingPathComponent("browser.py")
        let script = """
            #!/usr/bin/env python3
            import json, os, sys, time
            time.sleep(\(seconds))
            record = \(String(reflecting: record.path))
            open(record + ".tmp", "w").write(json.dumps({"argv": sys.argv[1:], "env": dict(os.environ)}))
            os.replace(record + ".tmp", record)  # whole or not at all for the reader
            """
        try Data(script.utf8).write(to: browser)
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: browser.path)
        return (browser, record)
    }

    func waitForRecord(_ record: URL) throws -> (argv: [String], environment: [String: String], text: String) {
        for _ in 0..<200 where !FileManager.default.fileExists(atPath: record.path) {
            Thread.sleep(forTimeInterval: 0.05)
        }
        let text = try String(contentsOf: record, encoding: .utf8)
        let value = try JSONValue.parse(Data(text.utf8))
        let argv = value["argv"]?.array?.compactMap(\.string) ?? []
        var environment: [String: String] = [:]
        for (name, value) in value["env"]?.object ?? [:] { environment[name] = value.string }
        return (argv, environment, text)
    }

    /// What a browser does with the launch file: follows its refresh to the launch URL, takes the
    /// cookie, follows the launch page on to the session, and reads its first page. Python's
    /// standard library as the browser; prints `status cookie? base first-page-status`.
    func browse(launchFile: String) throws -> String {
        let script = """
            import re, sys, urllib.request, http.cookiejar
            page = open(sys.argv[1]).read()
            target = re.search(r'content="0;url=([^"]+)"', page).group(1)
            jar = http.cookiejar.CookieJar()
            opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
            launched = opener.open(target, timeout=10)
            body = launched.read().decode()
            base = re.search(r'id="continue" href="([^"]+)"', body).group(1)
            origin = target.split("/launch")[0]
            first = opener.open(origin + base, timeout=10)
            print(launched.status, len(jar) == 1, base, first.status, "Overview" in first.read().decode())
            """
        let result = try CommandRunner(executable: URL(fileURLWithPath: "/usr/bin/env"), environment: environment)
            .run(["python3", "-c", script, launchFile])
        return result.stdout + result.stderr
    }

    @Test func theBrowserGetsAPrivateFileNeverTheSecret() throws {
        try vaultWithOneAccount()
        defer { _ = try? run(["agent", "stop"]) }
        let (browser, record) = try recorder()
        let launched = try run(
            ["ui"],
            ["BROWSER": browser.path, "KEYHAVEN_PASSWORD": Self.password, "KEYHAVEN_NEW_PASSWORD": "Next-Master-1"]
        )
        #expect(launched.status == 0, "\(launched.stderr)")
        let url = try #require(launched.lines.first)
        let secret = try #require(url.components(separatedBy: "/launch?secret=").last)
        #expect(url.hasPrefix("http://127.0.0.1:") && secret.count >= 43)
        let seen = try waitForRecord(record)
        // One argument: the file's URL. No secret in argv or environment, launch or master password.
        #expect(seen.argv.count == 1 && seen.argv.first?.hasPrefix("file:///") == true, "\(seen.argv)")
        #expect(!seen.text.contains(secret) && !seen.text.contains("secret="))
        #expect(!seen.text.contains(Self.password) && !seen.text.contains("Next-Master-1"))
        #expect(seen.environment["KEYHAVEN_PASSWORD"] == nil && seen.environment["KEYHAVEN_NEW_PASSWORD"] == nil)
        #expect(seen.environment["KEYHAVEN_VAULT"] != nil, "the rest of the environment is passed on")
        // The file: 0600, in the agent's 0700 runtime folder, leading to the printed URL.
        let file = try #require(seen.argv.first.flatMap { URL(string: $0) }?.path)
        let folder = directory.appendingPathComponent("run/keyhaven")
        #expect(URL(fileURLWithPath: file).deletingLastPathComponent().path == folder.path)
        // (FileManager's attributes come from lstat: a link is reported as a link.)
        let fileAttributes = try FileManager.default.attributesOfItem(atPath: file)
        #expect(fileAttributes[.posixPermissions] as? Int == 0o600)
        #expect(fileAttributes[.type] as? FileAttributeType == .typeRegular)
        #expect(try FileManager.default.attributesOfItem(atPath: folder.path)[.posixPermissions] as? Int == 0o700)
        #expect(try String(contentsOfFile: file, encoding: .utf8).contains(url))
        // It leads to a working session (the agent was unlocked with the password), then goes.
        let browsed = try browse(launchFile: file)
        #expect(browsed.hasPrefix("200 True /s/") && browsed.contains("/ 200 True"), "\(browsed)")
        for _ in 0..<100 where FileManager.default.fileExists(atPath: file) { Thread.sleep(forTimeInterval: 0.05) }
        #expect(!FileManager.default.fileExists(atPath: file), "a used launch file is removed")
        // --no-open writes no file and still prints a URL to paste (standard output is no argv).
        let printed = try run(["ui", "--no-open"])
        #expect(printed.status == 0 && printed.lines.first?.contains("/launch?secret=") == true)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix("launch-") }.isEmpty
        )
    }

    /// The review's attack (#3): another local user polls `/proc/*/cmdline` while the person runs
    /// `keyhaven ui`. It sees the browser start, and finds no secret to redeem and no file it can read.
    @Test(.enabled(if: OtherLocalUser.available, OtherLocalUser.reason))
    func anotherUserWatchingCommandLinesFindsNothingToRedeem() throws {
        try vaultWithOneAccount()
        defer { _ = try? run(["agent", "stop"]) }
        let watcher = try OtherLocalUser.start([
            "python3", "-c",
            """
            import json, os, re, time
            found = {"sawBrowser": False, "secrets": [], "files": {}, "environ": []}
            print("watching", flush=True)
            deadline = time.time() + 30
            while time.time() < deadline and not found["files"]:
                for pid in filter(str.isdigit, os.listdir("/proc")):
                    try:
                        argv = open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace").split("\\0")
                    except OSError:
                        continue
                    line = " ".join(argv)
                    found["secrets"] += re.findall(r"secret=[A-Za-z0-9_-]+", line)
                    for argument in argv:
                        if "/launch-" in argument and argument.endswith(".html"):
                            found["sawBrowser"] = True
                            path = argument.removeprefix("file://")
                            try:
                                found["files"][path] = open(path).read()
                            except OSError as error:
                                found["files"][path] = type(error).__name__
                            try:
                                found["environ"].append(open(f"/proc/{pid}/environ").read())
                            except OSError as error:
                                found["environ"].append(type(error).__name__)
                time.sleep(0.005)
            print(json.dumps(found))
            """,
        ])
        let started = (watcher.standardOutput as? Pipe)?.fileHandleForReading.availableData ?? Data()
        try #require(String(decoding: started, as: UTF8.self).contains("watching"))
        let (browser, record) = try recorder(waiting: 2)
        let launched = try run(["ui"], ["BROWSER": browser.path])
        #expect(launched.status == 0, "\(launched.stderr)")
        let output = OtherLocalUser.output(of: watcher)
        let found = try JSONValue.parse(Data(output.stdout.utf8))
        #expect(
            found["sawBrowser"]?.bool == true,
            "the watcher never saw the browser: \(output.stdout)\(output.stderr)"
        )
        #expect(found["secrets"]?.array?.isEmpty == true, "a launch secret in a command line: \(output.stdout)")
        for (path, outcome) in found["files"]?.object ?? [:] {
            #expect(outcome.string == "PermissionError", "the other user read \(path): \(outcome)")
        }
        for environ in found["environ"]?.array ?? [] {
            #expect(environ.string == "PermissionError", "the other user read the browser's environment")
        }
        // The person's browser still gets in with the file.
        let seen = try waitForRecord(record)
        let file = try #require(seen.argv.first.flatMap { URL(string: $0) }?.path)
        let browsed = try browse(launchFile: file)
        #expect(browsed.hasPrefix("200 True /s/"), "\(browsed)")
    }

    @Test func aFixedPortAnotherProgramHoldsIsRefusedAndItsHolderNamed() throws {
        try vaultWithOneAccount()
        defer { _ = try? run(["agent", "stop"]) }
        let (descriptor, port) = try LoopbackPort.bound()
        defer { close(descriptor) }
        try #require(listen(descriptor, 1) == 0)
        let refused = try run(["ui", "--port", String(port), "--no-open"])
        #expect(refused.status != 0)
        #expect(refused.stdout.isEmpty, "no URL for a server that is not ours")
        #expect(refused.stderr.contains("127.0.0.1:\(port) is in use by another program of yours (pid \(getpid())"))
        #expect(refused.stderr.contains("Leave out --port"))
        // Any free port works, and then the app stays where it is.
        let any = try run(["ui", "--no-open"])
        #expect(any.status == 0)
        let bound = try #require(any.lines.first.flatMap { URL(string: $0) }?.port)
        let other = try LoopbackPort.unused()
        let moved = try run(["ui", "--port", String(other), "--no-open"])
        #expect(moved.status != 0 && moved.stdout.isEmpty)
        #expect(moved.stderr.contains("already listens on 127.0.0.1:\(bound), not \(other)"), "\(moved.stderr)")
        #expect(try run(["ui", "--port", String(bound), "--no-open"]).status == 0)
    }

    /// The review's note on port squatting: another user holds the port the person asks for.
    @Test(.enabled(if: OtherLocalUser.available, OtherLocalUser.reason))
    func aFixedPortAnotherUserHoldsIsRefused() throws {
        try vaultWithOneAccount()
        defer { _ = try? run(["agent", "stop"]) }
        let port = try LoopbackPort.unused()
        let squatter = try OtherLocalUser.start([
            "python3", "-c",
            "import socket, time; s = socket.socket(); s.bind(('127.0.0.1', \(port))); s.listen(); "
                + "print('listening', flush=True); time.sleep(60)",
        ])
        defer { squatter.terminate() }
        let ready = (squatter.standardOutput as? Pipe)?.fileHandleForReading.availableData ?? Data()
        try #require(String(decoding: ready, as: UTF8.self).contains("listening"))
        let (browser, record) = try recorder()
        let refused = try run(["ui", "--port", String(port)], ["BROWSER": browser.path])
        #expect(refused.status != 0)
        #expect(refused.stdout.isEmpty)
        #expect(
            refused.stderr.contains("127.0.0.1:\(port) is held by another user (uid 65534 (nobody))"),
            "\(refused.stderr)"
        )
        Thread.sleep(forTimeInterval: 0.5)
        #expect(!FileManager.default.fileExists(atPath: record.path), "no browser was sent anywhere")
    }
}
