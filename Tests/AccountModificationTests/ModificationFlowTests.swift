import AccountModification
import Foundation
import Testing

/// The host-side flow as a plain state machine: every path, no I/O.
struct ModificationFlowTests {
    static let credential = PasswordCredential(user: "alice", password: "old-password")

    static func change(allowInteraction: Bool = true) -> ModificationFlow {
        ModificationFlow(
            kind: .changePassword(newPassword: "new-Password-1"),
            requestId: "r1",
            serviceIdentifier: "shiny.example",
            existingCredential: credential,
            allowInteraction: allowInteraction
        )
    }

    static func response(
        _ status: ModificationResponse.Status,
        _ extra: (inout ModificationResponse) -> Void = { _ in }
    )
        -> ModificationResponse
    {
        var response = ModificationResponse(requestId: "r1", status: status)
        extra(&response)
        return response
    }

    @Test func completesWithoutInteraction() {
        var flow = Self.change()
        guard case .send(.changePassword(let request)) = flow.start() else {
            Issue.record("expected a request")
            return
        }
        #expect(request.interaction == .none)
        #expect(request.newPassword == "new-Password-1")
        #expect(request.existingCredential == Self.credential)
        #expect(flow.handle(Self.response(.completed)) == .finish(.completed(updatedCredential: nil)))
        #expect(flow.isFinished)
    }

    @Test func keepsASubstitutedCredential() {
        var flow = Self.change()
        _ = flow.start()
        let substituted = PasswordCredential(user: "alice", password: "chosen-by-service")
        #expect(
            flow.handle(Self.response(.completed) { $0.updatedCredential = substituted })
                == .finish(.completed(updatedCredential: substituted))
        )
    }

    @Test func stepUpThenPollsUntilDone() {
        var flow = Self.change()
        _ = flow.start()
        guard case .send(.changePassword(let retry)) = flow.handle(Self.response(.userInteractionRequired)) else {
            Issue.record("expected a retry with interaction")
            return
        }
        #expect(retry.interaction == .allowed)
        #expect(
            flow.handle(Self.response(.presentInterface) { $0.interfaceURL = "https://shiny.example/step-up/r1" })
                == .presentInterface("https://shiny.example/step-up/r1")
        )
        #expect(
            flow.handle(Self.response(.presentInterface) { $0.interfaceURL = "https://shiny.example/step-up/r1" })
                == .poll
        )
        #expect(flow.handle(Self.response(.pending)) == .poll)
        #expect(flow.handle(Self.response(.completed)) == .finish(.completed(updatedCredential: nil)))
    }

    /// Security review High #3: the service's `interfaceURL` reached `$BROWSER`/`xdg-open` as argv[1]
    /// whatever it was (an option such as `--remote-debugging-port=…`, `file:`, another site). Only
    /// an https page of the service itself is ever presented; anything else ends the flow.
    @Test(arguments: [
        "--remote-debugging-port=9222", "-new-instance", "file:///etc/passwd", "javascript:alert(1)",
        "https://evil.example/step-up", "http://shiny.example/step-up", "https://shiny.example:8443/x",
        "https://shiny.example/a b", "https://shiny.example/\u{1B}[2J", "/step-up/r1",
    ])
    func onlyTheServicesOwnPagesArePresented(_ url: String) {
        var flow = Self.change()
        _ = flow.start()
        _ = flow.handle(Self.response(.userInteractionRequired))
        let action = flow.handle(Self.response(.presentInterface) { $0.interfaceURL = url })
        guard case .finish(.failed(let error)) = action else {
            Issue.record("\(url) led to \(action)")
            return
        }
        #expect(error.localizedFailureReason?.contains("not an https page of the service") == true)
    }

    @Test func loopbackServicesMayUsePlainHTTP() {
        #expect(ModificationFlow.isPresentable("http://127.0.0.1:8080/step-up/1", for: "http://127.0.0.1:8080"))
        #expect(!ModificationFlow.isPresentable("http://127.0.0.1:9090/step-up/1", for: "http://127.0.0.1:8080"))
        #expect(ModificationFlow.isPresentable("https://shiny.example/x", for: "https://shiny.example/login"))
    }

    @Test func interactionRequiredAsAnErrorCodeToo() {
        var flow = Self.change()
        _ = flow.start()
        let action = flow.handle(Self.response(.failed) { $0.error = .init(code: .userInteractionRequired) })
        guard case .send(.changePassword(let retry)) = action else {
            Issue.record("expected a retry")
            return
        }
        #expect(retry.interaction == .allowed)
    }

    @Test func headlessRunsFailWhenThePersonIsNeeded() {
        var flow = Self.change(allowInteraction: false)
        _ = flow.start()
        guard case .finish(.failed(let error)) = flow.handle(Self.response(.userInteractionRequired)) else {
            Issue.record("expected a failure")
            return
        }
        #expect(error.code == .userInteractionRequired)
    }

    @Test func failuresCarryTheServicesReason() {
        var flow = Self.change()
        _ = flow.start()
        let error = ModificationError(code: .failed, localizedFailureReason: "Passwords need a digit.")
        #expect(flow.handle(Self.response(.failed) { $0.error = error }) == .finish(.failed(error)))
    }

    @Test func cancelReachesTheServiceAndEndsAsUserCanceled() {
        var flow = Self.change()
        _ = flow.start()
        _ = flow.handle(Self.response(.userInteractionRequired))
        _ = flow.handle(Self.response(.presentInterface) { $0.interfaceURL = "https://shiny.example/x" })
        #expect(flow.cancel() == .cancel)
        guard
            case .finish(.failed(let error)) = flow.handle(
                Self.response(.failed) { $0.error = .init(code: .userCanceled) }
            )
        else {
            Issue.record("expected userCanceled")
            return
        }
        #expect(error.code == .userCanceled)
    }

    @Test func aServiceThatFinishedBeforeTheCancelWins() {
        var flow = Self.change()
        _ = flow.start()
        _ = flow.handle(Self.response(.userInteractionRequired))
        _ = flow.handle(Self.response(.presentInterface) { $0.interfaceURL = "https://shiny.example/x" })
        #expect(flow.cancel() == .cancel)
        // The person confirmed a moment before cancelling: the new password is real and must be kept.
        #expect(flow.handle(Self.response(.completed)) == .finish(.completed(updatedCredential: nil)))
    }

    @Test func cancellingBeforeStartingTouchesNothing() {
        var flow = Self.change()
        guard case .finish(.failed(let error)) = flow.cancel() else {
            Issue.record("expected a failure")
            return
        }
        #expect(error.code == .userCanceled)
    }

    @Test func lostConnectionsAreIndeterminateUnlessNeverDelivered() {
        var refused = Self.change()
        _ = refused.start()
        guard case .finish(.failed) = refused.transportFailed("connection refused", delivered: false) else {
            Issue.record("a refused connection changed nothing")
            return
        }
        var lost = Self.change()
        _ = lost.start()
        #expect(lost.transportFailed("timed out", delivered: true) == .finish(.indeterminate(reason: "timed out")))
    }

    @Test(arguments: [
        ModificationResponse(requestId: "other", status: .completed),
        ModificationResponse(requestId: "r1", status: .presentInterface),
        ModificationResponse(
            requestId: "r1",
            status: .needsSignInAuthorization,
            signInRequest: .init(state: "s", nonce: "n")
        ),
    ])
    func protocolViolationsFail(_ response: ModificationResponse) {
        var flow = Self.change()
        _ = flow.start()
        guard case .finish(.failed(let error)) = flow.handle(response) else {
            Issue.record("expected a failure for \(response)")
            return
        }
        #expect(error.localizedFailureReason?.contains("unexpectedly") == true)
    }

    @Test func conversionObtainsAndHandsOverAnAuthorization() {
        var flow = ModificationFlow(
            kind: .convertToSignIn(clientId: "shiny"),
            requestId: "r1",
            serviceIdentifier: "shiny.example",
            existingCredential: Self.credential
        )
        guard case .send(.convertToSignIn) = flow.start() else {
            Issue.record("expected a conversion request")
            return
        }
        let signIn = SignInRequest(state: "state-1", nonce: "nonce-1", clientId: "shiny")
        #expect(
            flow.handle(Self.response(.needsSignInAuthorization) { $0.signInRequest = signIn })
                == .obtainSignInAuthorization(signIn)
        )
        let authorization = SignInAuthorization(user: "u", identityToken: "t", authorizationCode: "c", state: "state-1")
        #expect(flow.authorizationObtained(authorization) == .sendAuthorization(authorization))
        #expect(flow.handle(Self.response(.completed)) == .finish(.completed(updatedCredential: nil)))
    }

    /// Security review Low #17: the provider answered with an error (the person declined), the
    /// error was posted, and a service answering `completed` finished the conversion — the record
    /// lost its password for an empty sign-in link. Now that ends as a failure.
    @Test(arguments: [
        SignInAuthorization(error: "user_cancelled_authorize"),
        SignInAuthorization(user: "", identityToken: "t", authorizationCode: "c", state: "state-1"),
    ])
    func aConversionNeverCompletesWithoutAnAuthorization(_ answer: SignInAuthorization) {
        var flow = ModificationFlow(
            kind: .convertToSignIn(clientId: "shiny"),
            requestId: "r1",
            serviceIdentifier: "shiny.example",
            existingCredential: Self.credential
        )
        _ = flow.start()
        let signIn = SignInRequest(state: "state-1", nonce: "nonce-1", clientId: "shiny")
        _ = flow.handle(Self.response(.needsSignInAuthorization) { $0.signInRequest = signIn })
        #expect(flow.authorizationObtained(answer) == .sendAuthorization(answer))
        guard case .finish(.failed(let error)) = flow.handle(Self.response(.completed)) else {
            Issue.record("a conversion completed after \(answer)")
            return
        }
        #expect(error.localizedFailureReason?.contains("without a sign-in authorization") == true)
    }

    /// Security review High #1, at the flow: a service whose manifest names its own client asks for
    /// an authorization for another service's client id. The flow ends there, before the provider is
    /// asked; a request naming no client gets the manifest's.
    @Test func aConversionIsAuthorizedForTheManifestsClientOnly() {
        var flow = ModificationFlow(
            kind: .convertToSignIn(clientId: "com.evil.web"),
            requestId: "r1",
            serviceIdentifier: "evil.example",
            existingCredential: Self.credential
        )
        _ = flow.start()
        let stolen = SignInRequest(state: "bank-state", nonce: "attacker-chosen-nonce", clientId: "com.bank.web")
        guard
            case .finish(.failed(let error)) = flow.handle(
                Self.response(.needsSignInAuthorization) {
                    $0.signInRequest = stolen
                }
            )
        else {
            Issue.record("an authorization for another client was not refused")
            return
        }
        #expect(error.localizedFailureReason?.contains("another client (com.bank.web)") == true)
        #expect(flow.isFinished)

        var unnamed = ModificationFlow(
            kind: .convertToSignIn(clientId: "com.evil.web"),
            requestId: "r1",
            serviceIdentifier: "evil.example",
            existingCredential: Self.credential
        )
        _ = unnamed.start()
        #expect(
            unnamed.handle(
                Self.response(.needsSignInAuthorization) { $0.signInRequest = .init(state: "s", nonce: "n") }
            )
                == .obtainSignInAuthorization(SignInRequest(state: "s", nonce: "n", clientId: "com.evil.web"))
        )
    }

    @Test func messagesUseTheDocumentedJSON() throws {
        let request = ChangePasswordRequest(
            requestId: "r1",
            serviceIdentifier: "shiny.example",
            existingCredential: nil,
            newPassword: "n",
            userInfo: ["sessionToken": "t"],
            interaction: .allowed
        )
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        #expect(
            String(decoding: try encoder.encode(request), as: UTF8.self)
                == #"{"interaction":"allowed","newPassword":"n","requestId":"r1","serviceIdentifier":"shiny.example","userInfo":{"sessionToken":"t"}}"#
        )
        #expect("\(PasswordCredential(user: "a", password: "secret"))".contains("secret") == false)
    }
}
