import AccountModification
import Foundation
import Synchronization
import Testing

/// The runner's own limits: its deadline cancels a step-up the person never finishes, and the
/// cancellation flag (Ctrl-C) reaches the service.
struct ModificationRunnerTests {
    /// A service whose step-up never completes; records what it was asked.
    final class NeverFinishing: ModificationTransport, ModificationHost {
        let calls = Mutex<[String]>([])
        let presented = Mutex<[String]>([])
        /// False: the cancel, too, is answered `pending` forever (review Medium #8).
        let cancelSettles: Bool

        init(cancelSettles: Bool = true) {
            self.cancelSettles = cancelSettles
        }

        func record(_ call: String) { calls.withLock { $0.append(call) } }

        func send(_ request: ModificationFlow.Request) async throws -> ModificationResponse {
            guard case .changePassword(let change) = request else {
                throw ModificationTransportError(.unreachable, "?", delivered: false)
            }
            record(change.interaction == .allowed ? "send(interaction)" : "send")
            if change.interaction == .allowed {
                var response = ModificationResponse(requestId: change.requestId, status: .presentInterface)
                response.interfaceURL = "https://service.example/step-up/\(change.requestId)"
                return response
            }
            return ModificationResponse(requestId: change.requestId, status: .userInteractionRequired)
        }

        func status(requestId: String) async throws -> ModificationResponse {
            record("status")
            return ModificationResponse(requestId: requestId, status: .pending)
        }

        func cancel(requestId: String) async throws -> ModificationResponse {
            record("cancel")
            guard cancelSettles else { return ModificationResponse(requestId: requestId, status: .pending) }
            var response = ModificationResponse(requestId: requestId, status: .failed)
            response.error = ModificationError(code: .userCanceled)
            return response
        }

        func authorize(requestId: String, _ authorization: SignInAuthorization) async throws -> ModificationResponse {
            record("authorize")
            return ModificationResponse(requestId: requestId, status: .failed)
        }

        func presentInterface(_ url: String) async { presented.withLock { $0.append(url) } }

        func obtainSignInAuthorization(_ request: SignInRequest) async -> SignInAuthorization {
            SignInAuthorization(error: "unused")
        }
    }

    static func flow() -> ModificationFlow {
        ModificationFlow(
            kind: .changePassword(newPassword: "new-Password-1"),
            requestId: "r-deadline",
            serviceIdentifier: "service.example",
            existingCredential: PasswordCredential(user: "alice", password: "old-password")
        )
    }

    @Test func theDeadlineCancelsOnTheServiceAndSaysItTimedOut() async {
        let service = NeverFinishing()
        let runner = ModificationRunner(
            transport: service,
            host: service,
            pollInterval: .milliseconds(10),
            deadline: .milliseconds(300)
        )
        let started = ContinuousClock.now
        let outcome = await runner.run(Self.flow())
        let elapsed = ContinuousClock.now - started
        guard case .failed(let error) = outcome else {
            Issue.record("expected a failure, got \(outcome)")
            return
        }
        #expect(error.code == .failed)
        #expect(error.localizedFailureReason == "timed out waiting for the service")
        #expect(service.presented.withLock { $0 } == ["https://service.example/step-up/r-deadline"])
        let calls = service.calls.withLock { $0 }
        #expect(Array(calls.prefix(2)) == ["send", "send(interaction)"])
        #expect(calls.last == "cancel")
        #expect(calls.filter { $0 == "cancel" }.count == 1)
        #expect(elapsed >= .milliseconds(300))
    }

    /// Review Medium #8: a service that answers `pending` to everything, the cancel included, used
    /// to keep Keyhaven polling forever. The run now ends, undecided, so the journal keeps both
    /// passwords for reconciliation.
    @Test func aServiceThatNeverSettlesEndsUndecided() async {
        let service = NeverFinishing(cancelSettles: false)
        let runner = ModificationRunner(
            transport: service,
            host: service,
            pollInterval: .milliseconds(10),
            deadline: .milliseconds(200),
            cancelGrace: .milliseconds(200)
        )
        let outcome = await runner.run(Self.flow())
        guard case .indeterminate(let reason) = outcome else {
            Issue.record("expected an undecided outcome, got \(outcome)")
            return
        }
        #expect(reason.contains("did not settle"))
        let calls = service.calls.withLock { $0 }
        #expect(calls.filter { $0 == "cancel" }.count == 1)
        #expect(calls.contains("status"))
    }

    @Test func raisingTheFlagCancelsOnTheServiceAsUserCanceled() async {
        let service = NeverFinishing()
        let runner = ModificationRunner(transport: service, host: service, pollInterval: .milliseconds(10))
        let outcome = await runner.run(Self.flow()) {
            service.calls.withLock { calls in calls.filter { $0 == "status" }.count >= 3 }
        }
        guard case .failed(let error) = outcome else {
            Issue.record("expected a failure, got \(outcome)")
            return
        }
        #expect(error.code == .userCanceled)
        #expect(service.calls.withLock { $0.last } == "cancel")
    }

    @Test func aFlagRaisedBeforeStartingSendsNothing() async {
        let service = NeverFinishing()
        let runner = ModificationRunner(transport: service, host: service)
        let outcome = await runner.run(Self.flow()) { true }
        #expect(outcome == .failed(ModificationError(code: .userCanceled)))
        #expect(service.calls.withLock { $0 }.isEmpty)
    }
}
