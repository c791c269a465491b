public import AsyncHTTPClient
public import Foundation
import NIOCore
import NIOHTTP1
public import VaultSync
public import _KeyhavenHTTPSupport
import _KeyhavenSupport

/// A device of the person as seen by the sync server.
public struct SyncDevice: Hashable, Sendable {
    public var id: String
    public var account: String
    public var name: String
    public var publicKey: [UInt8]
    public var created: Date
    public var revoked: Date?
    /// The device that approved this one (nil for an account's first device).
    public var approvedBy: String?
}

/// The typed client of `keyhaven sync serve` (docs/openapi/sync.yaml) for one device.
///
/// The device signs in with its own key (``SyncDeviceKey``): a challenge, signed, for a bearer
/// token that stays inside this actor and is fetched again transparently when it is about to
/// expire (by the injected clock) or the server no longer takes it. Every request has a short
/// deadline (`timeout`, a long poll its wait on top) that covers reading the whole answer (a server
/// that stalls after its headers fails with ``SyncClientError/Code/noAnswer``), connections are never retried, and a
/// server that cannot be reached fails at once with ``SyncClientError/Code/unreachable``.
///
/// - Throws (every call): ``SyncClientError``, or `CancellationError` when the task is cancelled.
public actor SyncHTTPClient {
    /// The server's base URL, without a trailing slash.
    public let server: String
    /// The origin of ``server`` (`scheme://host[:port]`): what every message this device signs
    /// names (``VaultSync/DeviceSignatures``), so a server relaying it to another is refused there.
    public let origin: ServiceOrigin
    public let key: SyncDeviceKey
    /// The account this device is in (set by ``createAccount(name:)`` and ``enrol(account:name:approver:approval:)``,
    /// or given when the device was enrolled before).
    public private(set) var account: String?
    private let http: HTTPClient
    private let timeout: Duration
    private let now: @Sendable () -> Date
    private var token: (value: String, expires: Date)?
    /// The sign-in under way, which concurrent calls share (one challenge, one token).
    private var signingIn: Task<(value: String, expires: Date), any Error>?

    /// A token is fetched again this long before it expires.
    static let tokenMargin: TimeInterval = 30
    /// The largest answer read: a page of changes, whose payloads the server caps at 4 MiB
    /// (`SyncServerConfiguration.changesMaxBytes`; an item is always smaller), as base64url (4/3),
    /// plus 1 MiB for the JSON around at most 500 items (about 100 bytes each). A larger answer is
    /// not a sync server's (`badAnswer`), and is not read further.
    static let answerLimit = (4 << 20) / 3 * 4 + (1 << 20)

    public init(
        server: String,
        key: SyncDeviceKey,
        account: String? = nil,
        http: HTTPClient = OutboundHTTP.shared,
        timeout: Duration = .seconds(10),
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws(SyncClientError) {
        (self.server, self.origin) = try Self.checked(server: server)
        self.key = key
        self.account = account
        self.http = http
        self.timeout = timeout
        self.now = now
    }

    /// `server` without its trailing slashes, when it may be spoken to: `https://HOST[:PORT][/PATH]`,
    /// or `http://` to this machine (``_KeyhavenSupport/ServiceOrigin/isPotentiallyTrustworthy``:
    /// over plain http to another machine anyone on the way could read the bearer token and the
    /// sealed items). No user name or password (never quoted back), query or fragment. With its
    /// origin.
    static func checked(server: String) throws(SyncClientError) -> (url: String, origin: ServiceOrigin) {
        var server = server
        while server.hasSuffix("/") { server.removeLast() }
        let components = URLComponents(string: server)
        // `@` may start user info that URLComponents could not parse: never quoted either.
        if server.contains("@") || components?.user != nil || components?.password != nil {
            throw SyncClientError(
                .invalidServer,
                "the sync server URL holds a user name or password; give https://HOST[:PORT] without them "
                    + "(the device signs in with its own key)"
            )
        }
        let shown = SyncClientError.neutralised(server)
        guard let components, components.query == nil, components.fragment == nil,
            let origin = ServiceOrigin.of(url: server)
        else {
            throw SyncClientError(
                .invalidServer,
                "\(shown) is not a sync server URL; give https://HOST[:PORT] (or http://127.0.0.1:PORT for a "
                    + "server on this machine), without a query or fragment"
            )
        }
        guard origin.isPotentiallyTrustworthy else {
            throw SyncClientError(
                .invalidServer,
                "\(shown) is plain http to another machine: anyone on the way could take the device's token; "
                    + "use https:// (put a TLS-terminating reverse proxy in front of `keyhaven sync serve`); "
                    + "http is only for localhost, 127.0.0.1 and ::1"
            )
        }
        return (server, origin)
    }

    // MARK: Devices

    /// Creates an account with this device as its first (`POST /v1/accounts`).
    public func createAccount(name: String) async throws -> SyncDevice {
        let body = CreateAccountRequest(
            publicKey: key.publicKey,
            name: name,
            origin: origin,
            proof: try key.sign(DeviceSignatures.accountCreation(server: origin, publicKey: key.publicKey))
        )
        return try await enrolled("/v1/accounts", try Self.json(body), doing: "creating the account")
    }

    /// Enrols this device in `account` with `approval`, the signature of enrolled device
    /// `approver` (its client's ``approval(of:)``, for this same server) (`POST /v1/devices`).
    public func enrol(account: String, name: String, approver: String, approval: [UInt8]) async throws -> SyncDevice {
        let body = AddDeviceRequest(
            account: account,
            publicKey: key.publicKey,
            name: name,
            approver: approver,
            origin: origin,
            approval: approval,
            proof: try key.sign(
                DeviceSignatures.enrolment(server: origin, account: account, newPublicKey: key.publicKey)
            )
        )
        return try await enrolled("/v1/devices", try Self.json(body), doing: "enrolling this device")
    }

    /// This (enrolled) device's approval of `newPublicKey` joining its account on this server: what
    /// `keyhaven device approve` hands to the new device for ``enrol(account:name:approver:approval:)``.
    /// Throws ``SyncClientError/Code/invalidRequest`` when this client knows no account yet (sign
    /// in first).
    public func approval(of newPublicKey: [UInt8]) throws(SyncClientError) -> [UInt8] {
        guard let account else {
            throw SyncClientError(
                .invalidRequest,
                "this device knows no account yet: sign in before approving a device"
            )
        }
        return try key.sign(DeviceSignatures.approval(server: origin, account: account, newPublicKey: newPublicKey))
    }

    /// Posts an enrolment (`201` with the device) and takes the device's account as this client's.
    private func enrolled(_ path: String, _ body: Data, doing: String) async throws -> SyncDevice {
        let answer = try await send(.POST, path, body: body, expecting: [201], doing: doing)
        let device = try Self.decode(DeviceJSON.self, answer).device(doing)
        account = device.account
        return device
    }

    /// The devices of the account, revoked ones included (`GET /v1/devices`).
    public func devices() async throws -> [SyncDevice] {
        let answer = try await authorized(.GET, "/v1/devices", doing: "listing the devices")
        return try Self.decode(DeviceListResponse.self, answer).devices.map { try $0.device(answer.doing) }
    }

    /// Revokes device `id` of the account (`DELETE /v1/devices/{id}`); its tokens fail at once.
    public func revoke(_ id: String) async throws -> SyncDevice {
        guard id.allSatisfy({ $0.isHexDigit }), !id.isEmpty else {
            throw SyncClientError(.invalidRequest, "a device id is hexadecimal (see the device list)")
        }
        let doing = "revoking device \(id)"
        return try Self.decode(DeviceJSON.self, try await authorized(.DELETE, "/v1/devices/\(id)", doing: doing))
            .device(doing)
    }

    // MARK: Joining (docs/sync.md "A device joins")

    /// The join request this (new) device makes: its key, `agreementKey` (X25519, the grant is
    /// sealed to it), `name`, the join code's lookup, and this client's origin.
    public func joinFields(lookup: String, agreementKey: [UInt8], name: String) -> JoinRequestFields {
        JoinRequestFields(
            origin: origin,
            lookup: lookup,
            publicKey: key.publicKey,
            agreementKey: agreementKey,
            name: name
        )
    }

    /// Posts a join request with its tag (`POST /v1/join-requests`, no token: the device is not
    /// enrolled). Returns when it expires on the server.
    public func postJoinRequest(_ fields: JoinRequestFields, tag: [UInt8]) async throws -> Date {
        let doing = "asking the server to let this device join"
        let answer = try await send(
            .POST,
            "/v1/join-requests",
            body: try Self.json(JoinRequestJSON(fields, tag: tag)),
            expecting: [201],
            doing: doing
        )
        return try Self.decode(PendingJoinJSON.self, answer).expires
    }

    /// The grant of the join request with `lookup` (`GET /v1/join-requests/{lookup}/grant`, no
    /// token): nil while no device has approved it. ``SyncClientError/Code/notFound`` when the
    /// server has no such request (it expired).
    public func joinGrant(lookup: String) async throws -> [UInt8]? {
        let doing = "waiting for the approval"
        let checked = try Self.lookup(lookup)
        let path = "/v1/join-requests/\(checked)/grant"
        let answer = try await send(.GET, path, doing: doing)
        let state = try Self.decode(JoinGrantStateJSON.self, answer)
        guard state.approved else { return nil }
        guard let text = state.grant, let grant = Base64URL.decode(text), !grant.isEmpty else {
            throw Self.badAnswer(doing)
        }
        return grant
    }

    /// The pending join request with `lookup`, as the fields it claims (for this client's
    /// origin) and its tag, for this enrolled device to check and approve (`GET
    /// /v1/join-requests/{lookup}`). ``SyncClientError/Code/notFound`` when there is none.
    public func joinRequest(lookup: String) async throws -> (fields: JoinRequestFields, tag: [UInt8]) {
        let doing = "fetching the join request"
        let checked = try Self.lookup(lookup)
        let path = "/v1/join-requests/\(checked)"
        let answer = try await authorized(.GET, path, doing: doing)
        let pending = try Self.decode(PendingJoinJSON.self, answer)
        guard pending.lookup == lookup, let publicKey = Base64URL.decode(pending.publicKey),
            let agreementKey = Base64URL.decode(pending.agreementKey), let tag = Base64URL.decode(pending.tag)
        else { throw Self.badAnswer(doing) }
        return (
            JoinRequestFields(
                origin: origin,
                lookup: lookup,
                publicKey: publicKey,
                agreementKey: agreementKey,
                name: pending.name
            ),
            tag
        )
    }

    /// Posts the grant sealed for the join request with `lookup` (`POST
    /// /v1/join-requests/{lookup}/grant`); a request is granted once.
    public func grantJoin(lookup: String, grant: [UInt8]) async throws {
        let checked = try Self.lookup(lookup)
        let path = "/v1/join-requests/\(checked)/grant"
        _ = try await authorized(
            .POST,
            path,
            body: try Self.json(JoinGrantJSON(grant: grant)),
            expecting: [201],
            doing: "sending the approval"
        )
    }

    /// `lookup` when it is 32 lowercase hex digits (it goes into a path).
    private static func lookup(_ lookup: String) throws(SyncClientError) -> String {
        guard lookup.utf8.count == 32, lookup.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) })
        else { throw SyncClientError(.invalidRequest, "a join lookup is 32 lowercase hex digits") }
        return lookup
    }

    // MARK: Authentication

    /// A challenge for this device to sign (`POST /v1/auth/challenge`).
    public func challenge() async throws -> (challenge: [UInt8], expires: Date) {
        let answer = try Self.decode(
            ChallengeResponse.self,
            try await send(
                .POST,
                "/v1/auth/challenge",
                body: try Self.json(ChallengeRequest(device: key.id)),
                doing: "asking for a challenge"
            )
        )
        guard let bytes = Base64URL.decode(answer.challenge) else { throw Self.badAnswer("asking for a challenge") }
        return (bytes, answer.expires)
    }

    /// Signs in (a challenge, signed, for a bearer token, `POST /v1/auth/token`), replacing the
    /// token held once the new one arrives; calls made meanwhile share this sign-in. Calls do it
    /// themselves when needed; returns when the new token expires.
    @discardableResult
    public func signIn() async throws -> Date {
        try await freshToken().expires
    }

    /// A new token: the sign-in under way if there is one, else a new one.
    private func freshToken() async throws -> (value: String, expires: Date) {
        if let signingIn { return try await signingIn.value }
        let task = Task { try await self.fetchToken() }
        signingIn = task
        defer { if signingIn == task { signingIn = nil } }
        return try await task.value
    }

    private func fetchToken() async throws -> (value: String, expires: Date) {
        let challenge = try await self.challenge().challenge
        let body = TokenRequest(
            device: key.id,
            challenge: challenge,
            origin: origin,
            signature: try key.sign(DeviceSignatures.tokenRequest(server: origin, device: key.id, challenge: challenge))
        )
        let answer = try Self.decode(
            TokenResponse.self,
            try await send(.POST, "/v1/auth/token", body: try Self.json(body), doing: "signing in")
        )
        guard answer.device == key.id, !answer.token.isEmpty else { throw Self.badAnswer("signing in") }
        token = (answer.token, answer.expires)
        account = answer.account
        return (answer.token, answer.expires)
    }

    // MARK: Items

    /// Sends one mutation (`POST /v1/push`): accepted, stale with the current item (409), or
    /// rejected (422). Sending it again after a lost answer gets the same answer (applied once).
    public func push(_ mutation: Mutation) async throws -> PushResponse {
        let body = PushRequest(mutation)
        let doing = "pushing item \(mutation.item)"
        let answer = try await authorized(
            .POST,
            "/v1/push",
            body: try Self.json(body),
            expecting: [200, 409, 422],
            doing: doing
        )
        let result = try Self.decode(PushResponseJSON.self, answer)
        switch (answer.status, result.result) {
        case (200, "accepted"):
            guard let revision = result.revision else { throw Self.badAnswer(doing) }
            return .accepted(revision: revision)
        case (409, "stale"):
            guard let current = result.current else { throw Self.badAnswer(doing) }
            let item = try current.serverItem(doing)
            // Stale at the very revision the mutation was based on: compare-and-swap would have
            // applied it, so this is not a sync server (and sending again would loop).
            guard item.item == mutation.item, item.revision != mutation.baseRevision else {
                throw Self.badAnswer(doing)
            }
            return .stale(current: item)
        case (422, "rejected"):
            return .rejected(reason: SyncClientError.neutralised(result.reason ?? "no reason given"))
        default:
            throw Self.badAnswer(doing)
        }
    }

    /// One page of the items changed after `cursor` (`GET /v1/changes?since=`); ask again from
    /// the batch's sequence until it has no items.
    public func changes(since cursor: UInt64) async throws -> ChangeBatch {
        try await changes(since: cursor, waitSeconds: nil)
    }

    /// A long poll: the items changed after `cursor`, answered at once if there are any, else as
    /// soon as a device writes, or empty after `wait` (whole seconds, at most 60). Cancelling the
    /// task ends it at once.
    public func changes(since cursor: UInt64, wait: Duration) async throws -> ChangeBatch {
        try await changes(since: cursor, waitSeconds: Int(min(max(wait.components.seconds, 0), 60)))
    }

    private func changes(since cursor: UInt64, waitSeconds: Int?) async throws -> ChangeBatch {
        let query = "since=\(cursor)" + (waitSeconds.map { "&wait=\($0)" } ?? "")
        let doing = "fetching changes"
        let answer = try await authorized(
            .GET,
            "/v1/changes?\(query)",
            doing: doing,
            extraTime: .seconds(waitSeconds ?? 0)
        )
        let body = try Self.decode(ChangesResponse.self, answer)
        return ChangeBatch(items: try body.items.map { try $0.serverItem(doing) }, sequence: body.sequence)
    }

    // MARK: Transport

    struct Answer {
        var status: UInt
        var body: [UInt8]
        var doing: String
    }

    /// A call with the bearer token: fetched first when none is held or it is about to expire,
    /// and once more if the server refuses the one held (it expired there, or the server
    /// restarted) — unless another call already replaced it meanwhile, whose token is used then.
    private func authorized(
        _ method: HTTPMethod,
        _ path: String,
        body: Data? = nil,
        expecting: Set<UInt> = [200],
        doing: String,
        extraTime: Duration = .zero
    ) async throws -> Answer {
        var bearer: String
        var retried = false
        if let token, now().addingTimeInterval(Self.tokenMargin) < token.expires {
            bearer = token.value
        } else {
            bearer = try await freshToken().value
            retried = true
        }
        while true {
            do {
                return try await send(
                    method,
                    path,
                    body: body,
                    bearer: bearer,
                    expecting: expecting,
                    doing: doing,
                    extraTime: extraTime
                )
            } catch let error as SyncClientError where error.code == .unauthorized && !retried {
                retried = true
                if let held = token, held.value != bearer {
                    bearer = held.value
                } else {
                    bearer = try await freshToken().value
                }
            }
        }
    }

    private func send(
        _ method: HTTPMethod,
        _ path: String,
        body: Data? = nil,
        bearer: String? = nil,
        expecting: Set<UInt> = [200],
        doing: String,
        extraTime: Duration = .zero
    ) async throws -> Answer {
        var request = HTTPClientRequest(url: server + path)
        request.method = method
        request.headers.add(name: "User-Agent", value: "Keyhaven")
        request.headers.add(name: "Accept", value: "application/json")
        if let bearer { request.headers.add(name: "Authorization", value: "Bearer \(bearer)") }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        // One deadline for the whole exchange: the answer's body included.
        let deadline = NIODeadline.now() + .init(timeout + extraTime)
        let response: HTTPClientResponse
        do {
            response = try await http.execute(request, deadline: deadline)
        } catch {
            throw Self.failure(error, answered: false, server: server, doing: doing)
        }
        let status = response.status.code
        let retryAfter = response.headers.first(name: "Retry-After")
        let bytes: [UInt8]
        do {
            bytes = Array(buffer: try await response.body.collect(upTo: Self.answerLimit, deadline: deadline))
        } catch is NIOTooManyBytesError {
            throw SyncClientError(
                .badAnswer,
                "\(doing): the answer is larger than a page of the sync API (\(Self.answerLimit) bytes); is the URL "
                    + "a Keyhaven sync server?"
            )
        } catch {
            // The server answered: whatever broke the body, the request was sent.
            throw Self.failure(error, answered: true, server: server, doing: doing)
        }
        if expecting.contains(status) { return Answer(status: status, body: bytes, doing: doing) }
        throw Self.failure(status: status, body: bytes, retryAfter: retryAfter, doing: doing)
    }

    /// What a transport `error` means for the caller. `answered`: the answer's head had arrived
    /// (the error came while reading its body), so the request was sent and the error is never
    /// ``SyncClientError/Code/unreachable`` ("nothing was sent"), whatever the error says.
    package static func failure(_ error: any Error, answered: Bool, server: String, doing: String) -> any Error {
        switch OutboundFailure(error) {
        case .cancelled: return CancellationError()
        case .unreachable where !answered:
            return SyncClientError(
                .unreachable,
                "\(doing): no connection could be made to \(server); check the address and that "
                    + "`keyhaven sync serve` runs there (nothing was sent)"
            )
        case .timedOut:
            return SyncClientError(
                .noAnswer,
                "\(doing): \(server) did not answer in time (it may have been applied); try again later"
            )
        case .unreachable, .other:
            if Task.isCancelled { return CancellationError() }
            return SyncClientError(
                .noAnswer,
                "\(doing): the connection to \(server) broke (it may have been applied); try again later"
            )
        }
    }

    /// The error codes of docs/openapi/sync.yaml (`{"error": code, …}`) with the status each
    /// comes with: an answer is read by its code (409 is `alreadyEnrolled` or `cursorAhead`), and
    /// a code with another status is not the sync API's.
    static let errorCodes: [String: (code: SyncClientError.Code, status: UInt)] = [
        "invalidRequest": (.invalidRequest, 400),
        "unauthorized": (.unauthorized, 401),
        "wrongServer": (.wrongServer, 401),
        "forbidden": (.forbidden, 403),
        "notFound": (.notFound, 404),
        "alreadyEnrolled": (.alreadyEnrolled, 409),
        "cursorAhead": (.cursorAhead, 409),
        "alreadyExists": (.alreadyExists, 409),
        "tooLarge": (.tooLarge, 413),
        "busy": (.busy, 429),
    ]

    /// The seconds a `Retry-After` asks for (``_KeyhavenHTTPSupport/OutboundHTTP/retryAfter(_:)``),
    /// clamped to 1...60; nil when it is not whole seconds.
    static func retryAfter(_ value: String?) -> Int? {
        OutboundHTTP.retryAfter(value).map { min(max($0, 1), 60) }
    }

    /// The error of an answer with an error status, read by its JSON `error` code, the server's
    /// message neutralised.
    static func failure(status: UInt, body: [UInt8], retryAfter: String? = nil, doing: String) -> SyncClientError {
        if (500...599).contains(status) {
            return SyncClientError(.serverFailure, "\(doing): the sync server failed (HTTP \(status)); retry later")
        }
        let said = try? JSONDecoder().decode(ErrorJSON.self, from: Data(body))
        guard let said, let known = errorCodes[said.error], known.status == status else {
            return SyncClientError(
                .badAnswer,
                "\(doing): the server answered HTTP \(status) without an error code of the sync API "
                    + "(docs/openapi/sync.yaml); is the URL a Keyhaven sync server?"
            )
        }
        let detail = " (the server said: \(SyncClientError.neutralised(said.message)))"
        switch known.code {
        case .invalidRequest:
            return SyncClientError(.invalidRequest, "\(doing): the server refused the request as malformed\(detail)")
        case .unauthorized:
            return SyncClientError(
                .unauthorized,
                "\(doing): the server does not accept this device\(detail); if it was revoked, its key can never "
                    + "be enrolled again — make a NEW device key and have an enrolled device approve it"
            )
        case .wrongServer:
            return SyncClientError(
                .wrongServer,
                "\(doing): the server refused this device's signature as made for another server\(detail); its "
                    + "operator must start it with --public-url set to the URL this device uses — or something "
                    + "between this device and it is relaying its sign-in"
            )
        case .forbidden: return SyncClientError(.forbidden, "\(doing): the approval was refused\(detail)")
        case .notFound: return SyncClientError(.notFound, "\(doing): not found on the server\(detail)")
        case .alreadyEnrolled:
            return SyncClientError(.alreadyEnrolled, "\(doing): this key is already enrolled\(detail)")
        case .alreadyExists:
            return SyncClientError(.alreadyExists, "\(doing): it exists already\(detail)")
        case .cursorAhead:
            return SyncClientError(
                .cursorAhead,
                "\(doing): this device has seen changes the server no longer has (restored from a backup?); "
                    + "resync from 0 (SyncSession.pull does it once by itself)\(detail)"
            )
        case .busy:
            let seconds = Self.retryAfter(retryAfter) ?? 5
            return SyncClientError(
                .busy,
                "\(doing): the server has too many long polls waiting; retry in \(seconds) s\(detail)",
                details: seconds
            )
        default: return SyncClientError(.tooLarge, "\(doing): larger than the server accepts\(detail)")
        }
    }

    static func json(_ value: some Encodable) throws(SyncClientError) -> Data {
        do {
            return try JSONEncoder().encode(value)
        } catch {
            throw SyncClientError(.invalidRequest, "the request could not be written as JSON")
        }
    }

    static func badAnswer(_ doing: String) -> SyncClientError {
        SyncClientError(
            .badAnswer,
            "\(doing): the answer is not the sync API's (docs/openapi/sync.yaml); is the URL a Keyhaven sync server?"
        )
    }

    static func decode<T: Decodable>(_ type: T.Type, _ answer: Answer) throws(SyncClientError) -> T {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        do {
            return try decoder.decode(T.self, from: Data(answer.body))
        } catch {
            throw badAnswer(answer.doing)
        }
    }
}
