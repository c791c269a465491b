public import AccountModification
import Foundation
import HTTPTypes
public import Hummingbird
import NIOCore
import Synchronization

/// Serves the account-modification protocol for an ``AccountModificationExtension`` on a Hummingbird
/// router: the manifest at `/.well-known/account-modification` and the endpoints under
/// `/account-modification` (docs/openapi/account-modification.yaml).
///
/// ```swift
/// let kit = AccountModificationKit(
///     extension: MyExtension(),
///     manifest: .init(
///         endpoint: "/account-modification",
///         supportsStrongPasswordChange: true, supportsUpgradeToSignIn: false,
///         passwordGenerationRequirements: "minlength: 12; required: digit;"),
///     origin: "https://example.com")
/// kit.addRoutes(to: router)
/// ```
///
/// A relative endpoint in the manifest, and a relative interface URL from the extension, are made
/// absolute against ``origin`` — the service's public origin, from its configuration. Never from
/// the request's `Host` or `X-Forwarded-*` headers: a client (or a shared cache in front of the
/// service) could otherwise make the manifest send passwords elsewhere (security review L18).
///
/// Every request is recorded before the extension runs, so `GET requests/{id}` can tell a client that
/// crashed what happened. Requests are idempotent by id: the same request again returns its current
/// answer; a different request with the same id is a conflict (409). Records live in memory (at most
/// ``maximumRecords``): when the book is full the oldest *finished* record is dropped (its answer
/// stays in the ``ModificationLedger``); open ones are never dropped, so while the book holds only
/// open requests a new one is refused (503) rather than breaking one in flight.
public struct AccountModificationKit<Extension: AccountModificationExtension>: Sendable {
    /// What `/.well-known/account-modification` publishes (read on each request, so a service can
    /// turn sign-in upgrades on once it is registered with a provider).
    public var manifest: AccountModificationManifest { makeManifest() }
    let makeManifest: @Sendable () -> AccountModificationManifest
    /// The service's public origin (`https://example.com`, no path), from its configuration.
    public var origin: String { Self.trimmed(makeOrigin()) }
    let makeOrigin: @Sendable () -> String
    public let `extension`: Extension
    /// Durable answers, if the service keeps them (see ``ModificationLedger``).
    public let ledger: (any ModificationLedger)?
    /// How long a call waits for the extension's first answer before replying `pending`.
    public var answerTimeout: Duration
    /// How many requests the kit keeps in memory.
    public var maximumRecords: Int { book.limit }
    let book: RequestBook

    /// - Parameters:
    ///   - origin: the service's public origin (`https://example.com`): where people and Keyhaven
    ///     reach it. Relative URLs in answers are made absolute against it.
    ///   - maximumRecords: how many requests are kept in memory (finished ones make room).
    public init(
        extension: Extension,
        manifest: AccountModificationManifest,
        origin: String,
        ledger: (any ModificationLedger)? = nil,
        answerTimeout: Duration = .seconds(20),
        maximumRecords: Int = 10_000
    ) {
        self.init(
            extension: `extension`,
            manifest: { manifest },
            origin: { origin },
            ledger: ledger,
            answerTimeout: answerTimeout,
            maximumRecords: maximumRecords
        )
    }

    /// With a manifest and an origin that may change while the service runs (a service that learns
    /// its port when it binds, or turns sign-in upgrades on later).
    public init(
        extension: Extension,
        manifest: @escaping @Sendable () -> AccountModificationManifest,
        origin: @escaping @Sendable () -> String,
        ledger: (any ModificationLedger)? = nil,
        answerTimeout: Duration = .seconds(20),
        maximumRecords: Int = 10_000
    ) {
        self.extension = `extension`
        self.makeManifest = manifest
        self.makeOrigin = origin
        self.ledger = ledger
        self.answerTimeout = answerTimeout
        self.book = RequestBook(limit: max(1, maximumRecords))
    }

    /// The path prefix of the endpoints.
    public static var basePath: String { "/account-modification" }

    /// The context of an open request, for the service's own pages (a step-up page finishes the
    /// request through it).
    public func context(for requestId: String) async -> ModificationContext? {
        guard let record = book.record(requestId) else { return nil }
        return await record.context
    }

    public func addRoutes<Context: RequestContext>(to router: Router<Context>) {
        router.get("/.well-known/account-modification") { _, _ in
            var published = manifest
            published.endpoint = Self.absolute(published.endpoint, origin: origin)
            return published
        }
        let group = router.group(RouterPath(Self.basePath))
        group.post("change-password") { request, context in
            try await handleStart(request, kind: .changePassword, from: Self.clientAddress(context))
        }
        group.post("convert-to-sign-in") { request, context in
            try await handleStart(request, kind: .convertToSignIn, from: Self.clientAddress(context))
        }
        group.post("convert-to-passkey") { request, context in
            try await handleStart(request, kind: .convertToPasskey, from: Self.clientAddress(context))
        }
        group.get("requests/:id") { _, context -> ModificationResponse in
            let id = context.parameters.get("id") ?? ""
            guard let record = book.record(id) else {
                guard let saved = recordedAnswer(id) else { throw ProtocolErrorResponse.unknownRequest }
                return saved.response
            }
            return await record.response
        }
        group.post("requests/:id/cancel") { _, context -> ModificationResponse in
            let id = context.parameters.get("id") ?? ""
            guard let record = book.record(id) else {
                // Not in memory (a restart, or long finished): its recorded final answer.
                guard let saved = recordedAnswer(id) else { throw ProtocolErrorResponse.unknownRequest }
                return saved.response
            }
            if await !record.isFinal, let modification = await record.context {
                await self.extension.cancelRequest(modification)
                await record.finish(
                    ModificationResponse(
                        requestId: record.requestId,
                        status: .failed,
                        error: .init(code: .userCanceled)
                    )
                )
            }
            return await record.response
        }
        group.post("requests/:id/sign-in-authorization") { request, context -> ModificationResponse in
            try await handOver(request, context, as: SignInAuthorization.self, what: "a sign-in authorization") {
                await $0.deliver($1)
            }
        }
        group.post("requests/:id/passkey-registration") { request, context -> ModificationResponse in
            try await handOver(request, context, as: PasskeyRegistration.self, what: "a passkey") {
                await $0.deliver($1)
            }
        }
    }

    /// What Keyhaven hands to a waiting extension (a sign-in authorization, a passkey): delivered,
    /// then the answer it leads to (within ``answerTimeout``). A request this process does not hold
    /// answers what the ledger recorded; one that waits for something else is a `400`.
    func handOver<Body: Decodable & Sendable>(
        _ request: Request,
        _ context: some RequestContext,
        as type: Body.Type,
        what: String,
        deliver: @Sendable (RequestRecord, Body) async -> Bool
    ) async throws -> ModificationResponse {
        let id = context.parameters.get("id") ?? ""
        guard let record = book.record(id) else {
            guard let saved = recordedAnswer(id) else { throw ProtocolErrorResponse.unknownRequest }
            // Nothing in this process waits for it: the recorded answer is final.
            return saved.response
        }
        guard let body: Body = await Self.decode(request) else {
            throw ProtocolErrorResponse.invalidRequest("the body is not \(what)")
        }
        let version = await record.version
        guard await deliver(record, body) else {
            if await record.isFinal { return await record.response }
            throw ProtocolErrorResponse.invalidRequest("this request is not waiting for \(what)")
        }
        await record.waitForChange(after: version + 1, timeout: answerTimeout)
        return await record.response
    }

    // MARK: Starting requests

    /// The answer to a new request (or to a retry of one), after waiting at most ``answerTimeout``
    /// for the extension.
    func handleStart(
        _ request: Request,
        kind: ModificationContext.Request.Kind,
        from address: String? = nil
    ) async throws(ProtocolErrorResponse) -> ModificationResponse {
        let incoming: ModificationContext.Request
        switch kind {
        case .changePassword:
            guard let body: ChangePasswordRequest = await Self.decode(request) else {
                throw .invalidRequest("the body is not a change-password request")
            }
            incoming = .init(
                kind: .changePassword,
                requestId: body.requestId,
                serviceIdentifier: body.serviceIdentifier,
                existingCredential: body.existingCredential,
                newPassword: body.newPassword,
                userInfo: body.userInfo,
                interaction: body.interaction
            )
        case .convertToSignIn, .convertToPasskey:
            guard let body: ConvertAccountRequest = await Self.decode(request) else {
                throw .invalidRequest("the body is not a \(kind.rawValue) request")
            }
            incoming = .init(
                kind: kind,
                requestId: body.requestId,
                serviceIdentifier: body.serviceIdentifier,
                existingCredential: body.existingCredential,
                newPassword: nil,
                userInfo: body.userInfo,
                interaction: body.interaction
            )
        }
        if let problem = Self.validate(incoming) {
            throw .invalidRequest(problem)
        }
        return try await start(incoming, from: address)
    }

    /// The peer's address, when the router's context knows it.
    static func clientAddress(_ context: some RequestContext) -> String? {
        (context as? any RemoteAddressRequestContext)?.remoteAddress?.ipAddress
    }

    /// Starts `incoming`, or answers it when it repeats a request the kit knows.
    func start(
        _ incoming: ModificationContext.Request,
        from address: String?
    ) async throws(ProtocolErrorResponse) -> ModificationResponse {
        let known = book.record(incoming.requestId)
        if let existing = known {
            let previous = await existing.fingerprint
            let answer = await existing.response
            if previous == incoming {
                return answer  // a retry: the same request again
            }
            var upgraded = previous
            upgraded.interaction = .allowed
            guard answer.status == .userInteractionRequired, incoming.interaction == .allowed, upgraded == incoming
            else {
                throw .conflict("another request already uses this requestId")
            }
        } else if let saved = recordedAnswer(incoming.requestId) {
            // Known from before a restart (or dropped from memory): the ledger keeps no secrets, so
            // the request is recognised by what it does keep.
            let summary = incoming.ledgerSummary
            if saved.request == nil || saved.request == summary {
                return saved.response  // a retry: exactly the recorded answer, the extension does not run again
            }
            var upgraded = saved.request
            upgraded?.interaction = .allowed
            guard saved.response.status == .userInteractionRequired, incoming.interaction == .allowed,
                upgraded == summary
            else {
                throw .conflict("another request already uses this requestId")
            }
        }
        let record = RequestRecord(incoming, ledger: ledger, book: book)
        let modification = ModificationContext(
            request: incoming,
            record: record,
            clientId: manifest.signIn?.clientId,
            clientAddress: address
        )
        await record.attach(modification)
        switch book.insert(record, replacing: known) {
        case .inserted: break
        case .full: throw .busy
        case .taken: return try await start(incoming, from: address)  // the same id arrived at the same time: now known
        }
        // Recorded before the extension runs: a crash from here on leaves an answer to find.
        await record.saveToLedger()
        let version = await record.version
        let extensionValue = self.extension
        let origin = self.origin
        Task {
            switch (incoming.kind, incoming.interaction) {
            case (.changePassword, .none):
                await extensionValue.changePasswordWithoutUserInteraction(modification)
            case (.convertToSignIn, .none):
                await extensionValue.convertAccountToSignInWithoutUserInteraction(modification)
            case (.convertToPasskey, .none):
                await extensionValue.convertAccountToPasskeyWithoutUserInteraction(modification)
            case (_, .allowed):
                let url: String? =
                    switch incoming.kind {
                    case .changePassword: await extensionValue.prepareInterfaceToChangePassword(modification)
                    case .convertToSignIn: await extensionValue.prepareInterfaceToConvertAccountToSignIn(modification)
                    case .convertToPasskey: await extensionValue.prepareInterfaceToConvertAccountToPasskey(modification)
                    }
                if let url, await !record.isFinal {
                    let absolute = Self.absolute(url, origin: origin)
                    await record.set(
                        ModificationResponse(
                            requestId: incoming.requestId,
                            status: .presentInterface,
                            interfaceURL: absolute
                        )
                    )
                    return
                }
            }
            let waiting = await record.response.status
            if await !record.isFinal, waiting != .needsSignInAuthorization, waiting != .needsPasskeyRegistration {
                await record.finish(
                    ModificationResponse(
                        requestId: incoming.requestId,
                        status: .failed,
                        error: .init(code: .failed, localizedFailureReason: "The service did not finish this request.")
                    )
                )
            }
        }
        await record.waitForChange(after: version, timeout: answerTimeout)
        return await record.response
    }

    /// What the ledger holds for a request the book does not. An answer that was still open when
    /// the service stopped can no longer change (its extension is gone): it becomes `failed`, saved,
    /// so every later poll, retry or cancel answers the same.
    func recordedAnswer(_ id: String) -> ModificationLedgerEntry? {
        guard var saved = ledger?.load(id) else { return nil }
        if !saved.response.isSettled {
            saved.response = ModificationResponse(
                requestId: id,
                status: .failed,
                error: .init(
                    code: .failed,
                    localizedFailureReason: "The service restarted before finishing this request."
                )
            )
            ledger?.save(saved)
        }
        return saved
    }

    static func validate(_ request: ModificationContext.Request) -> String? {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._~-")
        guard (1...128).contains(request.requestId.count), request.requestId.allSatisfy(allowed.contains) else {
            return "requestId must be 1 to 128 characters of A-Z a-z 0-9 . _ ~ -"
        }
        guard !request.serviceIdentifier.isEmpty, request.serviceIdentifier.count <= 2048 else {
            return "serviceIdentifier must be a domain or URL"
        }
        if let password = request.newPassword, password.isEmpty || password.count > 1024 {
            return "newPassword must be 1 to 1024 characters"
        }
        if let credential = request.existingCredential, credential.password.count > 1024 || credential.user.count > 1024
        {
            return "existingCredential is too long"
        }
        return nil
    }

    /// An origin without a trailing slash.
    static func trimmed(_ origin: String) -> String {
        var origin = origin
        while origin.hasSuffix("/") { origin.removeLast() }
        return origin
    }

    /// `url` when absolute, else `origin` + `url` (a manifest may give its endpoint as a path).
    static func absolute(_ url: String, origin: String) -> String {
        url.hasPrefix("/") ? origin + url : url
    }

    // MARK: Request bodies

    static func decode<T: Decodable>(_ request: Request) async -> T? {
        guard let buffer = try? await request.body.collect(upTo: 64 << 10) else { return nil }
        return try? JSONDecoder().decode(T.self, from: Data(buffer.readableBytesView))
    }
}

/// All requests in memory, by id, at most `limit` of them. Finished records (settled answers) are
/// queued in the order they finished; making room drops the oldest of them. Open records are never
/// dropped: their extension still works on them, and Keyhaven may still cancel, poll or hand over an
/// authorization.
final class RequestBook: Sendable {
    struct State {
        var records: [String: RequestRecord] = [:]
        /// Records in the order they finished; entries whose id now names another record (a request
        /// started again with interaction) are skipped.
        var finished: [RequestRecord] = []
        var head = 0
    }

    let limit: Int
    private let state = Mutex(State())

    init(limit: Int) { self.limit = limit }

    func record(_ id: String) -> RequestRecord? { state.withLock { $0.records[id] } }

    enum Insertion {
        case inserted
        /// The book holds only open records.
        case full
        /// Another record took the id since the caller looked.
        case taken
    }

    /// Adds `record` in place of `expected` (what the caller saw under its id: nil, or a request now
    /// started again with interaction), first dropping the oldest finished record when the book is
    /// full. Nothing changes unless the answer is `.inserted`.
    func insert(_ record: RequestRecord, replacing expected: RequestRecord?) -> Insertion {
        state.withLock { state in
            let current = state.records[record.requestId]
            guard current === expected else { return .taken }
            if current == nil && state.records.count >= limit {
                var dropped = false
                while state.head < state.finished.count {
                    let oldest = state.finished[state.head]
                    state.head += 1
                    if state.records[oldest.requestId] === oldest {
                        state.records.removeValue(forKey: oldest.requestId)
                        dropped = true
                        break
                    }
                }
                if state.head > 64 && state.head * 2 > state.finished.count {
                    state.finished.removeFirst(state.head)
                    state.head = 0
                }
                guard dropped else { return .full }
            }
            state.records[record.requestId] = record
            return .inserted
        }
    }

    /// `record`'s answer is settled: it may make room from now on.
    func settled(_ record: RequestRecord) {
        state.withLock { $0.finished.append(record) }
    }

    var count: Int { state.withLock { $0.records.count } }
}

extension RequestRecord {
    func attach(_ context: ModificationContext) { self.context = context }
}
