public import Foundation
public import Passkeys
public import Vault
public import VaultSync

/// The vault's credentials as sync records, and back (issue 28; docs/sync.md "Credentials as
/// records").
///
/// Every field of ``Vault/CredentialContent`` is a field of the record (``CredentialField``), each
/// passkey one field of its own, the password history the password field's earlier versions (each
/// replaced at the stamp of the write after it), "recently deleted" a tombstone. Each value has one
/// encoding (``CredentialFieldValue``), and reading is total: a field this Keyhaven does not know,
/// or a value in any other encoding, in the current versions or in history, is a typed error for
/// the whole record — never a field silently left out.
public enum CredentialRecordMapping {
    /// The value of every content field of `content` and of every passkey, as a record holds them
    /// (``FieldValue/absent`` for an empty one).
    ///
    /// - Throws: ``VaultSyncError/Code/duplicatePasskey`` when two passkeys have one relying party
    ///   and credential id.
    public static func fieldValues(
        of content: CredentialContent,
        passkeys: [PasskeyCredential],
        item: ItemID
    ) throws(VaultSyncError) -> [FieldKey: FieldValue] {
        var values: [FieldKey: FieldValue] = [:]
        for field in CredentialField.content {
            values[field.key] = CredentialFieldValue.of(field, in: content).fieldValue
        }
        for passkey in passkeys {
            let key = FieldKey.passkey(CredentialField.passkeyName(passkey))
            guard values[key] == nil else {
                throw VaultSyncError(
                    .duplicatePasskey,
                    "item \(item) was given two passkeys of one relying party with one credential id; keep one",
                    details: item
                )
            }
            values[key] = CredentialFieldValue.passkey(passkey).fieldValue
        }
        return values
    }

    /// The record of a credential the vault held before it synced, written by `device`: its fields
    /// at ``SyncedCredential/created``, its password history as the password's earlier versions at
    /// the times they were replaced, a tombstone at ``SyncedCredential/deleted``.
    ///
    /// The stamps come from those dates (to the millisecond, kept in order); the replica that takes
    /// the record in (``VaultSync/SyncReplica/adopt(_:now:)``) moves its clock past them. A history
    /// entry equal to the password after it is kept by writing "no password" between the two (a
    /// field never holds the same value twice in a row).
    ///
    /// No stamp is later than `notAfter` (milliseconds; the device's wall clock when it adopts):
    /// a credential dated in the future (a skewed clock, an import, `Date.distantFuture`) would
    /// otherwise move this device's clock there for good, and every later write of this device
    /// would win against every other device's. Dates after it are stamped at it, in their order.
    public static func record(
        for credential: SyncedCredential,
        id: ItemID,
        device: DeviceID,
        notAfter: UInt64 = .max
    ) throws(VaultSyncError) -> SyncRecord {
        var clock = HybridLogicalClock(device: device)
        func milliseconds(_ date: Date) -> UInt64 { min(Self.milliseconds(date), notAfter) }
        var values = try fieldValues(of: credential.content, passkeys: credential.passkeys, item: id)
        let passwords = credential.passwordHistory.map { FieldValue.text($0.password) } + [values[.password] ?? .absent]
        values[.password] = passwords[0]
        var record = SyncRecord.created(
            id: id,
            values: values.filter { $0.value != .absent },
            stamp: clock.send(now: milliseconds(credential.created))
        )
        for (entry, next) in zip(credential.passwordHistory, passwords.dropFirst()) {
            let now = milliseconds(entry.replaced)
            if record[.password] == next { record.set(.password, to: .absent, stamp: clock.send(now: now)) }
            record.set(.password, to: next, stamp: clock.send(now: now))
        }
        if let deleted = credential.deleted { record.delete(stamp: clock.send(now: milliseconds(deleted))) }
        return record
    }

    /// The credential `record` holds, its password history and passkeys, whether it is deleted,
    /// and its conflicts.
    ///
    /// - Throws: ``VaultSyncError/Code/unknownField`` for a field this Keyhaven does not know (a
    ///   newer one wrote it), ``VaultSyncError/Code/malformedField`` or
    ///   ``VaultSyncError/Code/unsupportedFormat`` for a value, current or in history, that is not
    ///   its field's encoding. Nothing of the record is returned then.
    public static func credential(from record: SyncRecord) throws(VaultSyncError) -> SyncedCredential {
        var stamps: [HLCTimestamp] = []
        for key in Set(record.fields.keys).union(record.history.keys) {
            guard let field = CredentialField(key) else {
                throw VaultSyncError(
                    .unknownField,
                    "item \(record.id) has a field \(key) this Keyhaven does not know; update Keyhaven on this device",
                    details: record.id
                )
            }
            for version in record.versions(of: key) {
                _ = try CredentialFieldValue(version.value, of: field, item: record.id)
                stamps.append(version.stamp)
            }
        }
        let item = record.id
        func text(_ field: CredentialField) throws(VaultSyncError) -> String? {
            guard case .text(let text) = try CredentialFieldValue(record[field.key], of: field, item: item) else {
                return nil
            }
            return text
        }
        let services: [ServiceIdentifier]
        if case .services(let list) = try CredentialFieldValue(record[.services], of: .services, item: item) {
            services = list
        } else {
            services = []
        }
        var signIn: SignInLink?
        if case .signIn(let link) = try CredentialFieldValue(record[.signIn], of: .signIn, item: item) { signIn = link }
        let content = CredentialContent(
            title: try text(.title) ?? "",
            services: services,
            user: try text(.user) ?? "",
            password: try text(.password),
            notes: try text(.notes) ?? "",
            totp: try text(.totp),
            folder: try text(.folder),
            signIn: signIn
        )

        let passwords = record.versions(of: .password)
        let history = zip(passwords, passwords.dropFirst()).compactMap { version, next in
            version.value.text.map { PasswordHistoryEntry(password: $0, replaced: date(next.stamp)) }
        }
        var passkeys: [PasskeyCredential] = []
        for (key, version) in record.fields where key.isPasskey {
            guard let field = CredentialField(key),
                case .passkey(let passkey?) = try CredentialFieldValue(version.value, of: field, item: item)
            else { continue }
            passkeys.append(passkey)
        }
        var conflicts: [CredentialConflict] = []
        for conflict in record.conflicts {
            // Every field was read above, so this cannot fail; were it to, the record is refused.
            guard let field = CredentialField(conflict.field) else {
                throw VaultSyncError(
                    .unknownField,
                    "item \(record.id) has a conflict on a field \(conflict.field) this Keyhaven does not know; "
                        + "update Keyhaven on this device",
                    details: record.id
                )
            }
            conflicts.append(
                CredentialConflict(
                    field: field,
                    current: try CredentialFieldValue(conflict.current.value, of: field, item: item),
                    other: try CredentialFieldValue(conflict.other.value, of: field, item: item),
                    otherWritten: date(conflict.other.stamp)
                )
            )
        }
        return SyncedCredential(
            content: content,
            passwordHistory: history,
            passkeys: passkeys,
            created: stamps.min().map(date) ?? Date(timeIntervalSince1970: 0),
            deleted: record.isDeleted ? record.tombstone.map { date($0.stamp) } : nil,
            conflicts: conflicts
        )
    }

    /// A date as a stamp's physical part: milliseconds since 1970, rounded (0 before 1970).
    public static func milliseconds(_ date: Date) -> UInt64 {
        let milliseconds = (date.timeIntervalSince1970 * 1000).rounded()
        guard milliseconds > 0 else { return 0 }
        return milliseconds < 0x1p62 ? UInt64(milliseconds) : 1 << 62
    }

    /// The date of a stamp (to the millisecond).
    public static func date(_ stamp: HLCTimestamp) -> Date {
        Date(timeIntervalSince1970: Double(stamp.physical) / 1000)
    }
}
