import AutoFill
import Foundation
import KeyhavenApp
import KeyhavenTesting
import SecurityRecommendations
import Testing

@testable import KeyhavenWebApp

#if canImport(Glibc)
import Glibc
#endif

/// Who holds a loopback port and who is at the other end of a connection, from Linux's
/// `/proc/net/tcp(6)`: the web app refuses a port another user holds (review, "Port squatting")
/// and closes connections from other users' processes (``SameUserOnly``).
@Suite(.offCooperativePool) struct LoopbackTCPTests {
    /// Rows as Linux (little-endian) prints them: a listener of uid 65534 on 0.0.0.0:8080, and one
    /// connection 127.0.0.1:40000 → 127.0.0.1:7447 with both ends (uid 1000's client, uid 0's side).
    static let table = """
          sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
           0: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000 65534        0 4242 1 0000000000000000 100 0 0 10 0
           1: 0100007F:9C40 0100007F:1D17 01 00000000:00000000 00:00000000 00000000  1000        0 5151 1 0000000000000000 20 4 30 10 -1
           2: 0100007F:1D17 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 6161 1 0000000000000000 20 4 30 10 -1
        """
    static let table6 = """
          sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
           0: 0000000000000000FFFF00000100007F:9C41 0000000000000000FFFF00000100007F:1D17 01 00000000:00000000 00:00000000 00000000  1001        0 7171 1 0000000000000000 20 4 30 10 -1
           1: 00000000000000000000000000000000:1F91 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 8181 1 0000000000000000 100 0 0 10 0
        """

    static func endpoint(_ port: UInt16) -> LoopbackTCP.Endpoint {
        LoopbackTCP.Endpoint(address: [127, 0, 0, 1], port: port)
    }

    @Test func rowsAreReadAsTheKernelWritesThem() async throws {
        let sockets = LoopbackTCP.parse(Self.table) + LoopbackTCP.parse(Self.table6)
        #expect(sockets.count == 5)
        let listener = try #require(sockets.first)
        #expect(listener.local == LoopbackTCP.Endpoint(address: [0, 0, 0, 0], port: 8080))
        #expect(listener.state == LoopbackTCP.Socket.listening && listener.uid == 65534 && listener.inode == 4242)
        // ::ffff:127.0.0.1 (a dual-stack client) is 127.0.0.1.
        #expect(sockets[3].local == Self.endpoint(40001) && sockets[3].remote == Self.endpoint(7447))
        #expect(sockets[4].local == LoopbackTCP.Endpoint(address: Array(repeating: 0, count: 16), port: 8081))
        #expect(LoopbackTCP.parse("header\nnot a row\n   0: zz:1 00:0 0A").isEmpty)
    }

    @Test func theClientsOwnerIsTheOwnerOfItsEndOfTheConnection() async {
        let sockets = LoopbackTCP.parse(Self.table) + LoopbackTCP.parse(Self.table6)
        #expect(
            LoopbackTCP.owner(ofClient: Self.endpoint(40000), connectedTo: Self.endpoint(7447), in: sockets) == 1000
        )
        #expect(
            LoopbackTCP.owner(ofClient: Self.endpoint(40001), connectedTo: Self.endpoint(7447), in: sockets) == 1001
        )
        // Our own end (local 7447) is not the client's; an unknown client is nobody's.
        #expect(LoopbackTCP.owner(ofClient: Self.endpoint(7447), connectedTo: Self.endpoint(40000), in: sockets) == 0)
        #expect(LoopbackTCP.owner(ofClient: Self.endpoint(40002), connectedTo: Self.endpoint(7447), in: sockets) == nil)
        #expect(
            LoopbackTCP.owner(
                ofClient: LoopbackTCP.Endpoint(address: [127, 0, 0, 2], port: 40000),
                connectedTo: Self.endpoint(7447),
                in: sockets
            ) == nil
        )
    }

    @Test func aPortIsSaidToBeHeldByWhoeverListensThere() async throws {
        let sockets = LoopbackTCP.parse(Self.table) + LoopbackTCP.parse(Self.table6)
        let other = try #require(LoopbackTCP.describeHolder(ofPort: 8080, sockets: sockets, uid: 0))
        #expect(other.contains("127.0.0.1:8080 is held by another user (uid 65534"))
        #expect(other.contains("Leave out --port"))
        let own = try #require(LoopbackTCP.describeHolder(ofPort: 8081, sockets: sockets, uid: 0))
        #expect(own.contains("in use by another program of yours"))
        #expect(LoopbackTCP.describeHolder(ofPort: 7447, sockets: sockets, uid: 0) == nil)  // no listener
        #expect(LoopbackTCP.describeHolder(ofPort: 8080, sockets: nil, uid: 0) == nil)
    }

    @Test func aListenerOfOursIsNamedWithItsProcess() async throws {
        let (descriptor, port) = try LoopbackPort.bound()
        defer { close(descriptor) }
        try #require(listen(descriptor, 1) == 0)
        let said = try #require(LoopbackTCP.describeHolder(ofPort: port))
        #expect(said.contains("127.0.0.1:\(port) is in use by another program of yours (pid \(getpid()),"), "\(said)")
        // The web app refuses it and says so.
        let app = try makeApp()
        let error = try await #require(throws: WebAppError.self) { try await app.start(port: port) }
        #expect(error.code == .cannotListen)
        #expect(error.message.contains("another program of yours (pid \(getpid())"), "\(error.message)")
    }

    @Test func anAppThatListensAlreadyRefusesAnotherPort() async throws {
        let app = try makeApp()
        defer { app.stop() }
        let port = try await app.start(port: 0)
        #expect(try await app.start(port: 0) == port)
        #expect(try await app.start(port: port) == port)
        let other = try LoopbackPort.unused()
        let error = try await #require(throws: WebAppError.self) { try await app.start(port: other) }
        #expect(error.message.contains("already listens on 127.0.0.1:\(port), not \(other)"), "\(error.message)")
    }

    // MARK: Another local user

    /// A listener of uid 65534 on 127.0.0.1:PORT (python3 as `nobody`), until the process is stopped.
    static func foreignListener() throws -> (Process, Int) {
        let port = try LoopbackPort.unused()
        let process = try OtherLocalUser.start([
            "python3", "-c",
            "import socket, time; s = socket.socket(); s.bind(('127.0.0.1', \(port))); s.listen(); "
                + "print('listening', flush=True); time.sleep(60)",
        ])
        let output = (process.standardOutput as? Pipe)?.fileHandleForReading
        let line = String(decoding: output?.availableData ?? Data(), as: UTF8.self)
        try #require(line.contains("listening"), "the other user's listener did not start")
        return (process, port)
    }

    @Test(.enabled(if: OtherLocalUser.available, OtherLocalUser.reason))
    func aPortAnotherUserHoldsIsRefusedAndTheUserNamed() async throws {
        let (listener, port) = try Self.foreignListener()
        defer { listener.terminate() }
        let app = try makeApp()
        let error = try await #require(throws: WebAppError.self) { try await app.start(port: port) }
        #expect(error.code == .cannotListen)
        #expect(
            error.message.contains("127.0.0.1:\(port) is held by another user (uid 65534 (nobody))"),
            "\(error.message)"
        )
        #expect(app.port == nil)
    }

    /// Defence in depth (review #3 and #5): whatever another user holds (a launch URL, a cookie), its
    /// processes' connections are closed before a byte is read, and a launch secret it tries is not
    /// used up: the person's browser still gets in with it.
    @Test(.enabled(if: OtherLocalUser.available, OtherLocalUser.reason))
    func connectionsFromAnotherUserAreClosedUnread() async throws {
        let h = try await WebAppTests.Harness()
        let launch = h.app.launchURL()
        let path = String(launch.dropFirst(h.origin.count))
        let script = """
            import socket, sys
            s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
            for path in sys.argv[2:]:
                try:
                    s.sendall(f"GET {path} HTTP/1.1\\r\\nHost: 127.0.0.1:{sys.argv[1]}\\r\\n\\r\\n".encode())
                    data = s.recv(65536)
                    print("answered" if data else "closed", data[:12])
                except OSError as error:
                    print("closed", type(error).__name__)
                break
            """
        for target in ["/assets/app.js", path] {
            let result = try OtherLocalUser.run(["python3", "-c", script, String(h.port), target])
            #expect(result.stdout.hasPrefix("closed"), "\(target): \(result.stdout)\(result.stderr)")
        }
        // The person is served, and the secret the other user tried still works.
        #expect(try await h.request("/assets/app.js").status == 200)
        #expect(try await h.request(path).status == 200)
    }

    func makeApp() throws -> WebApp {
        WebApp(
            agent: AutoFillAgent(vaultURL: try TestVault().url, allowInsecureKDF: true),
            services: .init(
                breachSource: { _, _ in .none(reason: "") },
                auditNetwork: { _ in .none },
                upgradeEnvironment: WebAppTests.NoUpgrades()
            )
        )
    }
}
