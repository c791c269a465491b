import Foundation
public import KeyhavenApp
import Passkeys
public import Vault
import VaultSync
import VaultSyncBridge
import _KeyhavenSupport

/// Conflicts as the person sees and answers them (`keyhaven list --conflicts`, `keyhaven sync
/// resolve`, the web app's sync page): a field written on two devices without one seeing the other
/// keeps the later value current and the other in history, marked (docs/sync.md); the person picks
/// one, and the pick is an edit like any other, sent by the next sync, which clears the mark on
/// every device.
extension KeyhavenSession {
    /// The credentials with conflict marks, each with its conflicting fields (current value, the
    /// other value, when the other was written). The values of secret fields (password, notes,
    /// TOTP secret) are left out unless `reveal`. Reads the vault only (edits made since the last
    /// sync are taken into account, nothing is written).
    ///
    /// - Throws: ``SyncError`` `notEnabled`, `locked`, `damaged`, `storage`.
    public func syncConflicts(reveal: Bool) throws(SyncError) -> [SyncConflictItem] {
        let now = CredentialRecordMapping.milliseconds(configuration.now())
        return try syncVault(readOnly: true) { snapshot -> [SyncConflictItem] in
            guard var state = try SyncDeviceState.load(snapshot) else { throw Self.notEnabled }
            let (known, unreadable) = VaultReplicaFold.credentials(of: state.replica)
            try VaultReplicaFold.fold(snapshot, into: &state.replica, base: known, unreadable: unreadable, now: now)
            return SyncConflictListing.items(of: state.replica, reveal: reveal)
        }
    }

    /// Resolves the conflict of `field` in credential `id`: the value `choice` names becomes
    /// current, written on top of the current value and of every value that lost (the replica's
    /// ``VaultSync/SyncReplica/resolveConflicts(in:field:keeping:now:)``), in one vault transaction
    /// that also takes in the vault's edits since the last sync (as a sync's first step does) and
    /// writes the credential back through the vault's own write, so a replaced password goes to the
    /// history. The item is pending: the next sync sends the resolution, and once merged no device
    /// shows the mark.
    ///
    /// It runs under the sync gate, after a sync of this session that runs (waiting up to 30 s), so
    /// that sync does not find the sync state changed under it and fail with `busy`.
    ///
    /// - Returns: the status after it (pending and conflicts counts).
    /// - Throws: ``SyncError`` `busy` (a sync still ran after 30 s), `notEnabled`, `notFound`, `noConflict` (the credential has none, or
    ///   none on `field`, named with the fields that have one), `invalidInput` (an option that is
    ///   not there), `locked`, `damaged`, `storage`.
    public func resolveSyncConflict(
        _ id: CredentialID,
        field: String,
        keeping choice: SyncConflictChoice
    ) async throws(SyncError) -> SyncStatus {
        let claim = try await SyncGate.claim(self, waitingUpTo: .seconds(30))
        defer { claim.release() }
        let now = CredentialRecordMapping.milliseconds(configuration.now())
        let resolve: @Sendable (VaultSyncTransaction) throws -> (status: SyncStatus, changed: Bool) = {
            transaction in
            guard var state = try SyncDeviceState.load(transaction) else { throw Self.notEnabled }
            let (known, unreadable) = VaultReplicaFold.credentials(of: state.replica)
            try VaultReplicaFold.fold(transaction, into: &state.replica, base: known, unreadable: unreadable, now: now)
            let item = ItemID(id)
            guard let record = state.replica.records[item] else {
                throw SyncError(.notFound, "no credential \(id.short) in this vault's sync state")
            }
            let marks = record.conflicts
            guard !marks.isEmpty else {
                throw SyncError(
                    .noConflict,
                    "credential \(id.short) has no conflicts; `keyhaven list --conflicts` shows the ones that do"
                )
            }
            let fields = Array(Set(marks.map(\.field))).sorted()
            guard let key = fields.first(where: { $0.name == field }) else {
                throw SyncError(
                    .noConflict,
                    "credential \(id.short) has no conflict on the field \(KeyhavenSession.printable(field)); "
                        + "its conflicting field\(fields.count == 1 ? " is" : "s are") "
                        + fields.map(\.name).joined(separator: ", ")
                )
            }
            let ofField = marks.filter { $0.field == key }
            let value: FieldValue
            switch choice {
            case .current:
                value = ofField[0].current.value
            case .other(let option):
                guard (1...ofField.count).contains(option) else {
                    throw SyncError(
                        .invalidInput,
                        "the field \(key.name) of credential \(id.short) has "
                            + (ofField.count == 1
                                ? "one other value (--keep other)"
                                : "other values 1 to \(ofField.count) (--keep other:N)")
                    )
                }
                value = ofField[option - 1].other.value
            }
            try state.replica.resolveConflicts(in: item, field: key, keeping: value, now: now)
            let written = try VaultReplicaFold.writeBack(state.replica, into: transaction)
            try state.save(transaction, replica: true)
            return (state.status, written.changed)
        }
        return try syncVault(changedCredentials: { $0.changed }, resolve).status
    }
}

/// The replica's conflict marks as the person reads them.
enum SyncConflictListing {
    /// The fields whose values are secrets: shown only when asked (`--reveal`).
    static let secretFields: Set<String> = ["password", "notes", "totp"]

    static func items(of replica: SyncReplica, reveal: Bool) -> [SyncConflictItem] {
        var items: [SyncConflictItem] = []
        for item in replica.conflicts.keys {
            // A record this Keyhaven cannot read (a newer one wrote it) is left to that one.
            guard let credential = try? replica.credential(item), !credential.conflicts.isEmpty else { continue }
            var options: [String: Int] = [:]
            let conflicts = credential.conflicts.map { conflict -> SyncFieldConflict in
                let name = conflict.field.description
                options[name, default: 0] += 1
                let secret = secretFields.contains(name)
                let masked = secret && !reveal
                return SyncFieldConflict(
                    field: name,
                    option: options[name]!,
                    secret: secret,
                    masked: masked,
                    current: masked ? nil : display(conflict.current),
                    other: masked ? nil : display(conflict.other),
                    otherWritten: conflict.otherWritten
                )
            }
            let content = credential.content
            items.append(
                SyncConflictItem(
                    id: CredentialID(item),
                    title: content.displayTitle,
                    service: content.services.first?.identifier,
                    user: content.user,
                    conflicts: conflicts
                )
            )
        }
        return items.sorted {
            ($0.title.lowercased(), $0.id.rawValue) < ($1.title.lowercased(), $1.id.rawValue)
        }
    }

    /// A value as text; nil for no value.
    static func display(_ value: CredentialFieldValue) -> String? {
        switch value {
        case .text(let text): text
        case .services(let services): services.isEmpty ? nil : services.map(\.identifier).joined(separator: ", ")
        case .signIn(let link): link.map { "signed in with \($0.issuer) as \($0.subject)" }
        case .passkey(let passkey): passkey.map { "passkey for \($0.rpID) (\($0.userName))" }
        }
    }
}
