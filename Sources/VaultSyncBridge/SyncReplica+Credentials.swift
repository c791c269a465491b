public import Passkeys
public import Vault
public import VaultSync

extension SyncReplica {
    /// Takes in a credential the vault held before it synced (``CredentialRecordMapping/record(for:id:device:)``),
    /// with its history and dates, as item `id`; it is sent on the next push.
    public mutating func adopt(_ credential: SyncedCredential, as id: ItemID, now: UInt64) throws(VaultSyncError) {
        try adopt(CredentialRecordMapping.record(for: credential, id: id, device: device, notAfter: now), now: now)
    }

    /// Writes an edit of the credential of `item`: one write per field whose value changed, a
    /// passkey the item has and `passkeys` has not removed. A changed password's old value becomes
    /// history. Returns false when nothing changed.
    ///
    /// - Throws: ``VaultSyncError/Code/unknownItem`` when the item is not on this device,
    ///   ``VaultSyncError/Code/duplicatePasskey`` (nothing is written then).
    @discardableResult
    public mutating func write(
        _ content: CredentialContent,
        passkeys: [PasskeyCredential],
        to item: ItemID,
        now: UInt64
    ) throws(VaultSyncError) -> Bool {
        guard let record = records[item] else {
            throw VaultSyncError(.unknownItem, "item \(item) is not on this device", details: item)
        }
        var values = try CredentialRecordMapping.fieldValues(of: content, passkeys: passkeys, item: item)
        for key in record.fields.keys where key.isPasskey && values[key] == nil { values[key] = .absent }
        var changed = false
        for key in values.keys.sorted() {
            if try set(key, to: values[key] ?? .absent, in: item, now: now) { changed = true }
        }
        return changed
    }

    /// The credential of `item` (``CredentialRecordMapping/credential(from:)``).
    ///
    /// - Throws: ``VaultSyncError/Code/unknownItem``, and the mapping's errors.
    public func credential(_ item: ItemID) throws(VaultSyncError) -> SyncedCredential {
        guard let record = records[item] else {
            throw VaultSyncError(.unknownItem, "item \(item) is not on this device", details: item)
        }
        return try CredentialRecordMapping.credential(from: record)
    }
}
