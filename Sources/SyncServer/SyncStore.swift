public import Foundation
public import VaultSync

/// A device enrolled in an account: its public key (Ed25519, raw), the name its person gave it,
/// when it was enrolled, which device approved it and, once revoked, when.
public struct EnrolledDevice: Hashable, Sendable {
    /// ``DeviceSignatures/deviceID(publicKey:)``.
    public var id: String
    public var account: String
    public var publicKey: [UInt8]
    public var name: String
    public var created: Date
    public var revoked: Date?
    /// The device that approved this one (nil for an account's first device).
    public var approvedBy: String?

    public init(
        id: String,
        account: String,
        publicKey: [UInt8],
        name: String,
        created: Date,
        revoked: Date? = nil,
        approvedBy: String? = nil
    ) {
        self.id = id
        self.account = account
        self.publicKey = publicKey
        self.name = name
        self.created = created
        self.revoked = revoked
        self.approvedBy = approvedBy
    }
}

/// A new device's request to join an account (`keyhaven sync join`), kept until it expires: what the
/// device posted, and the grant an enrolled device sealed for it once approved. The server cannot
/// read the grant nor check the tag (both need the join code, which it never sees); it relays them.
public struct JoinRequest: Hashable, Sendable {
    /// 32 hex digits derived from the join code (``VaultSync/JoinCode/lookup``).
    public var lookup: String
    /// The new device's Ed25519 public key (raw).
    public var publicKey: [UInt8]
    /// The new device's X25519 public key (raw): the grant is sealed to it.
    public var agreementKey: [UInt8]
    public var name: String
    /// HMAC-SHA256 under the join code's MAC key (``VaultSync/DeviceJoin/tag(_:code:)``).
    public var tag: [UInt8]
    public var expires: Date
    /// The sealed grant, once a device approved (``VaultSync/DeviceJoin/seal(_:for:code:ephemeral:)``).
    public var grant: [UInt8]?

    public init(
        lookup: String,
        publicKey: [UInt8],
        agreementKey: [UInt8],
        name: String,
        tag: [UInt8],
        expires: Date,
        grant: [UInt8]? = nil
    ) {
        (self.lookup, self.publicKey, self.agreementKey, self.name, self.tag) = (
            lookup, publicKey, agreementKey, name, tag
        )
        (self.expires, self.grant) = (expires, grant)
    }
}

/// Where the sync server keeps its state. Implementations answer pushes and changes exactly as
/// ``VaultSync/ReferenceSyncServer`` does, per account; the tests compare them on random sequences.
///
/// Secrets are never stored: challenges and tokens arrive here as SHA-256 hashes.
public protocol SyncStore: Sendable {
    /// True when several server instances may write through other connections (PostgreSQL): long
    /// polls then look at the database again every ``SyncServerConfiguration/recheck``.
    var sharedByInstances: Bool { get }

    /// Creates `account` with its first device. Throws ``SyncServerError/Code/alreadyEnrolled``
    /// when the device's key is enrolled anywhere already.
    func createAccount(_ account: String, firstDevice: EnrolledDevice) async throws
    /// Adds `device` to its account (which must exist), approved by the device `approver`. In the
    /// same transaction, checks that `approver` is a device of that account and not revoked
    /// (``SyncServerError/Code/forbidden`` otherwise), so a revocation cannot slip in between.
    /// Throws ``SyncServerError/Code/alreadyEnrolled`` when its key is enrolled anywhere already,
    /// revoked or not.
    func addDevice(_ device: EnrolledDevice, approvedBy approver: String) async throws
    func device(_ id: String) async throws -> EnrolledDevice?
    func devices(of account: String) async throws -> [EnrolledDevice]
    /// Marks `device` revoked at `date` and deletes its tokens. False when it was not in `account`
    /// or already revoked.
    func revoke(_ device: String, of account: String, at date: Date) async throws -> Bool

    /// Remembers a challenge (its hash) issued to `device`, keeping at most `keepAtMost` of that
    /// device's (its oldest go first), and forgets expired ones (`expires <= purgeBefore`) when
    /// `purgeBefore` is given.
    func saveChallenge(hash: [UInt8], device: String, expires: Date, keepAtMost: Int, purgeBefore: Date?) async throws
    /// Forgets the challenge with `hash` and returns whom it was issued to and until when: a
    /// challenge is answered at most once.
    func takeChallenge(hash: [UInt8]) async throws -> (device: String, expires: Date)?
    /// Remembers a bearer token (its hash) of `device`, and forgets expired ones when `purgeBefore`
    /// is given.
    func saveToken(hash: [UInt8], device: String, expires: Date, purgeBefore: Date?) async throws
    /// The device holding the token with `hash`, if the token has not expired at `now` and the
    /// device is not revoked.
    func tokenHolder(hash: [UInt8], now: Date) async throws -> EnrolledDevice?

    /// Stores a join request, after deleting the expired ones (`expires <= now`). Throws
    /// ``SyncServerError/Code/alreadyExists`` when a request with its lookup is pending, and
    /// ``SyncServerError/Code/busy`` when `maxPending` requests are pending already.
    func saveJoinRequest(_ request: JoinRequest, now: Date, maxPending: Int) async throws
    /// The pending (not expired at `now`) join request with `lookup`, its grant included.
    func joinRequest(lookup: String, now: Date) async throws -> JoinRequest?
    /// Stores the grant of the pending request with `lookup`. Throws
    /// ``SyncServerError/Code/notFound`` when there is none (or it expired) and
    /// ``SyncServerError/Code/alreadyExists`` when it has a grant already (a grant is stored once).
    func saveJoinGrant(_ grant: [UInt8], lookup: String, now: Date) async throws

    /// Compare-and-swap of one item of `account` (``VaultSync/ReferenceSyncServer/push(_:)``).
    func push(_ mutation: Mutation, account: String) async throws -> PushResponse
    /// The items of `account` changed after `cursor`, at most `limit` of them and payloads of at
    /// most `maxBytes` in all (but always at least one item when there is one), oldest first; the
    /// batch's sequence is the cursor to ask from next (the last item's when a limit cut it).
    func changes(account: String, since cursor: UInt64, limit: Int, maxBytes: Int) async throws -> ChangeBatch
}

extension SyncStore {
    public var sharedByInstances: Bool { false }
}

/// One page of changes as a store reads it, oldest first: at most `limit` items and `maxBytes` of
/// payload, but always the first item (so an item as large as the page cap still gets through).
public struct ChangePage: Sendable {
    public let limit: Int
    public let maxBytes: Int
    public private(set) var items: [ServerItem] = []
    private var bytes = 0
    /// A further item was offered and did not fit: the page was cut.
    public private(set) var full = false

    public init(limit: Int, maxBytes: Int) {
        self.limit = limit
        self.maxBytes = maxBytes
    }

    /// Adds `item` when it fits; false (and ``full``) when it does not.
    public mutating func add(_ item: ServerItem) -> Bool {
        guard !full else { return false }
        guard items.isEmpty || (items.count < limit && bytes + item.payload.count <= maxBytes) else {
            full = true
            return false
        }
        items.append(item)
        bytes += item.payload.count
        return true
    }

    /// The batch: its sequence is the last item's when the page was cut, else the account's latest.
    public func batch(cursor: UInt64, latest: UInt64) -> ChangeBatch {
        ChangeBatch(items: items, sequence: full ? items.last?.sequence ?? cursor : latest)
    }
}
