import AutoFill
import Crypto
import Foundation
import KeyhavenTesting
import Testing
import Vault
import _KeyhavenSupport

@testable import KeyhavenAgent

#if canImport(Glibc)
import Glibc
#endif

/// The agent over its real Unix socket: private files, the CLI's requests, a browser's session
/// sealed end to end, and connections that break the framing or the order.
@Suite struct AgentServerTests {
    final class Running: @unchecked Sendable {
        let testVault: TestVault
        let directory: URL
        let server: AgentServer

        init() throws {
            testVault = try TestVault()
            directory = try TemporaryDirectory.make().appendingPathComponent("run")
            let agent = AutoFillAgent(.init(vaultURL: testVault.url, allowInsecureKDF: true))
            server = AgentServer(agent: agent, socketPath: directory.path + "/agent.sock", version: "test") {
                command,
                vault in
                (0, "ran \(command.arguments.joined(separator: " ")) with \(try! vault.count()) credentials", "")
            }
            try server.bind()
            Thread { [server] in server.serve() }.start()
        }

        deinit { server.stop() }

        func connect() throws -> FrameConnection { try #require(try UnixSocket.connect(to: server.socketPath)) }

        func ask(_ connection: FrameConnection, _ message: JSONValue) throws -> JSONValue {
            try connection.send(message)
            return try JSONValue.parse(try #require(try connection.receive()))
        }
    }

    @Test func theSocketIsPrivateFromTheStartAndASecondAgentIsRefused() throws {
        let running = try Running()
        var info = stat()
        #expect(stat(running.directory.path, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o700)
        #expect(stat(running.server.socketPath, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
        let second = AgentServer(
            agent: running.server.agent,
            socketPath: running.server.socketPath,
            version: "t",
            runCommand: nil
        )
        #expect(throws: AgentError.self) { try second.bind() }
    }

    @Test func theCLIUnlocksRunsCommandsWithTheVaultAndLocks() throws {
        let running = try Running()
        _ = try running.testVault.vault.add(
            CredentialContent(services: [ServiceIdentifier("example.com")], user: "ada", password: "p")
        )
        let cli = try running.connect()
        #expect(try running.ask(cli, ["v": 1, "id": 1, "type": "agent.status"])["ok"]?["state"]?.string == "locked")
        let refused = try running.ask(cli, ["v": 1, "id": 2, "type": "agent.run", "arguments": ["list"]])
        #expect(refused["error"]?["code"]?.string == "locked")
        let wrong = try running.ask(cli, ["v": 1, "id": 3, "type": "agent.unlock", "masterPassword": "nope"])
        #expect(wrong["error"]?["code"]?.string == "wrongPassword")
        let unlocked = try running.ask(
            cli,
            ["v": 1, "id": 4, "type": "agent.unlock", "masterPassword": .string(running.testVault.masterPassword)]
        )
        #expect(unlocked["ok"]?["state"]?.string == "unlocked")
        let ran = try running.ask(cli, ["v": 1, "id": 5, "type": "agent.run", "arguments": ["list", "--json"]])
        #expect(ran["ok"]?["standardOutput"]?.string == "ran list --json with 1 credentials")
        #expect(try running.ask(cli, ["v": 1, "id": 6, "type": "agent.sites"])["ok"] == ["example.com"])
        _ = try running.ask(cli, ["v": 1, "id": 7, "type": "agent.lock"])
        #expect(try running.ask(cli, ["v": 1, "id": 8, "type": "agent.status"])["ok"]?["state"]?.string == "locked")
    }

    @Test func aBrowserPairsAndTalksSealedAndNeverReachesTheCLIRequests() throws {
        let running = try Running()
        _ = try running.testVault.vault.add(
            CredentialContent(services: [ServiceIdentifier("example.com")], user: "ada", password: "pw-1")
        )
        let cli = try running.connect()
        _ = try running.ask(
            cli,
            ["v": 1, "id": 1, "type": "agent.unlock", "masterPassword": .string(running.testVault.masterPassword)]
        )

        let browser = try running.connect()
        try browser.send(
            ["v": 1, "type": "host.hello", "caller": "chrome-extension://x/", "browser": "chromium"] as JSONValue
        )
        #expect(try running.ask(browser, ["v": 1, "id": 1, "type": "hello"])["ok"]?["state"]?.string == "unlocked")
        // A browser's connection cannot use the CLI's requests, nor anything before a session.
        #expect(
            try running.ask(browser, ["v": 1, "id": 2, "type": "agent.run", "arguments": ["list"]])["error"]?["code"]?
                .string == "notPaired"
        )
        #expect(
            try running.ask(browser, ["v": 1, "id": 3, "type": "identities.query", "url": "https://example.com/"])[
                "error"
            ]?["code"]?.string == "notPaired"
        )

        let client = Curve25519.KeyAgreement.PrivateKey()
        let begun = try running.ask(
            browser,
            [
                "v": 1, "id": 4, "type": "pair.begin", "clientName": "Chromium",
                "clientPublicKey": .string(Base64URL.encode(client.publicKey.rawRepresentation)),
            ]
        )
        let code = try running.ask(cli, ["v": 1, "id": 2, "type": "agent.pairCode", "timeoutSeconds": 5])["ok"]?[
            "code"
        ]?.string
        let agentPublicText = try #require(begun["ok"]?["agentPublicKey"]?.string)
        let agentPublic = Data(try #require(Base64URL.decode(agentPublicText)))
        let pairingKey = try AutoFillCrypto.pairingKey(clientPrivateKey: client, agentPublicKey: agentPublic)
        let proof = AutoFillCrypto.proof(code: try #require(code), pairingKey: pairingKey)
        let finished = try running.ask(
            browser,
            [
                "v": 1, "id": 5, "type": "pair.finish", "pairingRequest": begun["ok"]!["pairingRequest"]!,
                "proof": .string(Base64URL.encode(proof)),
            ]
        )
        let pairingId = try #require(finished["ok"]?["pairingId"]?.string)
        let clientNonce = Data(repeating: 7, count: 16)
        let opened = try running.ask(
            browser,
            [
                "v": 1, "id": 6, "type": "session.open", "pairingId": .string(pairingId),
                "clientNonce": .string(Base64URL.encode(clientNonce)),
            ]
        )
        let agentNonceText = try #require(opened["ok"]?["agentNonce"]?.string)
        let agentNonce = Data(try #require(Base64URL.decode(agentNonceText)))
        var channel = SessionChannel(
            key: AutoFillCrypto.sessionKey(pairingKey: pairingKey, clientNonce: clientNonce, agentNonce: agentNonce),
            side: .extensionSide
        )

        func sealed(_ request: JSONValue) throws -> JSONValue {
            let (counter, box) = try channel.seal(request.encoded())
            let frame = try running.ask(
                browser,
                ["v": 1, "n": .number(Double(counter)), "sealed": .string(Base64URL.encode(box))]
            )
            let text = try #require(frame["sealed"]?.string)
            let bytes = Data(try #require(Base64URL.decode(text)))
            let replyCounter = try #require(frame["n"]?.integer)
            return try JSONValue.parse(try channel.open(counter: UInt64(replyCounter), sealed: bytes))
        }
        let query = try sealed(["v": 1, "id": 7, "type": "identities.query", "url": "https://example.com/login"])
        let identity = try #require(query["ok"]?["identities"]?.array?.first)
        #expect(identity["user"]?.string == "ada" && identity["match"]?.string == "exact")
        let provided = try sealed(
            [
                "v": 1, "id": 8, "type": "credential.provideWithoutUserInteraction",
                "recordIdentifier": identity["recordIdentifier"]!,
                "url": "https://example.com/login", "topURL": "https://example.com/",
            ])
        #expect(provided["ok"]?["credential"]?["password"]?.string == "pw-1")

        // Revoked from the CLI: the open session's next request is refused.
        _ = try running.ask(cli, ["v": 1, "id": 3, "type": "agent.revokePairing", "pairingId": .string(pairingId)])
        #expect(try sealed(["v": 1, "id": 9, "type": "state"])["error"]?["code"]?.string == "notPaired")

        // A replayed frame ends the connection.
        let (_, box) = try channel.seal(Data(#"{"v":1,"id":10,"type":"state"}"#.utf8))
        try browser.send(["v": 1, "n": 1, "sealed": .string(Base64URL.encode(box))] as JSONValue)
        #expect(try browser.receive() == nil)
    }

    @Test func aFrameOverOneMebibyteEndsTheConnection() throws {
        let running = try Running()
        let connection = try running.connect()
        try connection.send(["v": 1, "type": "host.hello", "caller": "x", "browser": "chromium"] as JSONValue)
        var header = Data()
        withUnsafeBytes(of: UInt32(Frames.maximumLength + 1).littleEndian) { header.append(contentsOf: $0) }
        _ = header.withUnsafeBytes { write(connection.output, $0.baseAddress!, $0.count) }
        #expect(try connection.receive() == nil)
    }
}
