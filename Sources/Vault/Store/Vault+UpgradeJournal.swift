public import Foundation
import GRDB
public import Passkeys

/// An account upgrade in progress: what Keyhaven asked the service to do, with both passwords, so
/// that no outcome — a crash, a lost answer, a killed process — can lose the password that works.
public struct UpgradeJournalEntry: Hashable, Sendable, Codable, Identifiable {
    public enum Kind: String, Hashable, Sendable, Codable {
        case strongPassword = "strong-password"
        case signIn = "sign-in"
        /// convert-to-passkey: the passkey Keyhaven made is journaled (``passkey``) before the
        /// service sees it.
        case passkey
    }

    public var id: String
    public var credentialID: CredentialID
    public var kind: Kind
    /// The account's user name (to create the credential when an app upgrades an account the vault
    /// does not have yet).
    public var user: String?
    /// The service as the person named it, and the protocol endpoint.
    public var service: String
    public var endpoint: String
    public var requestId: String
    /// The password the account had when the upgrade started.
    public var oldPassword: String?
    /// The password sent to the service (strong-password upgrades).
    public var newPassword: String?
    public var started: Date
    /// Sign-in upgrades: the provider and the account's `sub` there, recorded as soon as the
    /// authorization is obtained (before the service gets it).
    public var signInIssuer: String?
    public var signInSubject: String?
    /// Passkey upgrades: the passkey made for the service, recorded before it is sent.
    public var passkey: PasskeyCredential?

    public init(
        id: String = UUID().uuidString.lowercased(),
        credentialID: CredentialID,
        kind: Kind,
        user: String? = nil,
        service: String,
        endpoint: String,
        requestId: String,
        oldPassword: String?,
        newPassword: String?,
        started: Date
    ) {
        self.id = id
        self.credentialID = credentialID
        self.kind = kind
        self.user = user
        self.service = service
        self.endpoint = endpoint
        self.requestId = requestId
        self.oldPassword = oldPassword
        self.newPassword = newPassword
        self.started = started
    }
}

extension Vault {
    /// A journal row's associated data: its id and a version that grows with every rewrite.
    static func journalAD(_ id: String, version: Int64) -> String { "keyhaven/upgrade-journal/v2|\(id)|\(version)" }
    /// Format 1's associated data (id only), read once by the format upgrade.
    static func legacyJournalAD(_ id: String) -> String { "keyhaven/upgrade-journal/v1|\(id)" }

    /// Records an upgrade before the service is asked (sealed like every secret; the commit is
    /// synced to disk before this returns).
    public func beginUpgrade(_ entry: UpgradeJournalEntry) throws(VaultError) {
        try guarded {
            var plaintext = try JSONEncoder().encode(entry)
            defer { plaintext.resetBytes(in: 0..<plaintext.count) }
            try authenticatedWrite { db in
                let sealed = try keys.seal(plaintext, associatedData: Self.journalAD(entry.id, version: 1))
                try db.execute(
                    sql:
                        "INSERT INTO upgradeJournal (id, credentialID, version, sealed, created) VALUES (?, ?, 1, ?, ?)",
                    arguments: [entry.id, entry.credentialID.rawValue, sealed, entry.started.timeIntervalSince1970]
                )
            }
        }
    }

    /// Rewrites a pending entry (a sign-in upgrade records the account it links to).
    public func updateUpgrade(_ entry: UpgradeJournalEntry) throws(VaultError) {
        try guarded {
            var plaintext = try JSONEncoder().encode(entry)
            defer { plaintext.resetBytes(in: 0..<plaintext.count) }
            try authenticatedWrite { db in
                guard
                    let version = try Int64.fetchOne(
                        db,
                        sql: "SELECT version FROM upgradeJournal WHERE id = ?",
                        arguments: [entry.id]
                    )
                else { return }
                let sealed = try keys.seal(plaintext, associatedData: Self.journalAD(entry.id, version: version + 1))
                try db.execute(
                    sql: "UPDATE upgradeJournal SET sealed = ?, version = ? WHERE id = ?",
                    arguments: [sealed, version + 1, entry.id]
                )
            }
        }
    }

    /// Upgrades that have not been resolved (after a crash, or while a service cannot be reached).
    public func pendingUpgrades() throws(VaultError) -> [UpgradeJournalEntry] {
        try guarded {
            let rows = try database.read { db in
                try Row.fetchAll(db, sql: "SELECT id, version, sealed FROM upgradeJournal ORDER BY created, id")
            }
            return try rows.map { row in
                let id: String = row["id"]
                var plaintext: Data
                do {
                    let version: Int64 = row["version"]
                    guard version > 0 else { throw VaultError(.corruptRecord, "") }
                    plaintext = try keys.open(row["sealed"], associatedData: Self.journalAD(id, version: version))
                } catch {
                    throw VaultError(
                        .corruptRecord,
                        "upgrade journal entry \(id.prefix(8)) failed authentication: it was altered or damaged"
                    )
                }
                defer { plaintext.resetBytes(in: 0..<plaintext.count) }
                return try JSONDecoder().decode(UpgradeJournalEntry.self, from: plaintext)
            }
        }
    }

    /// The service applied the upgrade: in one transaction, the credential takes `password` (the old
    /// one goes to history) or, for sign-in upgrades, loses its password and gains `signIn`; a
    /// passkey upgrade's passkey joins the vault's passkeys; the journal entry goes.
    @discardableResult
    public func completeUpgrade(
        _ entry: UpgradeJournalEntry,
        password: String?,
        signIn: SignInLink? = nil
    )
        throws(VaultError) -> Credential
    {
        try guarded {
            try authenticatedWrite { db in
                if let passkey = entry.passkey { try writePasskey(passkey, db) }
                if try !Bool.fetchOne(
                    db,
                    sql: "SELECT EXISTS (SELECT 1 FROM credential WHERE id = ?)",
                    arguments: [entry.credentialID.rawValue]
                )! {
                    // An app upgraded an account the vault did not know: save it now.
                    let service = ServiceIdentifier(entry.service)
                    let content = CredentialContent(
                        title: service.host ?? entry.service,
                        services: [service],
                        user: entry.user ?? "",
                        password: password,
                        signIn: signIn
                    )
                    _ = try insert(content, db, id: entry.credentialID)
                    try db.execute(sql: "DELETE FROM upgradeJournal WHERE id = ?", arguments: [entry.id])
                    return try load(entry.credentialID, db)
                }
                var credential = try load(entry.credentialID, db)
                var content = credential.content
                content.password = password
                if let signIn { content.signIn = signIn }
                try replace(&credential, with: content, db)
                try db.execute(sql: "DELETE FROM upgradeJournal WHERE id = ?", arguments: [entry.id])
                return credential
            }
        }
    }

    /// The service did not change anything: the journal entry goes, the credential stays as it was.
    /// With `keepingNewPassword`, the generated password is added to the credential's history first
    /// (for outcomes that cannot be confirmed either way).
    public func abandonUpgrade(_ entry: UpgradeJournalEntry, keepingNewPassword: Bool = false) throws(VaultError) {
        try guarded {
            try authenticatedWrite { db in
                let exists = try Bool.fetchOne(
                    db,
                    sql: "SELECT EXISTS (SELECT 1 FROM credential WHERE id = ?)",
                    arguments: [entry.credentialID.rawValue]
                )
                if keepingNewPassword, let password = entry.newPassword, exists == true {
                    try appendHistory(entry.credentialID, password: password, replaced: now(), db)
                }
                // A passkey the service may have linked is kept too: never lost (a site that does
                // not know it says so with signalUnknownCredential, which hides it).
                if keepingNewPassword, let passkey = entry.passkey { try writePasskey(passkey, db) }
                try db.execute(sql: "DELETE FROM upgradeJournal WHERE id = ?", arguments: [entry.id])
            }
        }
    }
}
