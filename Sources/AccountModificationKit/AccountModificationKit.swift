public import AccountModification
import Foundation
import HTTPTypes
public import Hummingbird
import NIOCore

/// Serves the account-modification protocol for an ``AccountModificationExtension`` on a Hummingbird
/// router: the manifest at `/.well-known/account-modification` and the endpoints under
/// `/account-modification` (docs/openapi/account-modification.yaml).
///
/// ```swift
/// let kit = AccountModificationKit(extension: MyExtension(), manifest: .init(
///     endpoint: "https://example.com/account-modification",
///     supportsStrongPasswordChange: true, supportsUpgradeToSignIn: false,
///     passwordGenerationRequirements: "minlength: 12; required: digit;"))
/// kit.addRoutes(to: router)
/// ```
///
/// Every request is recorded before the extension runs, so `GET requests/{id}` can tell a client that
/// crashed what happened. Requests are idempotent by id: the same request again returns its current
/// answer; a different request with the same id is a conflict (409). Records live in memory (at most
/// ``maximumRecords``, the oldest finished ones dropped first).
public struct AccountModificationKit<Extension: AccountModificationExtension>: Sendable {
    /// What `/.well-known/account-modification` publishes (read on each request, so a service can
    /// turn sign-in upgrades on once it is registered with a provider).
    public var manifest: AccountModificationManifest { makeManifest() }
    let makeManifest: @Sendable () -> AccountModificationManifest
    public let `extension`: Extension
    /// Durable answers, if the service keeps them (see ``ModificationLedger``).
    public let ledger: (any ModificationLedger)?
    /// How long a call waits for the extension's first answer before replying `pending`.
    public var answerTimeout: Duration
    let book = RequestBook()
    public static var maximumRecords: Int { 10_000 }

    public init(
        extension: Extension,
        manifest: AccountModificationManifest,
        ledger: (any ModificationLedger)? = nil,
        answerTimeout: Duration = .seconds(20)
    ) {
        self.init(extension: `extension`, manifest: { manifest }, ledger: ledger, answerTimeout: answerTimeout)
    }

    /// With a manifest that may change while the service runs.
    public init(
        extension: Extension,
        manifest: @escaping @Sendable () -> AccountModificationManifest,
        ledger: (any ModificationLedger)? = nil,
        answerTimeout: Duration = .seconds(20)
    ) {
        self.extension = `extension`
        self.makeManifest = manifest
        self.ledger = ledger
        self.answerTimeout = answerTimeout
    }

    /// The path prefix of the endpoints.
    public static var basePath: String { "/account-modification" }

    /// The context of an open request, for the service's own pages (a step-up page finishes the
    /// request through it).
    public func context(for requestId: String) async -> ModificationContext? {
        guard let record = await book.record(requestId) else { return nil }
        return await record.context
    }

    public func addRoutes<Context: RequestContext>(to router: Router<Context>) {
        router.get("/.well-known/account-modification") { request, _ in
            var published = manifest
            published.endpoint = Self.absolute(published.endpoint, origin: Self.origin(of: request))
            return published
        }
        let group = router.group(RouterPath(Self.basePath))
        group.post("change-password") { request, _ in
            try await handleStart(request, kind: .changePassword)
        }
        group.post("convert-to-sign-in") { request, _ in
            try await handleStart(request, kind: .convertToSignIn)
        }
        group.get("requests/:id") { _, context -> ModificationResponse in
            let id = context.parameters.get("id") ?? ""
            guard let record = await book.record(id) else {
                guard var saved = ledger?.load(id) else { throw ProtocolErrorResponse.unknownRequest }
                if !saved.isSettled {
                    // Open when the service stopped: its extension is gone, so nothing more will happen.
                    saved = ModificationResponse(
                        requestId: id,
                        status: .failed,
                        error: .init(
                            code: .failed,
                            localizedFailureReason: "The service restarted before finishing this request."
                        )
                    )
                }
                return saved
            }
            return await record.response
        }
        group.post("requests/:id/cancel") { _, context -> ModificationResponse in
            guard let record = await book.record(context.parameters.get("id") ?? "") else {
                throw ProtocolErrorResponse.unknownRequest
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
            guard let record = await book.record(context.parameters.get("id") ?? "") else {
                throw ProtocolErrorResponse.unknownRequest
            }
            guard let authorization: SignInAuthorization = await Self.decode(request) else {
                throw ProtocolErrorResponse.invalidRequest("the body is not a sign-in authorization")
            }
            let version = await record.version
            guard await record.deliver(authorization) else {
                if await record.isFinal { return await record.response }
                throw ProtocolErrorResponse.invalidRequest("this request is not waiting for a sign-in authorization")
            }
            await record.waitForChange(after: version + 1, timeout: answerTimeout)
            return await record.response
        }
    }

    // MARK: Starting requests

    /// The answer to a new request (or to a retry of one), after waiting at most ``answerTimeout``
    /// for the extension.
    func handleStart(
        _ request: Request,
        kind: ModificationContext.Request.Kind
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
        case .convertToSignIn:
            guard let body: ConvertToSignInRequest = await Self.decode(request) else {
                throw .invalidRequest("the body is not a convert-to-sign-in request")
            }
            incoming = .init(
                kind: .convertToSignIn,
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
        if let existing = await book.record(incoming.requestId) {
            let previous = await existing.fingerprint
            let answer = await existing.response
            var upgraded = previous
            upgraded.interaction = .allowed
            if previous == incoming {
                return answer  // a retry: the same request again
            }
            guard answer.status == .userInteractionRequired, incoming.interaction == .allowed, upgraded == incoming
            else {
                throw .conflict("another request already uses this requestId")
            }
        }
        let record = RequestRecord(incoming, ledger: ledger)
        ledger?.save(ModificationResponse(requestId: incoming.requestId, status: .pending))
        let modification = ModificationContext(request: incoming, record: record, clientId: manifest.signIn?.clientId)
        await record.attach(modification)
        await book.insert(record)
        let version = await record.version
        let extensionValue = self.extension
        let origin = Self.origin(of: request)
        Task {
            switch (incoming.kind, incoming.interaction) {
            case (.changePassword, .none):
                await extensionValue.changePasswordWithoutUserInteraction(modification)
            case (.convertToSignIn, .none):
                await extensionValue.convertAccountToSignInWithoutUserInteraction(modification)
            case (.changePassword, .allowed), (.convertToSignIn, .allowed):
                let url =
                    incoming.kind == .changePassword
                    ? await extensionValue.prepareInterfaceToChangePassword(modification)
                    : await extensionValue.prepareInterfaceToConvertAccountToSignIn(modification)
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
            if await !record.isFinal, await record.response.status != .needsSignInAuthorization {
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

    /// `scheme://host[:port]` of the request as the client addressed it (`X-Forwarded-Proto` is
    /// honoured behind a proxy).
    static func origin(of request: Request) -> String {
        let scheme =
            request.headers[HTTPField.Name("X-Forwarded-Proto")!] ?? request.head.scheme ?? "http"
        let authority = request.head.authority ?? "localhost"
        return "\(scheme)://\(authority)"
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

/// All requests, by id.
actor RequestBook {
    private var records: [String: RequestRecord] = [:]
    private var order: [String] = []

    func record(_ id: String) -> RequestRecord? { records[id] }

    func insert(_ record: RequestRecord) {
        if records[record.requestId] == nil { order.append(record.requestId) }
        records[record.requestId] = record
        if order.count > AccountModificationKit<NeverExtension>.maximumRecords {
            let dropped = order.removeFirst()
            records.removeValue(forKey: dropped)
        }
    }
}

/// Only used to read the static limit.
struct NeverExtension: AccountModificationExtension {
    func changePasswordWithoutUserInteraction(_ context: ModificationContext) async {}
}

extension RequestRecord {
    func attach(_ context: ModificationContext) { self.context = context }
}
