internal import Crypto
public import Passkeys
public import Vault
public import VaultSync
import _KeyhavenSupport

/// A field of a credential as sync sees it: one of ``CredentialContent``'s, or one passkey.
public enum CredentialField: Hashable, Sendable, CustomStringConvertible {
    case title, services, user, password, notes, totp, folder, signIn
    /// A passkey, by its sync name (``CredentialField/passkeyName(_:)``).
    case passkey(String)

    /// The record's field.
    public var key: FieldKey {
        switch self {
        case .title: .title
        case .services: .services
        case .user: .user
        case .password: .password
        case .notes: .notes
        case .totp: .totp
        case .folder: .folder
        case .signIn: .signIn
        case .passkey(let name): .passkey(name)
        }
    }

    static let content: [CredentialField] = [.title, .services, .user, .password, .notes, .totp, .folder, .signIn]

    /// The credential field a record's field is; nil for a name this Keyhaven does not know.
    public init?(_ key: FieldKey) {
        if let known = Self.content.first(where: { $0.key == key }) {
            self = known
            return
        }
        let name = key.name.utf8.dropFirst("passkey/".utf8.count)
        guard key.isPasskey, name.count == 16,
            name.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
        else { return nil }
        self = .passkey(String(decoding: name, as: UTF8.self))
    }

    /// A passkey's name in sync: 16 hex digits of SHA-256 over its relying party and credential id,
    /// the same on every device (the vault's own passkey row ids are keyed by each vault's key).
    /// It sits inside the sealed details, never in the clear.
    public static func passkeyName(_ passkey: PasskeyCredential) -> String {
        var hash = SHA256()
        hash.update(data: Array("keyhaven/sync/passkey/v1|".utf8))
        hash.update(data: Array(passkey.rpID.utf8) + [0])
        hash.update(data: passkey.credentialID)
        return Hex.encode(Array(hash.finalize().prefix(8)))
    }

    public var description: String { key.name }
}

/// A field's value as the credential holds it.
///
/// Each has one encoding as a ``FieldValue`` (``fieldValue``), and ``init(_:of:item:)`` reads
/// only that encoding back:
///
/// | field | credential | record |
/// |---|---|---|
/// | title, user, notes | `""` / text | absent / `.text` (never `.text("")`) |
/// | password, totp, folder | `nil` / text | absent / `.text` (`""` included) |
/// | services | `[]` / identifiers | absent / `.list` of `kind tag + identifier` (`d`, `u`) |
/// | signIn | `nil` / link | absent / `.bytes` (issuer, subject, date) |
/// | passkey | removed / passkey | absent / `.bytes` (every property, dates exact) |
public enum CredentialFieldValue: Hashable, Sendable {
    /// Title, user and notes (never nil), password, TOTP secret, folder.
    case text(String?)
    case services([ServiceIdentifier])
    case signIn(SignInLink?)
    case passkey(PasskeyCredential?)

    /// The record's value.
    public var fieldValue: FieldValue {
        switch self {
        case .text(let text): text.map { .text($0) } ?? .absent
        case .services(let services):
            services.isEmpty ? .absent : .list(services.map { ($0.kind == .url ? "u" : "d") + $0.identifier })
        case .signIn(let link): link.map { .bytes(Self.bytes(of: $0)) } ?? .absent
        case .passkey(let passkey): passkey.map { .bytes(Self.bytes(of: $0)) } ?? .absent
        }
    }

    /// The value of `field` a credential with `content` holds (a passkey's is read elsewhere).
    static func of(_ field: CredentialField, in content: CredentialContent) -> CredentialFieldValue {
        switch field {
        case .title: .text(content.title.isEmpty ? nil : content.title)
        case .services: .services(content.services)
        case .user: .text(content.user.isEmpty ? nil : content.user)
        case .password: .text(content.password)
        case .notes: .text(content.notes.isEmpty ? nil : content.notes)
        case .totp: .text(content.totp)
        case .folder: .text(content.folder)
        case .signIn: .signIn(content.signIn)
        case .passkey: .passkey(nil)
        }
    }

    /// Reads `value` as the value of `field` of `item`.
    ///
    /// - Throws: ``VaultSyncError/Code/malformedField`` for anything but the one encoding
    ///   ``fieldValue`` writes for that field; ``VaultSyncError/Code/unsupportedFormat`` for a
    ///   passkey or sign-in link of a newer layout.
    public init(_ value: FieldValue, of field: CredentialField, item: ItemID) throws(VaultSyncError) {
        switch (field, value) {
        case (.title, .text(let text)), (.user, .text(let text)), (.notes, .text(let text)):
            guard !text.isEmpty else { throw .malformed(field.key, in: item, "is an empty text (written as absent)") }
            self = .text(text)
        case (.password, .text(let text)), (.totp, .text(let text)), (.folder, .text(let text)):
            self = .text(text)
        case (.title, .absent), (.user, .absent), (.notes, .absent), (.password, .absent), (.totp, .absent),
            (.folder, .absent):
            self = .text(nil)
        case (.services, .absent): self = .services([])
        case (.services, .list(let entries)):
            guard !entries.isEmpty else {
                throw .malformed(field.key, in: item, "is an empty list (written as absent)")
            }
            var services: [ServiceIdentifier] = []
            for entry in entries {
                let kind: ServiceIdentifier.Kind
                switch entry.utf8.first {
                case UInt8(ascii: "d"): kind = .domain
                case UInt8(ascii: "u"): kind = .url
                default: throw .malformed(field.key, in: item, "has a service of no known kind")
                }
                // The tag is one ASCII byte, so what follows it is whole UTF-8.
                services.append(
                    ServiceIdentifier(kind: kind, identifier: String(decoding: entry.utf8.dropFirst(), as: UTF8.self))
                )
            }
            self = .services(services)
        case (.signIn, .absent): self = .signIn(nil)
        case (.signIn, .bytes(let bytes)): self = .signIn(try Self.signIn(bytes, field: field.key, item: item))
        case (.passkey, .absent): self = .passkey(nil)
        case (.passkey(let name), .bytes(let bytes)):
            let passkey = try Self.passkey(bytes, field: field.key, item: item)
            guard CredentialField.passkeyName(passkey) == name else {
                throw .malformed(field.key, in: item, "holds another passkey than its name says")
            }
            self = .passkey(passkey)
        default:
            throw .malformed(field.key, in: item, "has a value of the wrong kind")
        }
    }

    /// The first byte of a structure's bytes: its layout.
    private static let layout: UInt8 = 1

    static func bytes(of link: SignInLink) -> [UInt8] {
        var writer = BinaryWriter()
        writer.append(link.issuer)
        writer.append(link.subject)
        writer.append(link.linked)
        return [layout] + writer.bytes
    }

    static func bytes(of passkey: PasskeyCredential) -> [UInt8] {
        var writer = BinaryWriter()
        writer.append(passkey.rpID)
        writer.append(passkey.credentialID)
        writer.append(passkey.userHandle)
        writer.append(passkey.userName)
        writer.append(passkey.userDisplayName)
        writer.append(UInt64(bitPattern: Int64(passkey.algorithm)))
        writer.append(passkey.privateKey)
        writer.append(passkey.signCount)
        writer.append(passkey.backupEligible)
        writer.append(passkey.backedUp)
        writer.append(passkey.created)
        writer.append(passkey.lastUsed != nil)
        if let lastUsed = passkey.lastUsed { writer.append(lastUsed) }
        writer.append(passkey.hidden)
        return [layout] + writer.bytes
    }

    private static func signIn(_ bytes: [UInt8], field: FieldKey, item: ItemID) throws(VaultSyncError) -> SignInLink {
        try read(bytes, field: field, item: item) { reader throws(BinaryReader.Malformed) in
            SignInLink(issuer: try reader.text(), subject: try reader.text(), linked: try reader.date())
        }
    }

    private static func passkey(
        _ bytes: [UInt8],
        field: FieldKey,
        item: ItemID
    ) throws(VaultSyncError) -> PasskeyCredential {
        try read(bytes, field: field, item: item) { reader throws(BinaryReader.Malformed) in
            // Arguments are evaluated left to right: the order of the layout.
            PasskeyCredential(
                rpID: try reader.text(),
                credentialID: try reader.bytes(),
                userHandle: try reader.bytes(),
                userName: try reader.text(),
                userDisplayName: try reader.text(),
                algorithm: Int(truncatingIfNeeded: Int64(bitPattern: try reader.uint64())),
                privateKey: try reader.bytes(),
                signCount: try reader.uint32(),
                backupEligible: try reader.flag(),
                backedUp: try reader.flag(),
                created: try reader.date(),
                lastUsed: try reader.flag() ? try reader.date() : nil,
                hidden: try reader.flag()
            )
        }
    }

    /// Reads a structure: its layout byte, then `body`, then nothing more.
    private static func read<Value>(
        _ bytes: [UInt8],
        field: FieldKey,
        item: ItemID,
        _ body: (inout BinaryReader) throws(BinaryReader.Malformed) -> Value
    ) throws(VaultSyncError) -> Value {
        guard let first = bytes.first else { throw .malformed(field, in: item, "is empty bytes") }
        guard first == layout else {
            throw VaultSyncError(
                .unsupportedFormat,
                "item \(item): its field \(field) has a newer layout than this Keyhaven reads; update Keyhaven on "
                    + "this device",
                details: item
            )
        }
        var reader = BinaryReader(Array(bytes.dropFirst()))
        do {
            let value = try body(&reader)
            try reader.finish()
            return value
        } catch {
            throw .malformed(field, in: item, "is not the bytes of its structure")
        }
    }
}
