import AutoFill
import Crypto
import Foundation
import KeyhavenApp
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
            let agent = AutoFillAgent(vaultURL: testVault.url, allowInsecureKDF: true)
            server = AgentServer(agent: agent, socketPath: directory.path + "/agent.sock", version: "test")
            try server.bind()
            // The test reads the socket synchronously (blocking a thread of Swift's pool while it
            // waits): the server starts on the session's executor, as all its work runs there.
            Task(executorPreference: agent.session.taskExecutor) { [server] in try await server.serve() }
        }

        deinit { Task(executorPreference: server.agent.session.taskExecutor) { [server] in await server.stop() } }

        func connect() throws -> FrameConnection { try #require(try UnixSocket.connect(to: server.socketPath)) }

        func ask(_ connection: FrameConnection, _ message: JSONValue) throws -> JSONValue {
            try connection.send(message)
            return try JSONValue.parse(try #require(try connection.receive()))
        }

        /// One `agent.*` command, sent and read as the CLI does (``AgentCall``, ``AgentResponse``).
        func call<Reply>(_ connection: FrameConnection, _ call: AgentCall<Reply>) throws -> Reply {
            try connection.send(call.command.frame(id: 1))
            return try AgentResponse.decode(try #require(try connection.receive()), as: call).get()
        }

        /// One typed request of the CLI's (``SessionProtocol``) and its answer, each in parts when
        /// longer than a frame; `parts` counts the frames of the answer.
        func session(
            _ connection: FrameConnection,
            _ request: SessionRequest,
            parts: UnsafeMutablePointer<Int>? = nil
        ) throws -> SessionResponse {
            for frame in SessionProtocol.frames(try SessionProtocol.encode(request), limit: Frames.maximumLength) {
                try connection.send(frame)
            }
            var reply = try #require(try connection.receive())
            if let count = try SessionProtocol.parts(in: reply) {
                parts?.pointee = count
                reply = Data()
                for _ in 0..<count { reply.append(try #require(try connection.receive())) }
            }
            return try SessionProtocol.decodeResponse(reply)
        }
    }

    @Test func theSocketIsPrivateFromTheStartAndASecondAgentIsRefused() async throws {
        let running = try Running()
        var info = stat()
        #expect(stat(running.directory.path, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o700)
        #expect(stat(running.server.socketPath, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
        let second = AgentServer(
            agent: running.server.agent,
            socketPath: running.server.socketPath,
            version: "t"
        )
        #expect(throws: AgentError.self) { try second.bind() }
    }

    @Test func theCLIUnlocksAsksTypedRequestsAndLocks() async throws {
        let running = try Running()
        _ = try running.testVault.vault.add(
            CredentialContent(services: [ServiceIdentifier("example.com")], user: "ada", password: "p")
        )
        let cli = try running.connect()
        #expect(try running.ask(cli, ["v": 1, "id": 1, "type": "agent.status"])["ok"]?["state"]?.string == "locked")
        let locked = try running.session(cli, .list(deleted: false))
        #expect(locked.failureCode == .locked, "a locked agent refuses, not \(locked)")
        let wrong = try running.ask(cli, ["v": 1, "id": 3, "type": "agent.unlock", "masterPassword": "nope"])
        #expect(wrong["error"]?["code"]?.string == "wrongPassword")
        let unlocked = try running.ask(
            cli,
            ["v": 1, "id": 4, "type": "agent.unlock", "masterPassword": .string(running.testVault.masterPassword)]
        )
        #expect(unlocked["ok"]?["state"]?.string == "unlocked")
        guard case .listing(let listing) = try running.session(cli, .list(deleted: false)) else {
            Issue.record("a list request is answered with a listing")
            return
        }
        #expect(listing.credentials.map(\.user) == ["ada"] && listing.failures.isEmpty)
        // A write through the session is a change of the vault: the revision grows (browsers are
        // told, the AutoFill index is read again).
        let before = try #require(
            try running.ask(cli, ["v": 1, "id": 9, "type": "agent.status"])["ok"]?["revision"]?.integer
        )
        let added = try running.session(
            cli,
            .add(CredentialContent(services: [ServiceIdentifier("example.org")], user: "bob", password: "b"))
        )
        guard case .id(let id) = added else {
            Issue.record("an add is answered with the new id, not \(added)")
            return
        }
        let after = try #require(try running.ask(cli, ["v": 1, "id": 10, "type": "agent.status"])["ok"])
        #expect(after["revision"]?.integer ?? 0 > before && after["identities"]?.integer == 2)
        // The same answers, read as the CLI reads them: typed.
        let typed = try running.call(cli, .status)
        #expect(typed.session.state == .unlocked && typed.session.identities == 2 && typed.session.pairings == 0)
        #expect(typed.agentVersion == "test" && typed.pid == Int(getpid()) && typed.socket == running.server.socketPath)
        #expect(try running.call(cli, .sites) == ["example.com", "example.org"])
        #expect(try running.call(cli, .pairings).isEmpty)
        #expect(try running.testVault.vault.credential(id).user == "bob")
        // Argv no longer crosses the socket: `agent.run` is an unknown request.
        let run = try running.ask(cli, ["v": 1, "id": 11, "type": "agent.run", "arguments": ["list", "--json"]])
        #expect(run["error"]?["code"]?.string == "badRequest")
        #expect(run["ok"] == nil)
        // A request of another protocol version is refused, saying what to do.
        try cli.send(try SessionProtocol.encode(.list(deleted: false), id: 12, version: 2))
        let refused = try SessionProtocol.decodeResponse(try #require(try cli.receive()))
        #expect(refused.failureCode == .unsupportedVersion, "a version-2 request is refused, not \(refused)")
        if case .failure(let error) = refused { #expect(error.message.contains("restart the agent")) }
        let sites = try running.ask(cli, ["v": 1, "id": 6, "type": "agent.sites"])["ok"]
        #expect(sites == ["example.com", "example.org"])
        _ = try running.ask(cli, ["v": 1, "id": 7, "type": "agent.lock"])
        #expect(try running.ask(cli, ["v": 1, "id": 8, "type": "agent.status"])["ok"]?["state"]?.string == "locked")
        #expect(throws: AutoFillError(.locked, "")) { try running.call(cli, .pairings) }
        #expect(try running.call(cli, .unlock(masterPassword: running.testVault.masterPassword)).state == .unlocked)
        #expect(try running.call(cli, .lock) == AgentReply.State(.locked))
    }

    /// A message longer than a frame travels in parts, both ways: a credential with 1.5 MiB of
    /// notes is added, and the listing that holds it comes back whole.
    @Test func messagesLongerThanAFrameTravelInParts() async throws {
        let running = try Running()
        let cli = try running.connect()
        _ = try running.ask(
            cli,
            ["v": 1, "id": 1, "type": "agent.unlock", "masterPassword": .string(running.testVault.masterPassword)]
        )
        let notes = String(repeating: "0123456789abcdef", count: 3 << 15)
        let content = CredentialContent(services: [ServiceIdentifier("example.com")], user: "ada", notes: notes)
        guard case .id(let id) = try running.session(cli, .add(content)) else {
            Issue.record("a long add is answered with the new id")
            return
        }
        var parts = 0
        let listed = try running.session(cli, .list(deleted: false), parts: &parts)
        #expect(parts == 2)
        guard case .listing(let listing) = listed else {
            Issue.record("a long listing arrives whole")
            return
        }
        #expect(listing.credentials.map(\.id) == [id] && listing.credentials.first?.notes == notes)
        // The connection goes on after it, and a header of too many parts is refused.
        #expect(try running.ask(cli, ["v": 1, "id": 2, "type": "agent.status"])["ok"]?["state"]?.string == "unlocked")
        try cli.send(Data(#"{"type":"session.parts","version":1,"parts":100000}"#.utf8))
        let refused = try SessionProtocol.decodeResponse(try #require(try cli.receive()))
        #expect(refused.failureCode == .badRequest)
        #expect(try cli.receive() == nil)
    }

    @Test func aBrowserPairsAndTalksSealedAndNeverReachesTheCLIRequests() async throws {
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

        // An extension from before CPace (protocol 1) is told to update.
        let old = try running.ask(
            browser,
            [
                "v": 1, "id": 4, "type": "pair.begin", "clientName": "Chromium",
                "clientPublicKey": .string(
                    Base64URL.encode(Curve25519.KeyAgreement.PrivateKey().publicKey.rawRepresentation)
                ),
            ]
        )
        #expect(old["error"]?["code"]?.string == "badRequest")
        #expect(old["error"]?["localizedFailureReason"]?.string?.contains("Update the extension") == true)
        #expect(try running.ask(browser, ["v": 1, "id": 4, "type": "hello"])["ok"]?["protocol"] == 2)

        let pairingNonce = Data(repeating: 5, count: 16)
        let begun = try running.ask(
            browser,
            [
                "v": 2, "id": 4, "type": "pair.begin",
                "clientNonce": .string(Base64URL.encode(pairingNonce)),
            ]
        )
        #expect(begun["v"] == 2 && begun["ok"]?["suite"]?.string == "CPACE-X25519-SHA512")
        let code = try running.ask(cli, ["v": 1, "id": 2, "type": "agent.pairCode", "timeoutSeconds": 5])["ok"]?[
            "code"
        ]?.string
        func decoded(_ name: String) throws -> Data {
            let text = try #require(begun["ok"]?[name]?.string)
            return Data(try #require(Base64URL.decode(text)))
        }
        let request = try #require(begun["ok"]?["pairingRequest"]?.string)
        // The caller and browser are the host.hello's, which the host took from its command line.
        let client = try PairingExchange(
            role: .extensionSide,
            context: PairingContext(
                code: try #require(code),
                request: request,
                browser: "chromium",
                caller: "chrome-extension://x/",
                clientNonce: pairingNonce,
                agentNonce: try decoded("agentNonce")
            ),
            scalar: Data(repeating: 9, count: 32)
        )
        let keys = try client.keys(otherShare: try decoded("agentShare"))
        let pairingKey = keys.pairingKey
        let finished = try running.ask(
            browser,
            [
                "v": 2, "id": 5, "type": "pair.finish", "pairingRequest": .string(request),
                "clientShare": .string(Base64URL.encode(client.share)),
                "clientConfirm": .string(Base64URL.encode(keys.clientConfirm)),
            ]
        )
        #expect(finished["ok"]?["agentConfirm"]?.string == Base64URL.encode(keys.agentConfirm))
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

        // Events are pushed, sealed, as the agent's types write them: a lock and an unlock from the CLI.
        func event() throws -> JSONValue {
            let frame = try JSONValue.parse(try #require(try browser.receive()))
            let text = try #require(frame["sealed"]?.string)
            let bytes = Data(try #require(Base64URL.decode(text)))
            let counter = UInt64(try #require(frame["n"]?.integer))
            return try JSONValue.parse(try channel.open(counter: counter, sealed: bytes))
        }
        _ = try running.ask(cli, ["v": 1, "id": 4, "type": "agent.lock"])
        #expect(try event() == ["v": 1, "event": "state", "state": "locked"])
        let replaced = try event()
        #expect(replaced["event"] == "identities.changed" && replaced["replaced"] == true && replaced["v"] == 1)
        _ = try running.ask(
            cli,
            ["v": 1, "id": 5, "type": "agent.unlock", "masterPassword": .string(running.testVault.masterPassword)]
        )
        #expect(try event() == ["v": 1, "event": "state", "state": "unlocked"])
        let again = try event()
        #expect(again["replaced"] == true && (again["revision"]?.integer ?? 0) > (replaced["revision"]?.integer ?? 0))

        // Revoked from the CLI: the open session's next request is refused.
        _ = try running.ask(cli, ["v": 1, "id": 3, "type": "agent.revokePairing", "pairingId": .string(pairingId)])
        #expect(try sealed(["v": 1, "id": 9, "type": "state"])["error"]?["code"]?.string == "notPaired")

        // A replayed frame ends the connection.
        let (_, box) = try channel.seal(Data(#"{"v":1,"id":10,"type":"state"}"#.utf8))
        try browser.send(["v": 1, "n": 1, "sealed": .string(Base64URL.encode(box))] as JSONValue)
        #expect(try browser.receive() == nil)
    }

    /// Review 2026-11-27 #9, over the socket: a relay (any process of the user) poses as the browser
    /// host, starts pairing, and sits between the person's extension and the agent. It cannot use
    /// the extension's reply, each of its own guesses costs a try, and after three it has nothing.
    @Test func aRelayOnTheSocketGetsThreeOnlineGuessesAndNoPairing() async throws {
        let running = try Running()
        let cli = try running.connect()
        _ = try running.ask(
            cli,
            ["v": 1, "id": 1, "type": "agent.unlock", "masterPassword": .string(running.testVault.masterPassword)]
        )
        let relay = try running.connect()
        try relay.send(
            ["v": 1, "type": "host.hello", "caller": "chrome-extension://x/", "browser": "chromium"] as JSONValue
        )
        func begin(_ id: Int, request: String? = nil) throws -> (nonce: Data, ok: JSONValue) {
            let nonce = Data((0..<16).map { _ in UInt8.random(in: .min ... .max) })
            var message: JSONValue = [
                "v": 2, "id": .number(Double(id)), "type": "pair.begin",
                "clientNonce": .string(Base64URL.encode(nonce)),
            ]
            if let request, case .object(var members) = message {
                members["pairingRequest"] = .string(request)
                message = .object(members)
            }
            return (nonce, try #require(try running.ask(relay, message)["ok"]))
        }
        func data(_ value: JSONValue?) throws -> Data {
            let text = try #require(value?.string)
            return Data(try #require(Base64URL.decode(text)))
        }
        let first = try begin(1)
        let request = try #require(first.ok["pairingRequest"]?.string)
        // The person runs `keyhaven browser pair` and types the code into their extension, whose
        // messages went to the relay; the relay answered them with a share made from its guess.
        let code = try #require(
            try running.ask(cli, ["v": 1, "id": 2, "type": "agent.pairCode", "timeoutSeconds": 5])["ok"]?["code"]?
                .string
        )
        let guess = code == "000000" ? "000001" : "000000"
        let context = PairingContext(
            code: guess,
            request: request,
            browser: "chromium",
            caller: "chrome-extension://x/",
            clientNonce: Data(repeating: 1, count: 16),
            agentNonce: Data(repeating: 2, count: 16)
        )
        let relaySide = try PairingExchange(role: .agent, context: context, scalar: Data(repeating: 3, count: 32))
        var typed = context
        typed.code = code
        let extensionSide = try PairingExchange(
            role: .extensionSide,
            context: typed,
            scalar: Data(repeating: 4, count: 32)
        )
        let extensionConfirm = try extensionSide.keys(otherShare: relaySide.share).clientConfirm
        func finish(_ id: Int, share: Data, confirm: Data) throws -> JSONValue {
            try running.ask(
                relay,
                [
                    "v": 2, "id": .number(Double(id)), "type": "pair.finish", "pairingRequest": .string(request),
                    "clientShare": .string(Base64URL.encode(share)),
                    "clientConfirm": .string(Base64URL.encode(confirm)),
                ]
            )
        }
        // Forwarded, the extension's reply belongs to its run with the relay: a wrong try.
        let forwarded = try finish(3, share: extensionSide.share, confirm: extensionConfirm)
        #expect(forwarded["error"]?["localizedFailureReason"]?.string == "The pairing code is wrong (2 more tries).")
        // Its own guesses, one per try.
        for (index, candidate) in ["111111", "222222", "333333"].filter({ $0 != code }).prefix(2).enumerated() {
            let next = try begin(4 + 2 * index, request: request)
            var guessed = typed
            guessed.code = candidate
            guessed.clientNonce = next.nonce
            guessed.agentNonce = try data(next.ok["agentNonce"])
            let side = try PairingExchange(
                role: .extensionSide,
                context: guessed,
                scalar: Data(repeating: 5, count: 32)
            )
            let keys = try side.keys(otherShare: try data(next.ok["agentShare"]))
            let answer = try finish(5 + 2 * index, share: side.share, confirm: keys.clientConfirm)
            #expect(answer["error"]?["code"]?.string == "userCanceled")
        }
        let gone = try running.ask(
            relay,
            [
                "v": 2, "id": 9, "type": "pair.begin", "clientNonce": .string(Base64URL.encode(Data(count: 16))),
                "pairingRequest": .string(request),
            ]
        )
        #expect(gone["error"]?["code"]?.string == "notPaired")
        #expect(try running.ask(cli, ["v": 1, "id": 3, "type": "agent.pairings"])["ok"] == [])
    }

    /// Every frame on the socket is read once into an ``AgentFrame``: who calls, and which request.
    @Test func framesAreReadOnceIntoWhoCallsAndWhatTheyAsk() throws {
        func read(_ message: JSONValue) -> AgentFrame? { AgentFrame.read(message.encoded()) }
        #expect(
            read(["v": 1, "type": "host.hello", "caller": "chrome-extension://x/", "browser": "chromium"])
                == .browserHost(.success(BrowserHostHello(caller: "chrome-extension://x/", browser: "chromium")))
        )
        #expect(read(["type": "session", "version": 1, "id": 3, "request": [:]]) == .session)
        #expect(read(["type": "session.parts", "version": 1, "parts": 2]) == .sessionParts)
        #expect(read(["v": 1, "id": 4, "type": "agent.lock"]) == .command(id: 4, .success(.lock)))
        #expect(AgentFrame.read(Data("nope".utf8)) == nil)
        #expect(read([1, 2]) == nil)

        func refusal(_ message: JSONValue) -> String? {
            switch read(message) {
            case .browserHost(.failure(let error)), .command(_, .failure(let error)):
                "\(error.code.name): \(error.message)"
            default: nil
            }
        }
        #expect(
            refusal(["v": 2, "type": "host.hello", "caller": "x", "browser": "chromium"])?.contains("version 2") == true
        )
        #expect(refusal(["type": "host.hello", "caller": "x", "browser": "chromium"]) == "badRequest: v is missing.")
        #expect(refusal(["v": 2, "id": 1, "type": "agent.status"])?.contains("protocol version 2") == true)
        #expect(
            refusal(["v": 1, "id": 1, "type": "agent.run", "arguments": ["list"]])
                == "badRequest: Unknown request type."
        )
        #expect(refusal(["v": 1, "id": 1, "type": "identities.query"]) == "badRequest: Unknown request type.")
        #expect(
            refusal(["v": 1, "id": 1, "type": "agent.unlock", "masterPassword": ""])
                == "badRequest: masterPassword is missing."
        )
        #expect(refusal(["v": 1, "id": 1, "type": "agent.revokePairing"]) == "badRequest: pairingId is missing.")
        #expect(refusal(["v": 1, "id": 1, "type": "agent.ui", "port": 70000]) == "badRequest: port must be 0…65535.")

        // What the CLI sends is what the agent reads, for every command.
        let commands: [AgentCommand] = [
            .status, .unlock(masterPassword: "pw"), .lock, .stop, .pairCode(timeoutSeconds: 5),
            .pairCode(timeoutSeconds: nil), .pairings, .revokePairing(pairingId: "p1"), .sites,
            .ui(port: 8080, launchFile: true), .ui(port: nil, launchFile: nil),
        ]
        #expect(Set(commands.map(\.kind)) == Set(AgentCommand.Kind.allCases))
        for command in commands {
            let frame = command.frame(id: 7)
            #expect(frame["v"] == 1 && frame["id"] == 7 && frame["type"]?.string == command.kind.type)
            #expect(read(frame) == .command(id: 7, .success(command)), "\(frame)")
        }
    }

    /// A host of another protocol version is told why and the connection ends; a host.hello later
    /// on a CLI connection is refused and the connection goes on; a CLI command of another version
    /// is refused.
    @Test func versionsAreCheckedOnTheSocket() throws {
        let running = try Running()
        let host = try running.connect()
        let refused = try running.ask(host, ["v": 2, "type": "host.hello", "caller": "x", "browser": "chromium"])
        #expect(refused["error"]?["code"] == "badRequest")
        #expect(refused["error"]?["localizedFailureReason"]?.string?.contains("version 2") == true)
        #expect(try host.receive() == nil)

        let cli = try running.connect()
        #expect(try running.ask(cli, ["v": 2, "id": 1, "type": "agent.status"])["error"]?["code"] == "badRequest")
        let late = try running.ask(cli, ["v": 1, "type": "host.hello", "caller": "x", "browser": "chromium"])
        #expect(late["error"]?["localizedFailureReason"]?.string?.contains("opens a connection") == true)
        #expect(try running.ask(cli, ["v": 1, "id": 2, "type": "agent.status"])["ok"]?["state"] == "locked")
    }

    @Test func aFrameOverOneMebibyteEndsTheConnection() async throws {
        let running = try Running()
        let connection = try running.connect()
        try connection.send(["v": 1, "type": "host.hello", "caller": "x", "browser": "chromium"] as JSONValue)
        var header = Data()
        withUnsafeBytes(of: UInt32(Frames.maximumLength + 1).littleEndian) { header.append(contentsOf: $0) }
        _ = header.withUnsafeBytes { write(connection.output, $0.baseAddress!, $0.count) }
        #expect(try connection.receive() == nil)
    }

    /// Connections that arrive as the agent stops (NIO has accepted them, nobody has served them
    /// yet) are closed. NIO's async server drops such a connection with its stream, and an
    /// `NIOAsyncChannel` dropped unfinished traps the whole process (swift-nio#2637; it crashed
    /// CI once): a burst of clients and a stop, round after round.
    @Test func connectionsArrivingAsTheAgentStopsAreClosed() async throws {
        for _ in 0..<12 {
            let testVault = try TestVault()
            let directory = try TemporaryDirectory.make().appendingPathComponent("run")
            let agent = AutoFillAgent(vaultURL: testVault.url, allowInsecureKDF: true)
            let server = AgentServer(agent: agent, socketPath: directory.path + "/agent.sock", version: "test")
            try server.bind()
            let serving = Task(executorPreference: agent.session.taskExecutor) { try await server.serve() }
            var connections: [FrameConnection] = []
            for _ in 0..<32 {
                if let connection = try? UnixSocket.connect(to: server.socketPath) { connections.append(connection) }
            }
            await server.stop()
            try await serving.value
            // Every client hears the end: closed by the agent, or refused with the listener.
            for connection in connections { #expect((try? connection.receive()) == nil) }
        }
    }

    /// Ctrl-C of `keyhaven sync join` ends its connection: the agent stops the join too, rather
    /// than wait on and enrol unseen (its claim on the vault's sync is released at once). The sync
    /// server here accepts connections and never answers.
    @Test func aJoinWhoseCLIHasGoneIsStopped() async throws {
        let running = try Running()
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #expect(listener >= 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        #expect(bound == 0 && listen(listener, 8) == 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        let server = "http://127.0.0.1:\(UInt16(bigEndian: address.sin_port))"

        let cli = try running.connect()
        let unlocked = try running.ask(
            cli,
            ["v": 1, "id": 1, "type": "agent.unlock", "masterPassword": .string(running.testVault.masterPassword)]
        )
        #expect(unlocked["ok"]?["state"]?.string == "unlocked")
        let join = SessionRequest.syncJoin(
            server: server,
            deviceName: "phone",
            code: "K7QM-2XPA-9FRT-4HNW",
            timeoutSeconds: 600
        )
        let joining = try running.connect()
        for frame in SessionProtocol.frames(try SessionProtocol.encode(join), limit: Frames.maximumLength) {
            try joining.send(frame)
        }
        // The join holds the vault's sync while it waits: a second one is `busy`.
        try await Task.sleep(for: .milliseconds(300))
        let second = SessionRequest.syncJoin(
            server: server,
            deviceName: " ",
            code: "K7QM-2XPA-9FRT-4HNW",
            timeoutSeconds: 60
        )
        #expect(try running.session(cli, second).failureCode?.name == "busy")
        // Ctrl-C: the connection ends; the join stops, and a new one gets past the claim.
        shutdown(joining.input, Int32(SHUT_RDWR))
        var answer: SessionResponse?
        // (Without the stop, the claim is held until the client's 10-second timeout.)
        for _ in 0..<30 {
            try await Task.sleep(for: .milliseconds(100))
            answer = try running.session(cli, second)
            if answer?.failureCode?.name != "busy" { break }
        }
        #expect(
            answer?.failureCode?.name == "invalidInput",
            "the stopped join released the claim, not \(String(describing: answer))"
        )
    }
}

extension SessionResponse {
    /// The code of a refusal; nil for an answer.
    var failureCode: SessionError.Code? {
        if case .failure(let error) = self { error.code } else { nil }
    }
}
