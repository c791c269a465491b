import Crypto
public import Foundation
import Synchronization
public import VaultSync
public import _KeyhavenSupport

/// The sync server's settings; time and randomness are injected (tests fix both).
public struct SyncServerConfiguration: Sendable {
    /// The wall clock.
    public var now: @Sendable () -> Date = { Date() }
    /// `count` random bytes (challenges, tokens, account ids): the system's generator by default.
    public var randomBytes: @Sendable (Int) -> [UInt8] = { count in
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in generator.next() }
    }
    /// How long a challenge may be answered.
    public var challengeLifetime: TimeInterval = 60
    /// How long a bearer token is good for.
    public var tokenLifetime: TimeInterval = 15 * 60
    /// The most challenges a device may have outstanding (a new one drops its oldest).
    public var maxChallengesPerDevice = 8
    /// How often expired challenges and tokens are deleted (not on every insert).
    public var purgeInterval: TimeInterval = 60
    /// The largest item payload accepted (a sealed item is padded to a power-of-two bucket).
    public var maxItemBytes = 64 << 10
    /// The most items one changes answer carries (the device asks again from the new cursor).
    public var changesLimit = 500
    /// The most payload bytes one changes answer carries (always at least one item): larger than
    /// ``maxItemBytes`` (``validate()``).
    public var changesMaxBytes = 4 << 20
    /// The longest a long poll waits.
    public var maxWait: Duration = .seconds(60)
    /// How often a long poll looks at the database again, for writes through other instances: only
    /// when the store is shared by instances (``SyncStore/sharedByInstances``); a single process
    /// is woken by its own writes.
    public var recheck: Duration = .seconds(1)
    /// The most long polls one device may have waiting at once (more are answered `busy`, 429).
    public var maxLongPollsPerDevice = 2
    /// The most long polls waiting at once on this server.
    public var maxLongPolls = 1_000
    /// How long a join request (`keyhaven sync join`) waits for its approval.
    public var joinRequestLifetime: TimeInterval = 10 * 60
    /// The most join requests pending at once on this server (more are answered `busy`, 429): the
    /// route is open to anyone, as account creation is.
    public var maxJoinRequests = 1_000
    /// The most join requests pending at once from one client address (an IPv6 address counts by
    /// its /64): one client cannot fill ``maxJoinRequests`` and block every join. Counted by each
    /// instance on its own (``maxJoinRequests`` is the backstop shared by all).
    public var maxJoinRequestsPerAddress = 5
    /// The header a reverse proxy sets to the client's address (`X-Forwarded-For`), believed only
    /// from ``trustedProxies``; nil: the connection's peer is the client.
    public var clientAddressHeader: String?
    /// The proxies whose ``clientAddressHeader`` is believed (exact addresses; loopback by default).
    public var trustedProxies: Set<String> = ["127.0.0.1", "::1"]
    /// The largest grant accepted (a grant holds an account id, a device id, a signature and two
    /// keys: about 250 bytes).
    public var maxGrantBytes = 1_024
    /// The origin devices reach this server at (`keyhaven sync serve --public-url`): what they sign
    /// for (``VaultSync/DeviceSignatures``). Behind a TLS-terminating proxy it is the proxy's
    /// `https://` origin, not the address the server listens on. Nil: the address it listens on,
    /// once known (``SyncService/serving(at:)``).
    public var publicOrigin: ServiceOrigin?

    public init() {}

    /// Throws when the settings contradict each other: an item must fit in a changes page.
    public func validate() throws {
        guard maxItemBytes > 0, maxItemBytes < changesMaxBytes else {
            throw SyncServerError(
                .invalidRequest,
                "the largest item (\(maxItemBytes) bytes) must be smaller than a changes page (\(changesMaxBytes) bytes)"
            )
        }
    }
}

/// A token just issued: the secret itself is only ever in this answer (the server keeps its hash).
public struct IssuedToken: Sendable {
    public var token: String
    public var expires: Date
    public var device: EnrolledDevice
}

/// The sync server without HTTP: accounts, device authentication and the items, on a ``SyncStore``.
///
/// Authentication never involves the master password: every device has its own Ed25519 key pair
/// (the server has the public key), asks for a challenge, signs it
/// (``DeviceSignatures/tokenRequest(server:device:challenge:)``, for this server's
/// ``SyncServerConfiguration/publicOrigin``) and gets a short-lived bearer
/// token. Challenges and tokens are stored as SHA-256 hashes and compared in constant time; a
/// challenge is answered once; revoking a device deletes its tokens and refuses them at once. A
/// device joins an account only with the signature of one already in it and not revoked.
public final class SyncService: Sendable {
    public let store: any SyncStore
    public let configuration: SyncServerConfiguration
    let notifier = ChangeNotifier()
    /// Long polls waiting now: per device, and in all.
    private let longPolls = Mutex<(perDevice: [String: Int], total: Int)>(([:], 0))
    /// When expired challenges and tokens were last deleted.
    /// The expiries of the join requests this instance filed, per client address (``addressKey(_:)``).
    private let joinsByAddress = Mutex<[String: [Date]]>([:])
    private let lastPurge = Mutex<(challenges: Date, tokens: Date)>((.distantPast, .distantPast))
    /// The origin devices sign for: the configuration's, else the one ``serving(at:)`` set.
    private let origin: Mutex<ServiceOrigin?>

    public init(store: any SyncStore, configuration: SyncServerConfiguration = SyncServerConfiguration()) {
        self.store = store
        self.configuration = configuration
        self.origin = Mutex(configuration.publicOrigin)
    }

    /// Takes `origin` (the address the server listens on, known once it is bound) as the origin
    /// devices sign for, unless the configuration or an earlier call set one.
    public func serving(at origin: ServiceOrigin) {
        self.origin.withLock { $0 = $0 ?? origin }
    }

    /// The origin devices sign for; nil before the server knows it.
    public var publicOrigin: ServiceOrigin? { origin.withLock { $0 } }

    /// This server's origin, when `signedFor` (the origin the device says it signed for) is it;
    /// else ``SyncServerError/Code/wrongServer``: the device signed for another server (a server
    /// relaying this one's challenge, or a device configured with a URL this server does not know
    /// as its own). The answer names neither origin (the caller is not authenticated); the
    /// error's ``SyncServerErrorDetails`` carry them for the server's log.
    private func checkOrigin(_ signedFor: ServiceOrigin) throws -> ServiceOrigin {
        guard let own = publicOrigin else {
            throw SyncServerError(.unauthorized, "the server does not know its public URL yet; retry in a moment")
        }
        guard signedFor == own else {
            // Generic for the caller (who may be anyone): the origins go to the server's log.
            throw SyncServerError(
                .wrongServer,
                "the device signed this for another server: check the server URL the device uses",
                details: .signedForAnotherServer(signedFor: signedFor, own: own)
            )
        }
        return own
    }

    // MARK: Accounts and devices

    /// Creates an account whose first device has `publicKey`; `proof` is that key's signature of
    /// ``DeviceSignatures/accountCreation(server:publicKey:)`` for `signedFor`, which must be this
    /// server's origin.
    public func createAccount(
        publicKey: [UInt8],
        name: String,
        signedFor: ServiceOrigin,
        proof: [UInt8]
    ) async throws -> EnrolledDevice {
        try Self.check(publicKey: publicKey, name: name)
        let server = try checkOrigin(signedFor)
        guard
            DeviceSignatures.verify(
                proof,
                of: DeviceSignatures.accountCreation(server: server, publicKey: publicKey),
                by: publicKey
            )
        else { throw SyncServerError(.unauthorized, "the proof is not the device key's signature") }
        let account = Hex.encode(configuration.randomBytes(16))
        let device = newDevice(publicKey: publicKey, account: account, name: name)
        try await store.createAccount(account, firstDevice: device)
        return device
    }

    /// Enrols a new device in `account`: `approval` is an enrolled, non-revoked device's
    /// (`approver`'s) signature of ``DeviceSignatures/approval(server:account:newPublicKey:)``, and
    /// `proof` the new key's signature of ``DeviceSignatures/enrolment(server:account:newPublicKey:)``,
    /// both for `signedFor`, which must be this server's origin.
    public func addDevice(
        account: String,
        publicKey: [UInt8],
        name: String,
        approver: String,
        signedFor: ServiceOrigin,
        approval: [UInt8],
        proof: [UInt8]
    ) async throws -> EnrolledDevice {
        try Self.check(publicKey: publicKey, name: name)
        let server = try checkOrigin(signedFor)
        guard let approving = try await store.device(approver), approving.account == account else {
            throw SyncServerError(.forbidden, "the approving device is not a device of this account")
        }
        guard approving.revoked == nil else {
            throw SyncServerError(.forbidden, "the approving device is revoked and cannot approve devices")
        }
        guard
            DeviceSignatures.verify(
                approval,
                of: DeviceSignatures.approval(server: server, account: account, newPublicKey: publicKey),
                by: approving.publicKey
            )
        else {
            throw SyncServerError(.forbidden, "the approval is not the approving device's signature of the new key")
        }
        guard
            DeviceSignatures.verify(
                proof,
                of: DeviceSignatures.enrolment(server: server, account: account, newPublicKey: publicKey),
                by: publicKey
            )
        else { throw SyncServerError(.unauthorized, "the proof is not the new device key's signature") }
        var device = newDevice(publicKey: publicKey, account: account, name: name)
        device.approvedBy = approver
        try await store.addDevice(device, approvedBy: approver)
        return device
    }

    public func devices(of caller: EnrolledDevice) async throws -> [EnrolledDevice] {
        try await store.devices(of: caller.account)
    }

    /// Revokes `device` of the caller's account: its tokens fail from now on and its key can never
    /// be enrolled again.
    public func revoke(_ device: String, by caller: EnrolledDevice) async throws -> EnrolledDevice {
        guard try await store.revoke(device, of: caller.account, at: configuration.now()),
            let revoked = try await store.device(device)
        else { throw SyncServerError(.notFound, "the device is not an enrolled device of this account") }
        return revoked
    }

    /// A device of `account` with `publicKey`, enrolled now.
    private func newDevice(publicKey: [UInt8], account: String, name: String) -> EnrolledDevice {
        EnrolledDevice(
            id: DeviceSignatures.deviceID(publicKey: publicKey),
            account: account,
            publicKey: publicKey,
            name: name,
            created: configuration.now()
        )
    }

    private static func check(publicKey: [UInt8], name: String) throws {
        guard publicKey.count == DeviceSignatures.publicKeyLength else {
            throw SyncServerError(.invalidRequest, "a device key is an Ed25519 public key of 32 bytes")
        }
        guard (1...100).contains(name.count), name.utf8.count <= 200 else {
            throw SyncServerError(
                .invalidRequest,
                "a device name has 1 to 100 characters and at most 200 bytes of UTF-8"
            )
        }
        let refused: Set<Unicode.GeneralCategory> = [.control, .format, .lineSeparator, .paragraphSeparator]
        guard !name.unicodeScalars.contains(where: { refused.contains($0.properties.generalCategory) }) else {
            throw SyncServerError(
                .invalidRequest,
                "a device name is one line without control or formatting characters (such as bidi overrides)"
            )
        }
    }

    // MARK: Joining

    /// Files a new device's join request under `lookup` (32 hex digits, from its join code) for
    /// ``SyncServerConfiguration/joinRequestLifetime``; `signedFor` is the origin the device
    /// used, which must be this server's. The tag is the device's MAC under the join code, which
    /// the server cannot check (it never sees the code); the approving device does.
    ///
    /// - Returns: when the request expires.
    /// - Throws: `invalidRequest` for keys or a tag of the wrong length or a bad name,
    ///   `wrongServer`, `alreadyExists` for a lookup pending already, `busy` when the server has
    ///   ``SyncServerConfiguration/maxJoinRequests`` pending, or `client` (its address, nil when
    ///   unknown) has ``SyncServerConfiguration/maxJoinRequestsPerAddress``.
    public func createJoinRequest(
        lookup: String,
        publicKey: [UInt8],
        agreementKey: [UInt8],
        name: String,
        tag: [UInt8],
        signedFor: ServiceOrigin,
        from client: String? = nil
    ) async throws -> Date {
        try Self.check(publicKey: publicKey, name: name)
        guard agreementKey.count == 32 else {
            throw SyncServerError(.invalidRequest, "an agreement key is an X25519 public key of 32 bytes")
        }
        guard tag.count == 32 else { throw SyncServerError(.invalidRequest, "a tag is an HMAC-SHA256 of 32 bytes") }
        _ = try checkOrigin(signedFor)
        let now = configuration.now()
        let expires = now.addingTimeInterval(configuration.joinRequestLifetime)
        let address = client.map(Self.addressKey)
        if let address { try reserveJoin(for: address, until: expires, now: now) }
        do {
            try await store.saveJoinRequest(
                JoinRequest(
                    lookup: lookup,
                    publicKey: publicKey,
                    agreementKey: agreementKey,
                    name: name,
                    tag: tag,
                    expires: expires
                ),
                now: now,
                maxPending: configuration.maxJoinRequests
            )
        } catch {
            if let address { releaseJoin(for: address, until: expires) }
            throw error
        }
        return expires
    }

    /// Counts a join request of `address` in until `expires`, or throws `busy` when that address
    /// has ``SyncServerConfiguration/maxJoinRequestsPerAddress`` pending. Expired entries of every
    /// address go first (the map holds at most the pending requests of this instance).
    private func reserveJoin(for address: String, until expires: Date, now: Date) throws {
        let cap = configuration.maxJoinRequestsPerAddress
        let admitted = joinsByAddress.withLock { pending -> Bool in
            for (key, expiries) in pending {
                let left = expiries.filter { $0 > now }
                pending[key] = left.isEmpty ? nil : left
            }
            guard pending[address, default: []].count < cap else { return false }
            pending[address, default: []].append(expires)
            return true
        }
        guard admitted else {
            throw SyncServerError(
                .busy,
                "too many join requests are pending from this address (\(cap)); retry when one has expired"
            )
        }
    }

    private func releaseJoin(for address: String, until expires: Date) {
        joinsByAddress.withLock { pending in
            guard var expiries = pending[address], let index = expiries.firstIndex(of: expires) else { return }
            expiries.remove(at: index)
            pending[address] = expiries.isEmpty ? nil : expiries
        }
    }

    /// The key one client address counts under: an IPv4 address as it is (an IPv4-mapped IPv6
    /// one included), an IPv6 address by its /64 prefix (one host usually has the whole /64).
    static func addressKey(_ address: String) -> String {
        let address = address.lowercased()
        guard address.contains(":") else { return address }
        if address.contains("."), let last = address.split(separator: ":").last { return String(last) }
        let halves = address.components(separatedBy: "::")
        let head = halves[0].split(separator: ":", omittingEmptySubsequences: true).map(String.init)
        let tail = halves.count > 1 ? halves[1].split(separator: ":").map(String.init) : []
        let zeros = Array(repeating: "0", count: max(0, 8 - head.count - tail.count))
        let groups = (head + (halves.count > 1 ? zeros : []) + tail).map { group -> String in
            let trimmed = group.drop { $0 == "0" }
            return trimmed.isEmpty ? "0" : String(trimmed)
        }
        return groups.prefix(4).joined(separator: ":") + "::/64"
    }

    /// The pending join request with `lookup`, for an enrolled device (`caller`) to approve.
    public func joinRequest(lookup: String, by caller: EnrolledDevice) async throws -> JoinRequest {
        guard let request = try await store.joinRequest(lookup: lookup, now: configuration.now()) else {
            throw SyncServerError(.notFound, "no join request for this code (or it expired)")
        }
        return request
    }

    /// Stores the grant an enrolled device sealed for the join request with `lookup` (once).
    public func grantJoin(lookup: String, grant: [UInt8], by caller: EnrolledDevice) async throws {
        guard !grant.isEmpty, grant.count <= configuration.maxGrantBytes else {
            throw SyncServerError(
                .invalidRequest,
                "a grant has 1 to \(configuration.maxGrantBytes) bytes"
            )
        }
        try await store.saveJoinGrant(grant, lookup: lookup, now: configuration.now())
    }

    /// The grant of the join request with `lookup`: nil while it waits for approval. Open to the
    /// new device, which is not enrolled yet: the grant is sealed to its key.
    ///
    /// - Throws: `notFound` when there is no such request (or it expired).
    public func joinGrant(lookup: String) async throws -> [UInt8]? {
        guard let request = try await store.joinRequest(lookup: lookup, now: configuration.now()) else {
            throw SyncServerError(.notFound, "no join request for this code (or it expired)")
        }
        return request.grant
    }

    // MARK: Authentication

    /// A challenge for `device` to sign, good for ``SyncServerConfiguration/challengeLifetime``.
    public func challenge(device: String) async throws -> (challenge: [UInt8], expires: Date) {
        guard let enrolled = try await store.device(device), enrolled.revoked == nil else {
            throw SyncServerError(.unauthorized, "the device is not enrolled (or was revoked)")
        }
        let challenge = configuration.randomBytes(32)
        let now = configuration.now()
        let expires = now.addingTimeInterval(configuration.challengeLifetime)
        try await store.saveChallenge(
            hash: Self.hash(challenge),
            device: device,
            expires: expires,
            keepAtMost: configuration.maxChallengesPerDevice,
            purgeBefore: purge(\.challenges, now: now)
        )
        return (challenge, expires)
    }

    /// A bearer token for `device`, when `signature` is its signature of
    /// ``DeviceSignatures/tokenRequest(server:device:challenge:)`` for `signedFor` (which must be
    /// this server's origin) and a challenge issued to it, unused and not expired. The challenge is
    /// used up whatever the outcome (a relayed challenge included).
    public func token(
        device: String,
        challenge: [UInt8],
        signedFor: ServiceOrigin,
        signature: [UInt8]
    ) async throws -> IssuedToken {
        let refused = SyncServerError(.unauthorized, "the challenge's answer is not valid; ask for a new challenge")
        guard let issued = try await store.takeChallenge(hash: Self.hash(challenge)) else { throw refused }
        let server = try checkOrigin(signedFor)
        let now = configuration.now()
        guard constantTimeEqual(issued.device, device), now < issued.expires,
            let enrolled = try await store.device(device), enrolled.revoked == nil,
            DeviceSignatures.verify(
                signature,
                of: DeviceSignatures.tokenRequest(server: server, device: device, challenge: challenge),
                by: enrolled.publicKey
            )
        else { throw refused }
        let token = Base64URL.encode(configuration.randomBytes(32))
        let expires = now.addingTimeInterval(configuration.tokenLifetime)
        try await store.saveToken(
            hash: Self.hash(Array(token.utf8)),
            device: device,
            expires: expires,
            purgeBefore: purge(\.tokens, now: now)
        )
        return IssuedToken(token: token, expires: expires, device: enrolled)
    }

    /// The device a bearer token belongs to; throws ``SyncServerError/Code/unauthorized`` for an
    /// unknown or expired token or a revoked device.
    public func authenticate(token: String) async throws -> EnrolledDevice {
        guard !token.isEmpty, token.utf8.count <= 128,
            let device = try await store.tokenHolder(hash: Self.hash(Array(token.utf8)), now: configuration.now())
        else { throw SyncServerError(.unauthorized, "the token is unknown, expired or revoked; sign a new challenge") }
        return device
    }

    /// `now` when expired rows of that kind are due for deletion (at most once per
    /// ``SyncServerConfiguration/purgeInterval``), else nil.
    private func purge(_ kind: WritableKeyPath<(challenges: Date, tokens: Date), Date>, now: Date) -> Date? {
        let interval = configuration.purgeInterval
        return lastPurge.withLock { last in
            guard now.timeIntervalSince(last[keyPath: kind]) >= interval else { return nil }
            last[keyPath: kind] = now
            return now
        }
    }

    static func hash(_ secret: [UInt8]) -> [UInt8] { Array(SHA256.hash(data: secret)) }

    // MARK: Items

    /// Compare-and-swap of one item (``VaultSync/ReferenceSyncServer/push(_:)``).
    public func push(_ mutation: Mutation, by caller: EnrolledDevice) async throws -> PushResponse {
        guard mutation.payload.count <= configuration.maxItemBytes else {
            throw SyncServerError(
                .tooLarge,
                "item \(mutation.item)'s payload has \(mutation.payload.count) bytes; the server accepts at most \(configuration.maxItemBytes)"
            )
        }
        let response = try await store.push(mutation, account: caller.account)
        if case .accepted = response { notifier.notify(caller.account) }
        return response
    }

    /// What changed in the caller's account after `cursor`; with `wait`, a long poll: when nothing
    /// did, waits up to `wait` (at most ``SyncServerConfiguration/maxWait``) for a write and answers
    /// as soon as one lands (or with nothing when the time is up). A write through this service
    /// wakes the poll at once; one through another instance on the same database is seen at the
    /// next re-check (``SyncServerConfiguration/recheck``). Cancelled while it waits, it answers
    /// with nothing new at once.
    public func changes(
        since cursor: UInt64,
        by caller: EnrolledDevice,
        wait: Duration? = nil
    ) async throws
        -> ChangeBatch
    {
        let clock = ContinuousClock()
        let wait = min(wait ?? .zero, configuration.maxWait)
        let deadline = clock.now + wait
        let (notifier, account) = (self.notifier, caller.account)
        let recheck = store.sharedByInstances ? configuration.recheck : nil
        var admitted = false
        defer { if admitted { leaveLongPoll(caller.id) } }
        while true {
            let seen = notifier.version(of: account)
            let batch = try await store.changes(
                account: account,
                since: cursor,
                limit: configuration.changesLimit,
                maxBytes: configuration.changesMaxBytes
            )
            if batch.items.isEmpty, cursor > batch.sequence {
                throw SyncServerError(
                    .cursorAhead,
                    "the cursor is beyond the server's latest change (restored from a backup?); resync from 0"
                )
            }
            let left = deadline - clock.now
            guard batch.items.isEmpty, left > .zero else { return batch }
            if !admitted {
                try enterLongPoll(caller.id)
                admitted = true
            }
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await notifier.wait(for: account, beyond: seen) }
                group.addTask { try? await Task.sleep(for: recheck.map { min(left, $0) } ?? left) }
                await group.next()
                group.cancelAll()
            }
            // Cancelled (the server stopping): answered with nothing new at once, rather than
            // holding the shutdown for the rest of the wait; the device asks again.
            if Task.isCancelled { return batch }
        }
    }

    /// Counts a long poll of `device` in, or throws ``SyncServerError/Code/busy`` when that device
    /// or the server has as many waiting as allowed.
    private func enterLongPoll(_ device: String) throws {
        let (perDevice, total) = (configuration.maxLongPollsPerDevice, configuration.maxLongPolls)
        let admitted = longPolls.withLock { polls in
            guard polls.total < total, polls.perDevice[device, default: 0] < perDevice else { return false }
            polls.total += 1
            polls.perDevice[device, default: 0] += 1
            return true
        }
        guard admitted else {
            throw SyncServerError(.busy, "too many long polls are waiting (for this device or the server); retry later")
        }
    }

    private func leaveLongPoll(_ device: String) {
        longPolls.withLock { polls in
            polls.total -= 1
            polls.perDevice[device, default: 1] -= 1
            if polls.perDevice[device] == 0 { polls.perDevice[device] = nil }
        }
    }

    /// Long polls waiting now, and waiters on the change notifier (tests: none may be left behind).
    public var waitingLongPolls: (polls: Int, waiters: Int) {
        (longPolls.withLock { $0.total }, notifier.waiting)
    }
}
