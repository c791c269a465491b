import Foundation
import HTTPTypes
public import Hummingbird
public import Logging
import NIOCore
import ServiceLifecycle
public import SyncServer
import UnixSignals
import VaultSync
import _KeyhavenSupport
public import _KeyhavenWeb

/// `keyhaven sync serve`: ``SyncServer/SyncService`` as the JSON API of `docs/openapi/sync.yaml`.
///
/// | | |
/// |---|---|
/// | `POST /v1/accounts` | create an account with its first device's key |
/// | `POST /v1/devices` | enrol a device approved by one already in |
/// | `POST /v1/auth/challenge`, `POST /v1/auth/token` | a signed challenge for a bearer token |
/// | `GET /v1/devices`, `DELETE /v1/devices/{id}` | list, revoke (bearer) |
/// | `POST /v1/join-requests` | a new device asks to join (open; kept 10 minutes) |
/// | `GET /v1/join-requests/{lookup}`, `POST /v1/join-requests/{lookup}/grant` | an enrolled device reads it, approves it (bearer) |
/// | `GET /v1/join-requests/{lookup}/grant` | the new device waits for its grant (open) |
/// | `POST /v1/push` | compare-and-swap one item: 200, 409 with the current item, 422 |
/// | `GET /v1/changes?since=N[&wait=S]` | delta since a cursor; with `wait`, a long poll |
///
/// Bodies are capped (413 with a JSON error): a push at the item cap in base64url plus a little,
/// anything else at 16 KiB. Every answer carries ``_KeyhavenWeb/SecurityHeaders`` and is never
/// cached.
public struct SyncHTTPServer: Sendable {
    public let service: SyncService

    public init(service: SyncService) {
        self.service = service
    }

    static let securityHeaders = SecurityHeaders(
        contentSecurityPolicy: ContentSecurityPolicy([.defaultSrc(.none), .frameAncestors(.none)])
    )

    /// The largest body of a request other than a push.
    static let smallBodyLimit = 16 << 10

    /// The largest push body: the payload cap in base64url, plus room for the other fields.
    var pushBodyLimit: Int { (service.configuration.maxItemBytes + 2) / 3 * 4 + 1024 }

    /// The client's address, for the per-address cap of join requests: the connection's peer,
    /// unless the peer is one of the trusted proxies and a client-address header is set: then the
    /// header's entries are read from the right (the one the nearest proxy appended), skipping
    /// trusted proxies. Entries further left are whatever the client claimed, never used.
    static func clientAddress(
        _ request: Request,
        _ context: WebRequestContext,
        _ configuration: SyncServerConfiguration
    ) -> String? {
        let peer = context.remoteAddress?.ipAddress
        let proxies = configuration.trustedProxies
        guard let header = configuration.clientAddressHeader, let name = HTTPField.Name(header), let peer,
            proxies.contains(peer)
        else { return peer }
        let entries = request.headers[values: name].joined(separator: ",").split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces) }
        return entries.reversed().first { !$0.isEmpty && !proxies.contains($0) } ?? peer
    }

    public func router() -> Router<WebRequestContext> {
        let router = Router(context: WebRequestContext.self, securityHeaders: Self.securityHeaders)
        let service = self.service
        let pushLimit = pushBodyLimit
        let v1 = router.group("v1")
        v1.post("accounts") { request, context in
            try await Self.answering(context) {
                let body = try await Self.decode(CreateAccountRequest.self, request, limit: Self.smallBodyLimit)
                let device = try await service.createAccount(
                    publicKey: try Self.bytes(body.publicKey, "publicKey"),
                    name: body.name,
                    signedFor: try Self.origin(body.origin),
                    proof: try Self.bytes(body.proof, "proof")
                )
                return try JSONResponse(DeviceJSON(device), status: .created).response
            }
        }
        v1.post("devices") { request, context in
            try await Self.answering(context) {
                let body = try await Self.decode(AddDeviceRequest.self, request, limit: Self.smallBodyLimit)
                let device = try await service.addDevice(
                    account: try Self.id(body.account, "account"),
                    publicKey: try Self.bytes(body.publicKey, "publicKey"),
                    name: body.name,
                    approver: try Self.id(body.approver, "approver"),
                    signedFor: try Self.origin(body.origin),
                    approval: try Self.bytes(body.approval, "approval"),
                    proof: try Self.bytes(body.proof, "proof")
                )
                return try JSONResponse(DeviceJSON(device), status: .created).response
            }
        }
        v1.post("auth/challenge") { request, context in
            try await Self.answering(context) {
                let body = try await Self.decode(ChallengeRequest.self, request, limit: Self.smallBodyLimit)
                let issued = try await service.challenge(device: try Self.id(body.device, "device"))
                return try JSONResponse(
                    ChallengeResponse(challenge: issued.challenge, expires: issued.expires)
                ).response
            }
        }
        v1.post("auth/token") { request, context in
            try await Self.answering(context) {
                let body = try await Self.decode(TokenRequest.self, request, limit: Self.smallBodyLimit)
                let issued = try await service.token(
                    device: try Self.id(body.device, "device"),
                    challenge: try Self.bytes(body.challenge, "challenge"),
                    signedFor: try Self.origin(body.origin),
                    signature: try Self.bytes(body.signature, "signature")
                )
                return try JSONResponse(
                    TokenResponse(
                        token: issued.token,
                        expires: issued.expires,
                        device: issued.device.id,
                        account: issued.device.account
                    )
                ).response
            }
        }
        v1.get("devices") { request, context in
            try await Self.answering(context) {
                let caller = try await Self.caller(request, service)
                let devices = try await service.devices(of: caller)
                return try JSONResponse(DeviceListResponse(devices: devices.map(DeviceJSON.init))).response
            }
        }
        v1.delete("devices/:id") { request, context in
            try await Self.answering(context) {
                let caller = try await Self.caller(request, service)
                let id = try Self.id(context.parameters.get("id") ?? "", "id")
                return try JSONResponse(DeviceJSON(try await service.revoke(id, by: caller))).response
            }
        }
        v1.post("join-requests") { request, context in
            try await Self.answering(context) {
                let body = try await Self.decode(JoinRequestJSON.self, request, limit: Self.smallBodyLimit)
                let lookup = try Self.id(body.lookup, "lookup")
                let (publicKey, agreementKey, tag) = (
                    try Self.bytes(body.publicKey, "publicKey"), try Self.bytes(body.agreementKey, "agreementKey"),
                    try Self.bytes(body.tag, "tag")
                )
                let expires = try await service.createJoinRequest(
                    lookup: lookup,
                    publicKey: publicKey,
                    agreementKey: agreementKey,
                    name: body.name,
                    tag: tag,
                    signedFor: try Self.origin(body.origin),
                    from: Self.clientAddress(request, context, service.configuration)
                )
                return try JSONResponse(
                    PendingJoinJSON(
                        lookup: lookup,
                        publicKey: publicKey,
                        agreementKey: agreementKey,
                        name: body.name,
                        tag: tag,
                        expires: expires
                    ),
                    status: .created
                ).response
            }
        }
        v1.get("join-requests/:lookup") { request, context in
            try await Self.answering(context) {
                let caller = try await Self.caller(request, service)
                let lookup = try Self.id(context.parameters.get("lookup") ?? "", "lookup")
                let pending = try await service.joinRequest(lookup: lookup, by: caller)
                return try JSONResponse(
                    PendingJoinJSON(
                        lookup: pending.lookup,
                        publicKey: pending.publicKey,
                        agreementKey: pending.agreementKey,
                        name: pending.name,
                        tag: pending.tag,
                        expires: pending.expires
                    )
                ).response
            }
        }
        v1.post("join-requests/:lookup/grant") { request, context in
            try await Self.answering(context) {
                let caller = try await Self.caller(request, service)
                let lookup = try Self.id(context.parameters.get("lookup") ?? "", "lookup")
                let body = try await Self.decode(JoinGrantJSON.self, request, limit: Self.smallBodyLimit)
                let grant = try Self.bytes(body.grant, "grant")
                try await service.grantJoin(lookup: lookup, grant: grant, by: caller)
                return try JSONResponse(JoinGrantStateJSON(grant: grant), status: .created).response
            }
        }
        v1.get("join-requests/:lookup/grant") { _, context in
            try await Self.answering(context) {
                let lookup = try Self.id(context.parameters.get("lookup") ?? "", "lookup")
                return try JSONResponse(JoinGrantStateJSON(grant: try await service.joinGrant(lookup: lookup))).response
            }
        }
        v1.post("push") { request, context in
            try await Self.answering(context) {
                let caller = try await Self.caller(request, service)
                let body = try await Self.decode(PushRequest.self, request, limit: pushLimit)
                guard let item = ItemID(hex: body.item) else {
                    throw SyncServerError(.invalidRequest, "item: 32 hex digits expected")
                }
                let mutation = Mutation(
                    item: item,
                    baseRevision: body.baseRevision,
                    payload: try Self.bytes(body.payload, "payload")
                )
                switch try await service.push(mutation, by: caller) {
                case .accepted(let revision):
                    return try JSONResponse(PushResponseJSON(result: "accepted", revision: revision)).response
                case .stale(let current):
                    return try JSONResponse(
                        PushResponseJSON(result: "stale", current: ItemJSON(current)),
                        status: .conflict
                    ).response
                case .rejected(let reason):
                    return try JSONResponse(
                        PushResponseJSON(result: "rejected", reason: reason),
                        status: .unprocessableContent
                    ).response
                }
            }
        }
        v1.get("changes") { request, context in
            try await Self.answering(context) {
                let caller = try await Self.caller(request, service)
                let query = request.uri.queryParameters
                let since = try query["since"].map { text in
                    guard let value = UInt64(text), value <= UInt64(Int64.max) else {
                        throw SyncServerError(.invalidRequest, "since: a whole number from 0 expected")
                    }
                    return value
                }
                let wait = try query["wait"].map { text -> Duration in
                    guard let seconds = Int(text), (0...60).contains(seconds) else {
                        throw SyncServerError(.invalidRequest, "wait: whole seconds from 0 to 60 expected")
                    }
                    return .seconds(seconds)
                }
                // A long poll ends (answered empty) when the server stops, so a stop does not wait
                // out every open poll.
                let batch = try await cancelWhenGracefulShutdown {
                    try await service.changes(since: since ?? 0, by: caller, wait: wait)
                }
                return try JSONResponse(
                    ChangesResponse(items: batch.items.map(ItemJSON.init), sequence: batch.sequence)
                ).response
            }
        }
        return router
    }

    /// Runs `body`, turning the service's errors into their HTTP answers. A storage failure (or any
    /// error that is not a ``SyncServer/SyncServerError``) is logged at `.error` with its message
    /// (ids, SQLSTATE, never bound values or secrets) and answered 500 `storage`; a refusal's
    /// ``SyncServer/SyncServerErrorDetails`` (the origins of a `wrongServer`) are logged at
    /// `.notice`, not answered.
    private static func answering(
        _ context: some RequestContext,
        _ body: () async throws -> Response
    ) async throws -> Response {
        do {
            return try await body()
        } catch let error as SyncServerError {
            if error.code == .storage { context.logger.error("sync request failed: \(error.message)") }
            if let details = error.details { context.logger.notice("\(details.logMessage)") }
            throw SyncHTTPError(error)
        } catch {
            context.logger.error("sync request failed: \(type(of: error))")
            throw SyncHTTPError(SyncServerError(.storage, "the sync server failed"))
        }
    }

    /// An account or device id: 32 lowercase hex digits. The text is not echoed back.
    private static func id(_ text: String, _ field: String) throws -> String {
        guard text.utf8.count == 32, text.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else {
            throw SyncServerError(.invalidRequest, "\(field): 32 lowercase hex digits expected")
        }
        return text
    }

    /// The device whose bearer token the request carries.
    private static func caller(_ request: Request, _ service: SyncService) async throws -> EnrolledDevice {
        guard let header = request.headers[.authorization], header.lowercased().hasPrefix("bearer ") else {
            throw SyncServerError(.unauthorized, "send Authorization: Bearer TOKEN (POST /v1/auth/token gives one)")
        }
        return try await service.authenticate(token: String(header.dropFirst("bearer ".count)))
    }

    private static func decode<T: Decodable>(_ type: T.Type, _ request: Request, limit: Int) async throws -> T {
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw SyncServerError(.tooLarge, "the request body is larger than the server accepts (\(limit) bytes)")
        }
        do {
            return try JSONDecoder().decode(T.self, from: Data(buffer.readableBytesView))
        } catch {
            throw SyncServerError(
                .invalidRequest,
                "the body is not the JSON this endpoint expects (see docs/openapi/sync.yaml)"
            )
        }
    }

    /// The origin a device says it signed for (`scheme://host[:port]`). The text is not echoed back.
    private static func origin(_ text: String) throws -> ServiceOrigin {
        guard text.utf8.count <= 300, let origin = ServiceOrigin.of(url: text) else {
            throw SyncServerError(.invalidRequest, "origin: the server URL's origin, scheme://host[:port], expected")
        }
        return origin
    }

    private static func bytes(_ text: String, _ field: String) throws -> [UInt8] {
        guard let bytes = Base64URL.decode(text) else {
            throw SyncServerError(.invalidRequest, "\(field): base64url expected")
        }
        return bytes
    }

    /// How long a connection may sit idle (no request in flight) before the server closes it: the
    /// longest long poll plus 15 seconds.
    public var idleTimeout: Duration { service.configuration.maxWait + .seconds(15) }

    /// Serves on `host:port` (0 picks a port) until the task is cancelled or SIGINT/SIGTERM;
    /// `onReady` gets the bound port. Without a configured
    /// ``SyncServer/SyncServerConfiguration/publicOrigin``, devices sign for `http://host:port` as
    /// bound (``SyncServer/SyncService/serving(at:)``). An idle connection is closed after `idleTimeout`
    /// (``idleTimeout`` by default), so connections that send nothing do not pile up.
    public func run(
        host: String,
        port: Int,
        idleTimeout: Duration? = nil,
        logger: Logger = Logger(label: "keyhaven.sync"),
        onReady: @escaping @Sendable (Int) async -> Void = { _ in }
    ) async throws {
        let idle = idleTimeout ?? self.idleTimeout
        let milliseconds = idle.components.seconds * 1000 + idle.components.attoseconds / 1_000_000_000_000_000
        let app = Application(
            router: router(),
            server: .http1(configuration: .init(idleTimeout: .milliseconds(milliseconds))),
            configuration: .init(address: .hostname(host, port: port), serverName: "keyhaven-sync"),
            onServerRunning: { [service = self.service] channel in
                let bound = channel.localAddress?.port ?? port
                if let origin = ServiceOrigin(scheme: .http, host: host, port: bound) { service.serving(at: origin) }
                await onReady(bound)
            },
            logger: logger
        )
        let group = ServiceGroup(
            configuration: .init(
                services: [.init(service: app)],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
        )
        try await group.run()
    }
}
