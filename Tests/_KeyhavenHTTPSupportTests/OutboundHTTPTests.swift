import AsyncHTTPClient
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import KeyhavenTesting
import NIOCore
import NIOHTTP1
import Testing
import _KeyhavenHTTPSupport

/// The one outgoing client's policy: a redirect is handed back to the caller (who follows it by its
/// own rules, or not), and a refused connection fails at once instead of being retried until the
/// request's deadline.
struct OutboundHTTPTests {
    static func redirectingServer(followed: TestFlag) -> some ApplicationProtocol {
        let router = Router()
        router.get("/start") { _, _ in Response(status: .found, headers: [.location: "/target"]) }
        router.get("/target") { _, _ -> String in
            followed.raise()
            return "followed"
        }
        return Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
    }

    @Test func redirectsAreReturnedNotFollowed() async throws {
        let followed = TestFlag()
        try await Self.redirectingServer(followed: followed).test(.live) { server in
            let port = try #require(server.port)
            let client = OutboundHTTP.make()
            for http in [OutboundHTTP.shared, client] {
                let response = try await http.execute(
                    HTTPClientRequest(url: "http://127.0.0.1:\(port)/start"),
                    timeout: .seconds(10)
                )
                #expect(response.status == .found)
                #expect(response.headers.first(name: "Location") == "/target")
            }
            try await client.shutdown()
        }
        #expect(!followed.isRaised)
    }

    @Test func aRefusedConnectionFailsAtOnce() async throws {
        // Nothing listens on the discard port; a client that retried connecting would keep trying
        // until the 30-second deadline.
        let start = ContinuousClock.now
        await #expect(throws: (any Error).self) {
            _ = try await OutboundHTTP.shared.execute(
                HTTPClientRequest(url: "http://127.0.0.1:9/"),
                timeout: .seconds(30)
            )
        }
        #expect(ContinuousClock.now - start < .seconds(5))
    }
}
