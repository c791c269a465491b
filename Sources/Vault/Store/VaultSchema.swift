import GRDB

/// The vault's SQLite schema, as named, append-only migrations: never edit a shipped migration, add
/// a new one.
///
/// Only ciphertext and keyed hashes are stored for anything secret (passwords, user names, URLs,
/// notes, TOTP secrets, titles, folders); dates and ids are plain.
enum VaultSchema {
    /// SQLite `application_id` of a Keyhaven vault ("KHVL").
    static let applicationID: Int32 = 0x4B48_564C
    /// The format this build writes; a vault with a newer one is refused.
    ///
    /// - 1: records sealed with their id as associated data; clear metadata unauthenticated.
    /// - 2: records sealed with their id and a per-record version; the header holds a key check and
    ///   an HMAC over the clear state (``VaultIntegrity``). Format-1 vaults are upgraded on open
    ///   (``Vault/upgradeFormat(_:masterPassword:kdf:)``), once the password is known to be right.
    static let formatVersion = 2

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1-vault-credentials-history") { db in
            try db.create(table: "vault") { t in
                t.column("id", .integer).primaryKey(onConflict: .fail, autoincrement: false)
                    .check { $0 == 1 }
                t.column("format", .integer).notNull()
                t.column("kdf", .text).notNull()
                t.column("wrappedKey", .blob).notNull()
                t.column("created", .double).notNull()
            }
            try db.create(table: "credential") { t in
                t.column("id", .text).primaryKey()
                t.column("sealed", .blob).notNull()
                t.column("contentTag", .blob).notNull()
                t.column("created", .double).notNull()
                t.column("modified", .double).notNull()
                t.column("deleted", .double)
            }
            try db.create(index: "credential_contentTag", on: "credential", columns: ["contentTag"])
            try db.create(table: "credentialService") { t in
                t.column("credentialID", .text).notNull().references("credential", onDelete: .cascade)
                t.column("tag", .blob).notNull()
                t.primaryKey(["credentialID", "tag"])
            }
            try db.create(index: "credentialService_tag", on: "credentialService", columns: ["tag"])
            try db.create(table: "passwordHistory") { t in
                t.column("id", .text).primaryKey()
                t.column("credentialID", .text).notNull().indexed().references("credential", onDelete: .cascade)
                t.column("sealed", .blob).notNull()
                t.column("replaced", .double).notNull()
            }
        }
        migrator.registerMigration("v2-upgrade-journal") { db in
            // One row per account upgrade in progress: written (and synced) before the service is
            // asked to change anything; removed in the same transaction that applies the result.
            try db.create(table: "upgradeJournal") { t in
                t.column("id", .text).primaryKey()
                t.column("credentialID", .text).notNull().indexed()
                t.column("sealed", .blob).notNull()
                t.column("created", .double).notNull()
            }
        }
        migrator.registerMigration("v3-identity-provider-sessions") { db in
            // `keyhaven idp login`: one sealed device token per provider, found by a keyed hash of
            // the issuer.
            try db.create(table: "providerSession") { t in
                t.column("tag", .blob).primaryKey()
                t.column("sealed", .blob).notNull()
                t.column("created", .double).notNull()
            }
        }
        migrator.registerMigration("v4-record-versions-and-integrity") { db in
            // Schema only: the data (versions, re-sealing, the key check and the integrity HMAC)
            // needs the vault key, so `Vault.upgradeFormat` fills it in while `format` is still 1.
            try db.alter(table: "credential") { t in
                t.add(column: "version", .integer).notNull().defaults(to: 0)
            }
            try db.alter(table: "upgradeJournal") { t in
                t.add(column: "version", .integer).notNull().defaults(to: 0)
            }
            try db.alter(table: "providerSession") { t in
                t.add(column: "version", .integer).notNull().defaults(to: 0)
            }
            try db.alter(table: "vault") { t in
                t.add(column: "keyCheck", .blob)
                t.add(column: "integrity", .blob)
            }
        }
        migrator.registerMigration("v5-agent-records") { db in
            // What `keyhaven agent` keeps (browser pairings): sealed, named by kind and a random id.
            try db.create(table: "agentRecord") { t in
                t.column("id", .text).primaryKey()
                t.column("kind", .text).notNull()
                t.column("version", .integer).notNull()
                t.column("sealed", .blob).notNull()
                t.column("created", .double).notNull()
            }
        }
        migrator.registerMigration("v6-passkeys") { db in
            // Passkeys (issue 16): sealed, under keyed hashes of their relying party and credential id.
            try db.create(table: "passkey") { t in
                t.column("id", .text).primaryKey()
                t.column("rpTag", .blob).notNull().indexed()
                t.column("version", .integer).notNull()
                t.column("sealed", .blob).notNull()
                t.column("created", .double).notNull()
            }
        }
        migrator.registerMigration("v7-site-records") { db in
            // What audits learned per website (issue 27): sealed, under a keyed hash of the site, with
            // the expiry in the clear (authenticated) so expired rows go without being opened.
            try db.execute(
                sql: """
                    CREATE TABLE siteRecord (
                        id TEXT PRIMARY KEY, version INTEGER NOT NULL, sealed BLOB NOT NULL,
                        expires DOUBLE NOT NULL, created DOUBLE NOT NULL
                    )
                    """
            )
        }
        migrator.registerMigration("v8-sync-state") { db in
            // A device's sync (issue 28): its server, account and key, the sync vault key and the
            // replica, sealed, one row per part; nothing of it in the clear but the part's name.
            try db.execute(
                sql: """
                    CREATE TABLE syncState (
                        id TEXT PRIMARY KEY, version INTEGER NOT NULL, sealed BLOB NOT NULL, created DOUBLE NOT NULL
                    )
                    """
            )
        }
        return migrator
    }
}
