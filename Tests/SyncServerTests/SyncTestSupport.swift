import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import KeyhavenTesting
import NIOCore
import SyncServer
import SyncServerHTTP
import Synchronization
import VaultSync
import _KeyhavenSupport

/// A device's key pair, made from seeded bytes.
struct TestDeviceKey: Sendable {
    let key: Curve25519.Signing.PrivateKey

    init(_ generator: inout SeededRandomNumberGenerator) {
        key = try! Curve25519.Signing.PrivateKey(
            rawRepresentation: (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        )
    }

    var publicKey: [UInt8] { Array(key.publicKey.rawRepresentation) }
    var id: String { DeviceSignatures.deviceID(publicKey: publicKey) }
    func sign(_ message: [UInt8]) -> [UInt8] { Array(try! key.signature(for: message)) }
}

/// A clock tests move by hand.
final class TestClock: Sendable {
    private let current = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
    var now: Date { current.withLock { $0 } }
    func advance(_ seconds: TimeInterval) { current.withLock { $0 += seconds } }
}

/// Seeded randomness for the server.
final class TestRandom: Sendable {
    private let generator: Mutex<SeededRandomNumberGenerator>
    init(seed: UInt64) { generator = Mutex(SeededRandomNumberGenerator(seed: seed)) }
    func bytes(_ count: Int) -> [UInt8] {
        generator.withLock { generator in (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) } }
    }
}

extension SyncService {
    /// A service on `store` with a test clock and seeded randomness.
    static func testing(
        store: any SyncStore,
        clock: TestClock = TestClock(),
        seed: UInt64 = 28,
        maxItemBytes: Int = 4096
    ) -> SyncService {
        let random = TestRandom(seed: seed)
        var configuration = SyncServerConfiguration()
        configuration.now = { clock.now }
        configuration.randomBytes = { random.bytes($0) }
        configuration.maxItemBytes = maxItemBytes
        configuration.changesLimit = 7  // small, so the tests page through changes
        return SyncService(store: store, configuration: configuration)
    }
}

extension ServiceOrigin {
    /// The origin test servers serve at (``withSyncServer(_:_:_:)``), which test devices sign for.
    static let testServer = ServiceOrigin("https://sync.keyhaven.test")!
}

/// The sync API as a test client sees it: JSON in, status and JSON out; the signed requests it
/// builds are signed for `origin`.
struct SyncAPI {
    let client: any TestClientProtocol
    var origin = ServiceOrigin.testServer

    struct Answer {
        var status: HTTPResponse.Status
        var json: [String: Any]
        var headers: HTTPFields
        var string: (String) -> String? { { json[$0] as? String } }
    }

    @discardableResult
    func call(
        _ method: HTTPRequest.Method,
        _ uri: String,
        token: String? = nil,
        body: [String: Any]? = nil,
        raw: [UInt8]? = nil,
        headers extra: HTTPFields = [:]
    ) async throws -> Answer {
        var headers: HTTPFields = [.contentType: "application/json"]
        headers.append(contentsOf: extra)
        if let token { headers[.authorization] = "Bearer \(token)" }
        let bytes = try raw ?? body.map { Array(try JSONSerialization.data(withJSONObject: $0)) }
        return try await client.execute(
            uri: uri,
            method: method,
            headers: headers,
            body: bytes.map { ByteBuffer(bytes: $0) }
        ) { response in
            let data = Data(response.body.readableBytesView)
            let json = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
            return Answer(status: response.status, json: json, headers: response.headers)
        }
    }

    /// Creates an account with `device` as its first device; returns the account id.
    func createAccount(_ device: TestDeviceKey, name: String = "laptop") async throws -> String {
        let answer = try await call(
            .post,
            "/v1/accounts",
            body: [
                "publicKey": Base64URL.encode(device.publicKey), "name": name,
                "origin": origin.serialized,
                "proof": Base64URL.encode(
                    device.sign(DeviceSignatures.accountCreation(server: origin, publicKey: device.publicKey))
                ),
            ]
        )
        guard answer.status == .created, let account = answer.string("account") else {
            throw TestFailure("account creation answered \(answer.status) \(answer.json)")
        }
        return account
    }

    /// Enrols `device` in `account` with `approver`'s approval.
    func addDevice(
        _ device: TestDeviceKey,
        to account: String,
        approvedBy approver: TestDeviceKey
    ) async throws
        -> Answer
    {
        try await call(
            .post,
            "/v1/devices",
            body: [
                "account": account, "publicKey": Base64URL.encode(device.publicKey), "name": "phone",
                "approver": approver.id,
                "approval": Base64URL.encode(
                    approver.sign(
                        DeviceSignatures.approval(server: origin, account: account, newPublicKey: device.publicKey)
                    )
                ),
                "origin": origin.serialized,
                "proof": Base64URL.encode(
                    device.sign(
                        DeviceSignatures.enrolment(server: origin, account: account, newPublicKey: device.publicKey)
                    )
                ),
            ]
        )
    }

    /// A challenge for `device` (base64url).
    func challenge(_ device: TestDeviceKey) async throws -> Answer {
        try await call(.post, "/v1/auth/challenge", body: ["device": device.id])
    }

    /// Answers `challenge` signed by `signer` on behalf of `device`.
    func token(_ device: TestDeviceKey, challenge: String, signer: TestDeviceKey? = nil) async throws -> Answer {
        let bytes = Base64URL.decode(challenge) ?? []
        let signature = (signer ?? device).sign(
            DeviceSignatures.tokenRequest(server: origin, device: device.id, challenge: bytes)
        )
        return try await call(
            .post,
            "/v1/auth/token",
            body: [
                "device": device.id, "challenge": challenge, "origin": origin.serialized,
                "signature": Base64URL.encode(signature),
            ]
        )
    }

    /// A bearer token for `device` (challenge, signature, token).
    func signIn(_ device: TestDeviceKey) async throws -> String {
        let challenge = try await challenge(device)
        guard let text = challenge.string("challenge") else { throw TestFailure("no challenge: \(challenge.json)") }
        let answer = try await token(device, challenge: text)
        guard answer.status == .ok, let token = answer.string("token") else {
            throw TestFailure("token answered \(answer.status) \(answer.json)")
        }
        return token
    }

    /// Sends `mutation` and reads the answer back as the reference server's type.
    func push(_ mutation: Mutation, token: String) async throws -> PushResponse {
        let answer = try await call(
            .post,
            "/v1/push",
            token: token,
            body: [
                "item": mutation.item.description, "baseRevision": mutation.baseRevision,
                "payload": Base64URL.encode(mutation.payload),
            ]
        )
        switch (answer.status, answer.string("result")) {
        case (.ok, "accepted"):
            return .accepted(revision: (answer.json["revision"] as? NSNumber)?.uint64Value ?? 0)
        case (.conflict, "stale"):
            return .stale(current: try Self.item(answer.json["current"]))
        case (.unprocessableContent, "rejected"):
            return .rejected(reason: answer.string("reason") ?? "")
        default:
            throw TestFailure("push answered \(answer.status) \(answer.json)")
        }
    }

    /// Changes since `cursor`, all pages.
    func changes(since cursor: UInt64, token: String, wait: Int? = nil) async throws -> ChangeBatch {
        var batch = ChangeBatch(items: [], sequence: cursor)
        while true {
            let query = "since=\(batch.sequence)" + (wait.map { "&wait=\($0)" } ?? "")
            let answer = try await call(.get, "/v1/changes?\(query)", token: token)
            guard answer.status == .ok, let items = answer.json["items"] as? [Any],
                let sequence = (answer.json["sequence"] as? NSNumber)?.uint64Value
            else { throw TestFailure("changes answered \(answer.status) \(answer.json)") }
            batch.items += try items.map(Self.item)
            let done = sequence == batch.sequence || items.isEmpty
            batch.sequence = sequence
            if done || wait != nil { return batch }
        }
    }

    static func item(_ value: Any?) throws -> ServerItem {
        guard let json = value as? [String: Any], let id = (json["item"] as? String).flatMap({ ItemID(hex: $0) }),
            let revision = (json["revision"] as? NSNumber)?.uint64Value,
            let sequence = (json["sequence"] as? NSNumber)?.uint64Value,
            let payload = (json["payload"] as? String).flatMap({ Base64URL.decode($0) })
        else { throw TestFailure("not an item: \(String(describing: value))") }
        return ServerItem(item: id, revision: revision, payload: payload, sequence: sequence)
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Runs `body` with the sync server on `service`, served in process (`.router`) or on a loopback
/// port (`.live`), serving at ``_KeyhavenSupport/ServiceOrigin/testServer`` (unless its configuration
/// names another origin).
func withSyncServer<T: Sendable>(
    _ service: SyncService,
    _ setup: TestingSetup = .router,
    _ body: @escaping @Sendable (SyncAPI) async throws -> T
) async throws -> T {
    service.serving(at: .testServer)
    let app = Application(router: SyncHTTPServer(service: service).router())
    return try await app.test(setup) { client in try await body(SyncAPI(client: client)) }
}
