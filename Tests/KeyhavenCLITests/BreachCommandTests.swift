import BreachCheck
import Foundation
import KeyhavenTesting
import Testing

/// `keyhaven breach index build | check | serve` end to end, and a plain Python `requests` client
/// against the range server.
struct BreachCommandTests {
    let directory: URL
    let keyhaven = CommandRunner.keyhaven()
    let passwords: [(String, Int)]
    let source: URL

    init() throws {
        directory = try TemporaryDirectory.make()
        var rng = SeededRandomNumberGenerator(seed: 21)
        passwords = (0..<3000).map { ("password-\($0)", Int.random(in: 1...100_000, using: &rng)) }
        source = directory.appendingPathComponent("pwned.txt")
        var lines = passwords.map { "\(SHA1Digest(password: $0.0).hex):\($0.1)" }
        lines.shuffle(using: &rng)
        lines.insert("this line is broken", at: 1000)
        try Data(lines.joined(separator: "\r\n").utf8).write(to: source)
    }

    func buildIndex(compact: Bool = false) throws -> String {
        let index = directory.appendingPathComponent(compact ? "compact.khbi" : "full.khbi").path
        let result = try keyhaven.run(
            ["breach", "index", "build", source.path, "--output", index] + (compact ? ["--compact"] : [])
        )
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("Indexed 3000 hashes from 3001 lines (1 malformed)"))
        #expect(result.stderr.contains("skipped line 1001"))
        return index
    }

    @Test func checkWithAnIndex() throws {
        let index = try buildIndex()
        let input = ["password-5", "not breached at all", "password-2999"].joined(separator: "\n") + "\n"
        let result = try keyhaven.run(["breach", "check", "--index", index], stdin: input)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.lines == [String(passwords[5].1), "0", String(passwords[2999].1)])

        let hashes = [SHA1Digest(password: "password-7").hex.lowercased(), SHA1Digest(password: "nope").hex].joined(
            separator: "\n"
        )
        let bySHA1 = try keyhaven.run(["breach", "check", "--index", index, "--sha1"], stdin: hashes)
        #expect(bySHA1.lines == [String(passwords[7].1), "0"])
        let bad = try keyhaven.run(["breach", "check", "--index", index, "--sha1"], stdin: "xyz\n")
        #expect(bad.status == 1 && bad.stderr.contains("line 1"))

        let compact = try buildIndex(compact: true)
        let approximate = try keyhaven.run(["breach", "check", "--index", compact], stdin: "password-5\nnope\n")
        let expected = 1 << min(15, Int.bitWidth - 1 - passwords[5].1.leadingZeroBitCount)
        #expect(approximate.lines == [String(expected), "0"])
        #expect(try keyhaven.run(["breach", "index", "info", compact]).stdout.contains("compact index: 3000 hashes"))
        let serveCompact = try keyhaven.run(["breach", "serve", "--index", compact, "--port", "1"])
        #expect(serveCompact.status == 1 && serveCompact.stderr.contains("cannot answer range requests"))
    }

    /// A crafted index (a correct header checksum, a bucket table pointing past the records) is
    /// refused when the server starts, with a message, not when the first request reads outside
    /// the file; a lookup through damaged compact bucket sizes fails the same way.
    @Test func serveAndCheckRefuseACraftedIndex() throws {
        var full = try Data(contentsOf: URL(fileURLWithPath: try buildIndex()))
        let buckets = (0..<8).reduce(0) { $0 | Int(full[40 + $1]) << (8 * $1) }
        for offset in 0..<8 { full[buckets + 8 + offset] = 0xFF }
        let crafted = directory.appendingPathComponent("crafted.khbi")
        try full.write(to: crafted)
        let serve = try keyhaven.run([
            "breach", "serve", "--index", crafted.path, "--port", String(try LoopbackPort.unused()),
        ])
        #expect(serve.status == 1)
        #expect(serve.stderr.contains("bucket 1 starts at an impossible record"), "\(serve.stderr)")
        #expect(serve.stderr.contains("rebuild it"))

        var compact = try Data(contentsOf: URL(fileURLWithPath: try buildIndex(compact: true)))
        let sizes = (0..<8).reduce(0) { $0 | Int(compact[40 + $1]) << (8 * $1) }
        let sizesLength = (0..<8).reduce(0) { $0 | Int(compact[48 + $1]) << (8 * $1) }
        for offset in sizes..<(sizes + sizesLength) { compact[offset] = 0xEE }
        let damaged = directory.appendingPathComponent("damaged.khbi")
        try compact.write(to: damaged)
        let input = passwords.prefix(200).map(\.0).joined(separator: "\n")
        let check = try keyhaven.run(["breach", "check", "--index", damaged.path], stdin: input)
        #expect(check.status == 1)
        #expect(check.stderr.contains("bucket sizes are inconsistent"), "\(check.stderr)")
        #expect(check.stdout.isEmpty)
    }

    @Test func anotherFileIsNotAnIndex() throws {
        let result = try keyhaven.run(["breach", "check", "--index", source.path], stdin: "x\n")
        #expect(result.status == 1)
        #expect(result.stderr.contains("not a Keyhaven breach index"))
    }

    @Test func offlineAPIIsAClearError() throws {
        let result = try keyhaven.run(["breach", "check", "--api", "http://127.0.0.1:1"], stdin: "password\n")
        #expect(result.status == 1)
        #expect(result.stderr.contains("cannot reach http://127.0.0.1:1"))
        #expect(result.stdout.isEmpty)
    }

    @Test(.enabled(if: ExternalTools.pythonClients, ExternalTools.pythonClientsReason))
    func serveAnswersPythonRequestsAndOurClient() throws {
        let index = try buildIndex()
        let port = try LoopbackPort.unused()
        let server = Process()
        server.executableURL = keyhaven.executable
        server.arguments = ["breach", "serve", "--index", index, "--port", String(port)]
        server.standardOutput = FileHandle.nullDevice
        server.standardError = FileHandle.nullDevice
        try server.run()
        defer { if server.isRunning { server.terminate() } }

        // A plain Python `requests` client, checked against what the text file implies.
        let script = """
            import hashlib, sys, time, requests
            base = "http://127.0.0.1:\(port)"
            for _ in range(100):
                try:
                    requests.get(base + "/", timeout=1); break
                except Exception:
                    time.sleep(0.1)
            expected = {}
            for line in open(sys.argv[1], encoding="utf-8", newline="").read().split("\\r\\n"):
                h, _, c = line.partition(":")
                if len(h) == 40 and c.isdigit():
                    expected.setdefault(h[:5], {})[h[5:]] = int(c)
            checked = 0
            for prefix in sorted(expected)[:200]:
                plain = requests.get(base + "/range/" + prefix.lower(), timeout=5)
                assert plain.status_code == 200, plain.status_code
                rows = plain.text.split("\\r\\n")
                assert rows == sorted(f"{s}:{c}" for s, c in expected[prefix].items()), prefix
                padded = requests.get(base + "/range/" + prefix, headers={"Add-Padding": "true"}, timeout=5)
                got = {}
                for row in padded.text.split("\\r\\n"):
                    s, _, c = row.partition(":")
                    if int(c) > 0: got[s] = int(c)
                assert got == expected[prefix], prefix
                assert 800 <= len(padded.text.split("\\r\\n")) <= 1000
                checked += 1
            empty = requests.get(base + "/range/FFFFF", timeout=5)
            assert empty.status_code == 200
            bad = requests.get(base + "/range/XYZ12", timeout=5)
            assert bad.status_code == 400, bad.status_code
            print(f"python requests: {checked} prefixes identical")
            """
        let python = CommandRunner(executable: URL(fileURLWithPath: "/usr/bin/env"))
        let result = try python.run(["python3", "-c", script, source.path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("200 prefixes identical"))

        // Our own client against our own server.
        let sample = passwords.prefix(50).map(\.0) + ["surely not breached 123"]
        let ours = try keyhaven.run(
            ["breach", "check", "--api", "http://127.0.0.1:\(port)"],
            stdin: sample.joined(separator: "\n")
        )
        #expect(ours.status == 0, "\(ours.stderr)")
        #expect(ours.lines == passwords.prefix(50).map { String($0.1) } + ["0"])

        // Graceful shutdown on SIGTERM.
        server.terminate()
        server.waitUntilExit()
        #expect(server.terminationStatus == 0)
    }
}
