import Crypto
import Foundation
public import KeyhavenApp
import SyncClient
import Vault
public import VaultSync
import _KeyhavenSupport

/// A second device joins the account (docs/sync.md "A device joins"): the new device posts a join
/// request bound to a join code by a MAC; a device already in checks it with the code, approves
/// the new key and seals the sync vault key to it; the server relays both and can open neither.
extension KeyhavenSession {
    /// A new random join code (80 bits) as the person reads it, `XXXX-XXXX-XXXX-XXXX`: what
    /// `keyhaven sync join` shows and passes in ``KeyhavenApp/SessionRequest/syncJoin(server:deviceName:code:timeoutSeconds:)``.
    public static func makeJoinCode() -> String {
        var random = SystemRandomNumberGenerator()
        return JoinCode(using: &random).text
    }

    /// Turns sync on for this vault as a new device of an existing account: makes this device's key
    /// and an ephemeral X25519 key, posts a join request for `code` (which the person carries to a
    /// device already in: `keyhaven device approve`), waits up to `timeout` for the grant (asking
    /// every `poll`, no longer than the server keeps the request; each round is activity, so the
    /// idle lock does not fire), checks its MAC and opens it, checks again that the vault is
    /// unlocked and sync off, enrols with the approval inside (a lost answer asked again), saves
    /// the sync state (the received sync vault key, a new replica holding every credential of this
    /// vault) in one vault transaction, then syncs: everything on the server comes in and is merged
    /// with this vault's own credentials, which go out as new items. Nothing is written to the vault
    /// before the grant is opened and the device enrolled; a task cancelled before enrolling (the
    /// agent cancels it when the CLI's connection ends) changes nothing. A save that fails after
    /// the enrolment names the device id to revoke (docs/sync.md "A device joins"); a failed first
    /// sync leaves sync on with everything pending.
    ///
    /// - Returns: the status after the first sync.
    /// - Throws: ``SyncError`` `alreadyEnabled`, `invalidInput`, `invalidServer`, `unreachable`,
    ///   `notApproved` (the time ran out, or the wait was stopped: nothing changed here),
    ///   `mismatch` (the grant does not match the code: nothing used; or the enrolment answer does
    ///   not match the grant), `refused`, `locked` (locked during the wait: nothing changed here),
    ///   `storage`.
    public func joinSync(
        server: String,
        deviceName: String,
        code: JoinCode,
        timeout: Duration,
        poll: Duration = .seconds(1)
    ) async throws(SyncError) -> SyncStatus {
        let claim = try SyncGate.claim(self)
        defer { claim.release() }
        let name = try checkSyncOff(
            deviceName: deviceName,
            advice: "`keyhaven sync disable` first to join another account"
        )
        let key = SyncDeviceKey()
        let agreement = Curve25519.KeyAgreement.PrivateKey()
        let client = try Self.client(server: server, key: key, account: nil, now: configuration.now)
        let fields = await client.joinFields(
            lookup: code.lookup,
            agreementKey: Array(agreement.publicKey.rawRepresentation),
            name: name
        )
        let expires: Date
        do {
            expires = try await client.postJoinRequest(fields, tag: DeviceJoin.tag(fields, code: code))
        } catch let error as SyncClientError where error.code == .alreadyExists {
            throw SyncError(
                .refused,
                "a join request for this code is pending already: start `keyhaven sync join` again"
            )
        } catch {
            throw Self.syncError(error, pending: nil, doing: "asking to join")
        }
        // The server drops the request at `expires`: waiting longer would only end in "not
        // approved" for an approval nobody can make any more (a margin for the last round trip).
        let lifetime = expires.timeIntervalSince(configuration.now()) - Self.joinMargin
        let capped = lifetime > 0 && lifetime < Double(timeout.components.seconds)
        let sealed = try await waitForGrant(
            client,
            lookup: code.lookup,
            timeout: capped ? .seconds(lifetime) : timeout,
            cappedByServer: capped,
            poll: poll
        )
        let grant: JoinGrant
        do {
            grant = try DeviceJoin.open(sealed, for: fields, agreementKey: agreement, code: code)
        } catch {
            throw SyncError(
                .mismatch,
                "\(error.message). Nothing changed on this device; run `keyhaven sync join` again for a new code"
            )
        }
        // Last checks before the server learns of this device: the wait may have been long (the
        // vault locked, sync turned on by another process, the join stopped); once enrolled, a
        // failure here leaves a device on the server that only a revoke removes (docs/sync.md).
        guard isUnlocked else { throw Self.lockedDuringJoin }
        if Task.isCancelled { throw Self.joinStopped }
        if try loadSyncState() != nil {
            throw SyncError(
                .alreadyEnabled,
                "sync was turned on for this vault meanwhile (another process); this device was not enrolled"
            )
        }
        let enrolled = try await enrol(client, grant: grant, name: name, key: key)
        guard enrolled else { throw Self.joinStopped }
        var random = SystemRandomNumberGenerator()
        let initial = SyncDeviceState(
            server: await client.server,
            account: grant.account,
            deviceName: name,
            deviceKey: key,
            vaultKey: grant.vaultKey,
            vaultID: grant.vaultID,
            replica: SyncReplica(device: DeviceID(using: &random)),
            lastSync: nil
        )
        let now = milliseconds
        do {
            _ = try syncVault { transaction in
                var state = initial
                guard try SyncDeviceState.load(transaction) == nil else {
                    throw SyncError(.alreadyEnabled, "sync was turned on meanwhile (another process)")
                }
                // This vault's credentials become new items of the account; the first sync below
                // pulls everything else from the start and merges (the path `enableSync` takes).
                try VaultReplicaFold.fold(transaction, into: &state.replica, base: [:], unreadable: [], now: now)
                try state.save(transaction, replica: true)
                return true
            }
        } catch {
            // Enrolled on the server, nothing saved here: the key is gone with this process, so
            // the way back is a revoke from a device already in, then a new join.
            throw SyncError(
                error.code,
                "\(error.message). This device was enrolled on the server (device \(key.id)) but could not be "
                    + "saved here: revoke it from a device already in (`keyhaven device revoke \(key.id)`), then "
                    + "run `keyhaven sync join` again"
            )
        }
        let signedIn = try Self.client(server: initial.server, key: key, account: grant.account, now: configuration.now)
        return try await run(client: signedIn).status
    }

    /// Asks the server for the grant every `poll` until it arrives or `timeout` has passed. Each
    /// round counts as activity (the idle lock does not fire in the middle of a join); a vault
    /// locked meanwhile (`keyhaven lock`) stops the wait. A failed round (no connection, a 5xx, a
    /// busy server) is retried after a short back-off until the deadline: one lost answer among
    /// hundreds does not waste the approval.
    private func waitForGrant(
        _ client: SyncHTTPClient,
        lookup: String,
        timeout: Duration,
        cappedByServer: Bool,
        poll: Duration
    ) async throws(SyncError) -> [UInt8] {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        let seconds = timeout.components.seconds
        let minutes = seconds / 60
        let shown =
            minutes >= 1 && seconds % 60 == 0
            ? "\(minutes) minute\(minutes == 1 ? "" : "s")"
            : "\(seconds) seconds"
        let notApproved = SyncError(
            .notApproved,
            "no device approved this one within \(shown)"
                + (cappedByServer ? " (the server keeps a join request no longer)" : "")
                + "; nothing changed on this device (sync stays off). Run `keyhaven sync join` again for a "
                + "new code, and `keyhaven device approve` on a device already in sync"
        )
        var failure: SyncError?
        var backOff = poll
        while true {
            guard isUnlocked else { throw Self.lockedDuringJoin }
            touch()
            do {
                if let grant = try await client.joinGrant(lookup: lookup) { return grant }
                failure = nil
                backOff = poll
            } catch let error as SyncClientError where error.code == .notFound {
                throw notApproved
            } catch is CancellationError {
                throw Self.joinStopped
            } catch let error as SyncClientError where Self.retryable(error) {
                failure = Self.syncError(error, pending: nil, doing: "waiting for the approval")
                backOff = min(backOff * 2, .seconds(5))
            } catch {
                throw Self.syncError(error, pending: nil, doing: "waiting for the approval")
            }
            let pause = failure == nil ? poll : backOff
            guard clock.now + pause < deadline else {
                if let failure {
                    throw SyncError(failure.code, failure.message + " Nothing changed on this device (sync stays off).")
                }
                throw notApproved
            }
            do {
                try await Task.sleep(for: pause)
            } catch {
                throw Self.joinStopped
            }
        }
    }

    /// Enrols `key` in the grant's account. An answer lost on the way (no answer, a broken
    /// connection, a 5xx, a busy server) is asked again a few times; `alreadyEnrolled` after such
    /// a loss is this device's own earlier attempt (the key is brand new), so it counts as done.
    /// The server's answer must name the grant's account and this key. Returns false when the
    /// join was stopped before the first attempt.
    private func enrol(
        _ client: SyncHTTPClient,
        grant: JoinGrant,
        name: String,
        key: SyncDeviceKey
    ) async throws(SyncError) -> Bool {
        var attempts = 0
        while true {
            attempts += 1
            do {
                let device = try await client.enrol(
                    account: grant.account,
                    name: name,
                    approver: grant.approver,
                    approval: grant.approval
                )
                guard device.account == grant.account, device.id == key.id else {
                    throw SyncError(
                        .mismatch,
                        "the server's answer names another account or device than the approval; nothing was saved "
                            + "on this device. Revoke device \(key.id) from a device already in"
                    )
                }
                return true
            } catch let error as SyncClientError where error.code == .alreadyEnrolled && attempts > 1 {
                return true
            } catch let error as SyncClientError where attempts < Self.enrolAttempts && Self.retryable(error) {
                try? await Task.sleep(for: .milliseconds(250 * attempts))
            } catch let error as SyncError {
                throw error
            } catch is CancellationError {
                if attempts == 1 { return false }
                throw SyncError(
                    .unreachable,
                    "the join was stopped while enrolling: device \(key.id) may be enrolled on the server with "
                        + "nothing saved here; revoke it from a device already in"
                )
            } catch {
                let failed = Self.syncError(error, pending: nil, doing: "enrolling this device")
                throw SyncError(
                    failed.code,
                    failed.message + " Nothing was saved on this device; if the server enrolled it anyway, "
                        + "`keyhaven device list` on a device already in shows it (device \(key.id)) to revoke"
                )
            }
        }
    }

    static let enrolAttempts = 4

    /// A failure worth asking again: no connection, no answer, a 5xx, a busy server.
    static func retryable(_ error: SyncClientError) -> Bool {
        let codes: [SyncClientError.Code] = [.unreachable, .noAnswer, .serverFailure, .busy]
        return codes.contains(error.code)
    }
    /// How long before the server's expiry of a join request the wait gives up.
    static let joinMargin: TimeInterval = 5

    static var lockedDuringJoin: SyncError {
        SyncError(.locked, "the vault was locked while waiting for the approval; nothing changed on this device")
    }

    static var joinStopped: SyncError {
        SyncError(.notApproved, "the wait for approval was stopped; nothing changed on this device (sync stays off)")
    }

    /// Approves the device waiting with join code `code` (as the person typed it): fetches its
    /// request, checks the request's tag under the code (a server that swapped the new device's
    /// keys cannot make a valid one), signs the approval of its key and seals the grant (the
    /// account, this device's approval, the sync vault key and vault id) to the new device's
    /// X25519 key, with a MAC under the code.
    ///
    /// - Throws: ``SyncError`` `notEnabled`, `invalidInput` (not a join code), `notFound` (no such
    ///   request: mistyped, expired, another server), `mismatch` (nothing approved), `refused`,
    ///   `unreachable`, `locked`.
    public func approveDevice(code text: String) async throws(SyncError) -> SyncApproval {
        let code: JoinCode
        do {
            code = try JoinCode(parsing: text)
        } catch {
            throw SyncError(.invalidInput, error.message)
        }
        let (state, client) = try enabledSync()
        let pending: (fields: JoinRequestFields, tag: [UInt8])
        do {
            pending = try await client.joinRequest(lookup: code.lookup)
        } catch let error as SyncClientError where error.code == .notFound {
            throw SyncError(
                .notFound,
                "no join request for this code on \(state.server): check the code the new device shows, that it "
                    + "was made in the last 10 minutes, and that both devices use this server; nothing was approved"
            )
        } catch {
            throw Self.syncError(error, pending: nil, doing: "fetching the join request")
        }
        let fields = pending.fields
        guard DeviceJoin.verifyTag(pending.tag, of: fields, code: code) else {
            throw SyncError(
                .mismatch,
                "the join request does not match this code — someone may have altered it; nothing was approved. "
                    + "(The new device must use the same server URL as this one: \(state.server).)"
            )
        }
        do {
            let grant = JoinGrant(
                account: state.account,
                approver: state.deviceKey.id,
                approval: try await client.approval(of: fields.publicKey),
                vaultKey: state.vaultKey,
                vaultID: state.vaultID
            )
            try await client.grantJoin(lookup: code.lookup, grant: try DeviceJoin.seal(grant, for: fields, code: code))
        } catch let error as SyncClientError where error.code == .alreadyExists {
            throw SyncError(.refused, "this join request was approved already (by this or another device)")
        } catch {
            throw Self.syncError(error, pending: nil, doing: "approving the device")
        }
        return SyncApproval(
            deviceID: DeviceSignatures.deviceID(publicKey: fields.publicKey),
            deviceName: Self.printable(fields.name),
            account: state.account
        )
    }

    /// The account's devices as the server lists them, revoked ones included; this one marked.
    ///
    /// - Throws: ``SyncError`` `notEnabled`, `unreachable`, `refused`, `locked`.
    public func syncDevices() async throws(SyncError) -> [SyncDeviceEntry] {
        let (state, client) = try enabledSync()
        do {
            return try await client.devices().map { Self.entry($0, this: state.deviceKey.id) }
        } catch {
            throw Self.syncError(error, pending: nil, doing: "listing the devices")
        }
    }

    /// Revokes device `id` of the account: its sign-ins fail from now on. Refused for this device
    /// itself (`keyhaven sync disable` turns sync off here). The sync vault key is not rotated: a
    /// revoked device keeps what it already had (docs/sync.md "Not yet").
    ///
    /// - Throws: ``SyncError`` `notEnabled`, `invalidInput` (this device, or not an id), `notFound`,
    ///   `unreachable`, `refused`, `locked`.
    public func revokeDevice(_ id: String) async throws(SyncError) -> SyncDeviceEntry {
        let id = id.lowercased()
        guard id.utf8.count == 32, id.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else {
            throw SyncError(.invalidInput, "a device id is 32 hex digits (`keyhaven device list` shows them)")
        }
        let (state, client) = try enabledSync()
        guard id != state.deviceKey.id else {
            throw SyncError(
                .invalidInput,
                "that is this device: to stop syncing here run `keyhaven sync disable`, and revoke it from "
                    + "another device"
            )
        }
        do {
            return Self.entry(try await client.revoke(id), this: state.deviceKey.id)
        } catch let error as SyncClientError where error.code == .notFound {
            throw SyncError(
                .notFound,
                "device \(id) is not a device of this account that may still sync (`keyhaven device list`)"
            )
        } catch {
            throw Self.syncError(error, pending: nil, doing: "revoking device \(id)")
        }
    }

    private static func entry(_ device: SyncDevice, this: String) -> SyncDeviceEntry {
        SyncDeviceEntry(
            id: device.id,
            name: printable(device.name),
            created: device.created,
            approvedBy: device.approvedBy,
            revoked: device.revoked,
            current: device.id == this
        )
    }
}
