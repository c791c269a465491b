public import VaultSync

extension VaultSyncError.Code {
    /// A record holds a field this Keyhaven does not know (a newer version wrote it): update
    /// Keyhaven on this device. Nothing of the record is used, so no field is dropped unread.
    public static var unknownField: Self { Self("unknownField") }
    /// A field's value is not the one encoding the mapping writes for that field (the wrong shape,
    /// an empty text where no text is written, bytes that are not a passkey or sign-in link, a
    /// passkey under another passkey's name). Nothing of the record is used.
    public static var malformedField: Self { Self("malformedField") }
    /// Two passkeys given for one item have the same relying party and credential id.
    public static var duplicatePasskey: Self { Self("duplicatePasskey") }
}

extension VaultSyncError {
    static func malformed(_ field: FieldKey, in item: ItemID, _ why: String) -> VaultSyncError {
        VaultSyncError(
            .malformedField,
            "item \(item): its field \(field) \(why); the item was not read (update Keyhaven on this device, "
                + "or sync again from a device that wrote it)",
            details: item
        )
    }
}
