import BreachCheck
import Foundation
import KeyhavenTesting
import Testing
import Vault

/// KeyhavenTesting is shipped to users: its fixtures must do what their documentation says.
struct KeyhavenTestingTests {
    @Test func seededRandomnessIsSplitMix64() {
        // SplitMix64's reference outputs for seed 0.
        var zero = SeededRandomNumberGenerator(seed: 0)
        #expect(zero.next() == 0xE220_A839_7B1D_CDAF)
        #expect(zero.next() == 0x6E78_9E6A_A1B9_65F4)
        var a = SeededRandomNumberGenerator(seed: 42)
        var b = SeededRandomNumberGenerator(seed: 42)
        var c = SeededRandomNumberGenerator(seed: 43)
        let first = (0..<8).map { _ in a.next() }
        #expect(first == (0..<8).map { _ in b.next() })
        #expect(first != (0..<8).map { _ in c.next() })
    }

    @Test func theClockMovesOnlyWhenTold() {
        let start = Date(timeIntervalSince1970: 1_700_000_000)
        let clock = TestClock(start)
        let now = clock.now  // taken before the clock moves, as code under test holds it
        #expect(now() == start)
        clock.advance(by: 90)
        #expect(now() == start.addingTimeInterval(90))
        clock.set(Date(timeIntervalSince1970: 5))
        #expect(now() == Date(timeIntervalSince1970: 5))
        #expect(TestClock().now() == Date(timeIntervalSince1970: 1_767_225_600))
    }

    @Test func testVaultsAreFreshAndReopenable() throws {
        let clock = TestClock()
        let one = try TestVault(now: clock.now)
        let two = try TestVault(masterPassword: "another")
        #expect(one.directory != two.directory)
        #expect(one.url.path == one.directory.appendingPathComponent("vault.sqlite").path)
        #expect(FileManager.default.fileExists(atPath: one.url.path))
        _ = try one.reopen()
        #expect(throws: VaultError(.wrongPassword, "")) {
            _ = try Vault.open(at: one.url, masterPassword: "another", allowInsecureKDF: true)
        }
        _ = try Vault.open(at: two.url, masterPassword: "another", allowInsecureKDF: true)
        let folder = try TemporaryDirectory.make()
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
        #expect(folder != (try TemporaryDirectory.make()))
    }

    @Test func fixturesAreReadBesideTheCallingFile() throws {
        struct Sample: Decodable, Equatable {
            var name: String
            var values: [Int]
        }
        #expect(Fixtures.url("sample.json").path.hasSuffix("Tests/KeyhavenTestingTests/Fixtures/sample.json"))
        #expect(try Fixtures.decode(Sample.self, "sample.json") == Sample(name: "fixture", values: [1, 2, 3]))
        #expect(throws: (any Error).self) { try Fixtures.data("missing.json") }
        let root = Fixtures.packageRoot()
        #expect(FileManager.default.fileExists(atPath: root.appendingPathComponent("Package.swift").path))
        #expect(
            root.appendingPathComponent("Tests/KeyhavenTestingTests").path
                == Fixtures.url("x").deletingLastPathComponent().deletingLastPathComponent().path
        )
    }

    @Test func theCommandRunnerCapturesStreamsStatusAndSignal() async throws {
        let shell = CommandRunner(executable: URL(fileURLWithPath: "/bin/sh"), environment: ["PATH": "/usr/bin:/bin"])
        let result = try shell.run(
            ["-c", #"read line; echo "out:$line:$EXTRA"; echo err >&2; exit 3"#],
            stdin: "hello\n",
            extraEnvironment: ["EXTRA": "x"]
        )
        #expect(result.status == 3 && result.signal == nil)
        #expect(result.stdout == "out:hello:x\n" && result.lines == ["out:hello:x"])
        #expect(result.stderr == "err\n")

        let killed = try await shell.runDetached(["-c", "kill -9 $$"])
        #expect(killed.signal == 9)

        // More than a pipe holds on both streams at once: read concurrently, no deadlock.
        let chatty = try await shell.runDetached([
            "-c", "head -c 300000 /dev/zero | tr '\\0' a; head -c 300000 /dev/zero >&2",
        ])
        #expect(chatty.status == 0 && chatty.stdout.utf8.count == 300_000 && chatty.stderr.utf8.count == 300_000)
    }

    @Test func aFlagRaisedInOneTaskIsSeenInAnother() async {
        let flag = TestFlag()
        #expect(!flag.isRaised)
        await Task.detached { flag.raise() }.value
        #expect(flag.isRaised)
    }

    @Test func externalToolGatesAnswerHonestly() {
        // A module that exists nowhere: missing, unless scripts/test.sh requires every tool (then the
        // suite runs and fails loudly instead of being skipped).
        #expect(ExternalTools.python(importing: ["keyhaven_no_such_module"]) == ExternalTools.required)
    }

    @Test func breachCorporaAreReproducibleAndWrittenInHIBPFormat() throws {
        let corpus = BreachCorpus(size: 500, seed: 3)
        let again = BreachCorpus(size: 500, seed: 3)
        #expect(corpus.present.map(\.digest) == again.present.map(\.digest))
        #expect(corpus.present.map(\.count) == again.present.map(\.count))
        #expect(Set(corpus.absent).isDisjoint(with: corpus.present.map(\.digest)))
        #expect(corpus.present.allSatisfy { (1...2_000_000).contains($0.count) })

        let url = try TemporaryDirectory.make().appendingPathComponent("pwned.txt")
        let broken = ["NOTAHASH:1", "ABCDEF:2"]
        let lines = try corpus.write(to: url, sorted: true, lineEnding: "\r\n", broken: broken)
        let text = try String(contentsOf: url, encoding: .utf8)
        #expect(text.hasSuffix("\r\n"))
        let rows = text.components(separatedBy: "\r\n").dropLast()
        #expect(rows.count == 502)
        #expect(lines.map { rows[$0 - 1] } == broken)
        let good = rows.filter { !broken.contains($0) }
        #expect(good == good.sorted())
        #expect(Set(good) == Set(corpus.present.map { "\($0.digest.hex):\($0.count)" }))
    }
}
