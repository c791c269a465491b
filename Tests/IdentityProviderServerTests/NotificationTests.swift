import Foundation
import HTTPTypes
import Hummingbird
import IdentityProvider
import IdentityProviderTestSupport
import KeyhavenJOSE
import KeyhavenTesting
import Logging
import NIOCore
import NIOPosix
import RelyingParty
import Synchronization
import Testing

/// Server-to-server notifications: the receiver is down for a while, then up (and failing at first);
/// every event arrives, verified, none lost.
@Suite(.offCooperativePool)
struct NotificationTests {
    final class Receiver: Sendable {
        let received = Mutex<[(jti: String, type: String, sub: String)]>([])
        let posts = Mutex(0)
        /// The first answers are 503, as a receiver that is up but not ready.
        let failFirst: Int

        init(failFirst: Int) { self.failFirst = failFirst }

        func router(verifier: IdentityTokenVerifier) -> Router<BasicRequestContext> {
            let router = Router()
            router.post("/notifications") { request, _ in
                let count = self.posts.withLock { value -> Int in
                    value += 1
                    return value
                }
                if count <= self.failFirst { return Response(status: .serviceUnavailable) }
                let body = try await request.body.collect(upTo: 1 << 16)
                let (claims, event) = try await verifier.verifyNotification(Array(body.readableBytesView))
                self.received.withLock { $0.append((claims.jti, event.type, event.sub)) }
                return Response(status: .ok)
            }
            return router
        }
    }

    @Test(.timeLimit(.minutes(2))) func receiverDownThenUpGetsEveryEvent() async throws {
        let port = try LoopbackPort.unused()
        var configuration = ProviderHarness.configuration()
        configuration.notificationRetry = RetryPolicy(base: 100, cap: 400, lease: 5_000)
        try await ProviderHarness.with(configuration, notificationURL: "http://127.0.0.1:\(port)/notifications") {
            harness in
            let provider = harness.provider
            // Six people sign in to the service, three hiding their address.
            var users: [String] = []
            for index in 0..<6 {
                let email = "person\(index)@example.com"
                let (user, _) = try await provider.createUser(email: email, password: "password-\(index)")
                let request = try await provider.nativeAuthorizationRequest(
                    clientId: harness.clientId,
                    origin: "https://shiny.example.com",
                    scopes: ["email"],
                    state: nil,
                    nonce: nil
                ).get()
                let authentication = try await provider.authenticate(
                    email: email,
                    password: "password-\(index)",
                    code: nil
                )
                _ = try await provider.authorize(request, authentication: authentication, shareEmail: index % 2 == 0)
                users.append(user.id)
            }
            // The events: relay off and on again for the three who hide, two stop using, one deletes.
            var expected: [String: Int] = [:]
            for index in [1, 3, 5] {
                try await provider.setRelayForwarding(userId: users[index], clientId: harness.clientId, enabled: false)
                try await provider.setRelayForwarding(userId: users[index], clientId: harness.clientId, enabled: true)
                expected["email-disabled", default: 0] += 1
                expected["email-enabled", default: 0] += 1
            }
            for index in [0, 2] {
                try await provider.stopUsing(userId: users[index], clientId: harness.clientId)
                expected["consent-revoked", default: 0] += 1
            }
            try await provider.deleteAccount(userId: users[4])
            expected["account-delete", default: 0] += 1
            let total = expected.values.reduce(0, +)

            // Down: the sender keeps trying (at least three rounds) and nothing is lost.
            var whileDown = try await provider.outboxSummary()
            let downUntil = ContinuousClock.now + .seconds(30)
            while whileDown.attempts < 3 * total && ContinuousClock.now < downUntil {
                try await Task.sleep(for: .milliseconds(100))
                whileDown = try await provider.outboxSummary()
            }
            #expect(whileDown.pending == total)
            #expect(whileDown.attempts > total, "retried while the receiver was down")

            // Up: verify every notification with the kit.
            let receiver = Receiver(failFirst: 3)
            let verifier = harness.client().verifier
            let ready = AsyncStream.makeStream(of: Void.self)
            var logger = Logger(label: "test.receiver")
            logger.logLevel = .critical
            let app = Application(
                router: receiver.router(verifier: verifier),
                configuration: .init(address: .hostname("127.0.0.1", port: port)),
                onServerRunning: { _ in ready.continuation.yield() },
                logger: logger
            )
            let server = Task { try await app.run() }
            defer { server.cancel() }
            var iterator = ready.stream.makeAsyncIterator()
            _ = await iterator.next()

            let deadline = ContinuousClock.now + .seconds(60)
            var summary = try await provider.outboxSummary()
            while summary.pending > 0 && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
                summary = try await provider.outboxSummary()
            }
            let received = receiver.received.withLock { $0 }
            let distinct = Set(received.map(\.jti))
            var types: [String: Int] = [:]
            for jti in distinct { types[received.first { $0.jti == jti }!.type, default: 0] += 1 }
            print(
                "notifications: \(total) events, \(summary.attempts) delivery attempts "
                    + "(\(whileDown.attempts) while down), \(receiver.posts.withLock { $0 }) posts received, "
                    + "\(distinct.count) distinct delivered, \(received.count - distinct.count) duplicates, "
                    + "\(summary.pending) pending"
            )
            #expect(summary.pending == 0 && summary.delivered == total)
            #expect(distinct.count == total, "every event delivered, none lost")
            #expect(types == expected)
        }
    }
}
