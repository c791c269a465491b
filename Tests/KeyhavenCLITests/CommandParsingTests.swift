import ArgumentParser
import Foundation
import KeyhavenCLI
import KeyhavenTesting
import Testing

/// The command tree parsed in-process (no binary): what is accepted, what is refused with which
/// message, and what the help says.
struct CommandParsingTests {
    static func parses(_ arguments: [String]) -> Bool {
        (try? Keyhaven.parseAsRoot(arguments)) != nil
    }

    static func refusal(_ arguments: [String]) -> String? {
        do {
            _ = try Keyhaven.parseAsRoot(arguments)
            return nil
        } catch {
            return Keyhaven.message(for: error)
        }
    }

    @Test func upgradeTakesTypedChoices() throws {
        #expect(Self.parses(["upgrade", "example.com"]))
        #expect(Self.parses(["upgrade", "example.com", "--to", "sign-in", "--email", "hide"]))
        #expect(Self.parses(["upgrade", "--reconcile"]))
        #expect(Self.parses(["upgrade", "example.com", "--to", "passkey"]))
        let wrongTarget = try #require(Self.refusal(["upgrade", "example.com", "--to", "sso"]))
        #expect(
            wrongTarget.contains("strong-password") && wrongTarget.contains("sign-in")
                && wrongTarget.contains("passkey"),
            "\(wrongTarget)"
        )
        let wrongEmail = try #require(Self.refusal(["upgrade", "example.com", "--email", "maybe"]))
        #expect(wrongEmail.contains("share") && wrongEmail.contains("hide"), "\(wrongEmail)")
        let nothing = try #require(Self.refusal(["upgrade"]))
        #expect(nothing.contains("--reconcile"), "\(nothing)")
    }

    /// Issue 13 #16: `idp serve --port 0` without `--issuer` used to put port 0 in every token.
    @Test func aPickedPortNeedsAnIssuer() throws {
        let refused = try #require(Self.refusal(["idp", "serve", "--port", "0"]))
        #expect(refused.contains("--issuer"), "\(refused)")
        #expect(Self.parses(["idp", "serve", "--port", "0", "--issuer", "https://id.example.com"]))
        #expect(Self.parses(["idp", "serve", "--port", "8090"]))
    }

    /// `sync serve --public-url`: the URL devices use (its origin is what they sign for, threat
    /// S4); what is not an http(s) URL, or holds a user, a query or a fragment, is refused. The
    /// help says when it must be set.
    @Test func syncServeTakesThePublicURLDevicesUse() throws {
        #expect(Self.parses(["sync", "serve", "--public-url", "https://sync.example.com"]))
        #expect(Self.parses(["sync", "serve", "--public-url", "https://sync.example.com:8443/keyhaven/"]))
        for bad in [
            "ftp://sync.example.com", "sync.example.com", "https://user:pw@sync.example.com",
            "https://sync.example.com/?a=1", "https://sync.example.com/#top",
        ] {
            let refused = try #require(Self.refusal(["sync", "serve", "--public-url", bad]))
            #expect(refused.contains("--public-url"), "\(refused)")
        }
        // Devices refuse plain http to another machine, so they could never use it.
        for plain in ["http://sync.example.com", "http://192.168.1.20:8095", "http://[2001:db8::1]:8095"] {
            let refused = try #require(Self.refusal(["sync", "serve", "--public-url", plain]))
            #expect(refused.contains("--public-url") && refused.contains("https://"), "\(refused)")
        }
        #expect(Self.parses(["sync", "serve", "--public-url", "http://127.0.0.1:8095"]))
        #expect(Self.parses(["sync", "serve", "--public-url", "http://[::1]:8095"]))
        let help = try CommandRunner.keyhaven().run(["sync", "serve", "--help"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("--public-url") && help.stdout.contains("TLS"), "\(help.stdout)")
    }

    /// `sync serve --host` beyond loopback without `--public-url`: devices would have to sign for
    /// `http://HOST:PORT`, which they refuse off loopback (and `0.0.0.0` or `::` is no address a
    /// device uses), so every signature would fail: refused, saying what to pass.
    @Test func syncServeOffLoopbackNeedsThePublicURL() throws {
        for host in ["0.0.0.0", "::", "192.168.1.20", "sync.example.com"] {
            let refused = try #require(Self.refusal(["sync", "serve", "--host", host]))
            #expect(refused.contains("--host \(host)") && refused.contains("--public-url https://"), "\(refused)")
            #expect(
                Self.parses(["sync", "serve", "--host", host, "--public-url", "https://sync.example.com"]),
                "\(host)"
            )
        }
        for host in ["127.0.0.1", "127.0.0.2", "::1", "localhost"] {
            #expect(Self.parses(["sync", "serve", "--host", host]), "\(host)")
        }
        #expect(Self.parses(["sync", "serve"]))
    }

    /// `sync serve`'s startup line names the address it listens on and the origin devices sign
    /// for as serialised origins: an IPv6 host in brackets (`http://[::1]:PORT`), not `http://::1:PORT`.
    @Test(.timeLimit(.minutes(1))) func syncServeNamesItsOriginsSerialised() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("keyhaven-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let process = Process()
        process.executableURL = CommandRunner.keyhaven().executable
        let database = folder.appendingPathComponent("s.sqlite").path
        process.arguments = ["sync", "serve", "--host", "::1", "--port", "0", "--database", database]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        defer {
            if process.isRunning { process.terminate() }
        }
        // Read off the cooperative pool: `availableData` blocks until the server writes.
        let reading = errors.fileHandleForReading
        let line = await Task.detached {
            var text = ""
            while !text.contains("\n") {
                let data = reading.availableData
                if data.isEmpty { break }
                text += String(decoding: data, as: UTF8.self)
            }
            return text
        }.value
        #expect(line.contains("sync server on http://[::1]:"), "\(line)")
        #expect(line.contains("for devices at http://[::1]:"), "\(line)")
    }

    @Test func generateValidatesItsCount() throws {
        #expect(Self.parses(["generate", "--count", "3"]))
        let zero = try #require(Self.refusal(["generate", "--count", "0"]))
        #expect(zero.contains("--count"), "\(zero)")
    }

    @Test func auditFlags() {
        #expect(Self.parses(["audit", "--no-network", "--json"]))
        #expect(Self.parses(["audit", "--no-breach-check"]))
        #expect(!Self.parses(["audit", "--bogus"]))
    }

    @Test func helpNamesTheGroupsAndTheReconciliationPolicy() throws {
        let root = Keyhaven.helpMessage(columns: 200)
        for group in ["PASSWORDS", "VAULT", "SECURITY", "SIGN IN WITH KEYHAVEN"] {
            #expect(root.contains("\(group) SUBCOMMANDS"), "root help lacks \(group)")
        }
        let upgrade = try CommandRunner.keyhaven().run(["upgrade", "--help"])
        #expect(upgrade.status == 0)
        #expect(
            upgrade.stdout.contains("--reconcile") && upgrade.stdout.contains("asks the service"),
            "\(upgrade.stdout)"
        )
    }
}
