import Foundation
public import _KeyhavenSupport

/// Carries requests to a service (HTTP in production; in-process in tests).
public protocol ModificationTransport: Sendable {
    func send(_ request: ModificationFlow.Request) async throws -> ModificationResponse
    func status(requestId: String) async throws -> ModificationResponse
    func cancel(requestId: String) async throws -> ModificationResponse
    func authorize(requestId: String, _ authorization: SignInAuthorization) async throws -> ModificationResponse
    /// Posts the passkey made for a convert-to-passkey request.
    func registerPasskey(requestId: String, _ registration: PasskeyRegistration) async throws -> ModificationResponse
}

extension ModificationTransport {
    public func registerPasskey(
        requestId: String,
        _ registration: PasskeyRegistration
    ) async throws
        -> ModificationResponse
    {
        throw ModificationTransportError(.rejected, "this transport cannot carry passkeys", delivered: false)
    }
}

/// The person's side of a flow: showing pages and obtaining sign-in authorizations.
public protocol ModificationHost: Sendable {
    /// Shows the service's page (print it, open a browser…). Returns immediately.
    func presentInterface(_ url: String) async
    /// Obtains an authorization from the identity provider (after the consent step).
    func obtainSignInAuthorization(_ request: SignInRequest) async -> SignInAuthorization
    /// Creates (and journals) a passkey for the service's creation options.
    func createPasskey(_ options: JSONValue) async -> PasskeyRegistration
}

extension ModificationHost {
    public func createPasskey(_ options: JSONValue) async -> PasskeyRegistration {
        PasskeyRegistration(error: "this host cannot create passkeys")
    }
}

/// Drives a ``ModificationFlow`` with a transport, polling interval and deadline.
public struct ModificationRunner: Sendable {
    public var transport: any ModificationTransport
    public var host: any ModificationHost
    /// Between status polls while the person uses the service's page.
    public var pollInterval: Duration
    /// The whole flow's limit, interaction included; past it the request is cancelled.
    public var deadline: Duration
    /// How long the service has to settle a cancel (sent at the deadline or on Ctrl-C). Past it the
    /// run ends as `indeterminate`: the journal keeps both passwords and reconciliation asks the
    /// service later. A service answering `pending` forever cannot hold Keyhaven.
    public var cancelGrace: Duration
    let clock: ContinuousClock

    public init(
        transport: any ModificationTransport,
        host: any ModificationHost,
        pollInterval: Duration = .milliseconds(500),
        deadline: Duration = .seconds(600),
        cancelGrace: Duration = .seconds(30)
    ) {
        self.transport = transport
        self.host = host
        self.pollInterval = pollInterval
        self.deadline = deadline
        self.cancelGrace = cancelGrace
        clock = ContinuousClock()
    }

    /// Runs the flow to its outcome. `cancelled` is polled between steps (Ctrl-C sets it).
    public func run(
        _ flow: ModificationFlow,
        cancelled: @escaping @Sendable () -> Bool = { false }
    ) async
        -> ModificationFlow.Outcome
    {
        var flow = flow
        let end = clock.now.advanced(by: deadline)
        if cancelled() {
            return .failed(ModificationError(code: .userCanceled))  // nothing was sent
        }
        var action = flow.start()
        var cancelSent: ContinuousClock.Instant?
        while true {
            if cancelSent == nil && (cancelled() || clock.now >= end) && !flow.isFinished {
                if case .finish = action {
                } else {
                    cancelSent = clock.now
                    action = flow.cancel()
                }
            }
            if let cancelSent, clock.now >= cancelSent.advanced(by: cancelGrace) {
                if case .finish = action {
                } else {
                    return .indeterminate(
                        reason: "the service did not settle the request within \(cancelGrace) of being cancelled"
                    )
                }
            }
            do {
                switch action {
                case .send(let request):
                    action = flow.handle(try await transport.send(request))
                case .presentInterface(let url):
                    await host.presentInterface(url)
                    action = .poll
                case .poll:
                    try? await Task.sleep(for: pollInterval)
                    if cancelSent == nil && (cancelled() || clock.now >= end) { continue }
                    action = flow.handle(try await transport.status(requestId: flow.requestId))
                case .cancel:
                    do {
                        action = flow.handle(try await transport.cancel(requestId: flow.requestId))
                    } catch let error as ModificationTransportError where error.code == .unknownRequest {
                        // The service never recorded the request: nothing to undo.
                        return .failed(ModificationError(code: .userCanceled))
                    }
                case .obtainSignInAuthorization(let request):
                    let authorization = await host.obtainSignInAuthorization(request)
                    action = flow.authorizationObtained(authorization)
                case .sendAuthorization(let authorization):
                    action = flow.handle(try await transport.authorize(requestId: flow.requestId, authorization))
                case .createPasskey(let options):
                    action = flow.passkeyCreated(await host.createPasskey(options))
                case .sendPasskeyRegistration(let registration):
                    action = flow.handle(try await transport.registerPasskey(requestId: flow.requestId, registration))
                case .finish(let outcome):
                    if clock.now >= end, case .failed(let error) = outcome, error.code == .userCanceled, !cancelled() {
                        return .failed(
                            ModificationError(
                                code: .failed,
                                localizedFailureReason: "timed out waiting for the service"
                            )
                        )
                    }
                    return outcome
                }
            } catch let error as ModificationTransportError {
                action = flow.transportFailed(error.message, delivered: error.delivered)
            } catch {
                action = flow.transportFailed("\(error)", delivered: true)
            }
        }
    }
}
