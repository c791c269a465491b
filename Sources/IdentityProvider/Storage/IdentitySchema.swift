import Foundation

/// The provider's schema: named, append-only migrations in the SQL both engines accept. Never edit
/// a shipped migration; add one.
///
/// Times are BIGINT milliseconds since 1970; booleans BIGINT 0/1; secrets that only need
/// comparing (codes, refresh tokens, sessions, device tokens) are stored as SHA-256 hex.
enum IdentitySchema {
    static let migrations: [(name: String, statements: [String])] = [
        (
            "v1-identity-provider",
            [
                "CREATE TABLE idp_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
                "CREATE TABLE teams (id TEXT PRIMARY KEY, name TEXT NOT NULL, created BIGINT NOT NULL)",
                """
                CREATE TABLE team_keys (team_id TEXT NOT NULL REFERENCES teams(id), key_id TEXT NOT NULL, \
                public_pem TEXT NOT NULL, created BIGINT NOT NULL, revoked BIGINT, PRIMARY KEY (team_id, key_id))
                """,
                """
                CREATE TABLE clients (id TEXT PRIMARY KEY, team_id TEXT NOT NULL REFERENCES teams(id), \
                name TEXT NOT NULL, redirect_uris TEXT NOT NULL, notification_url TEXT, created BIGINT NOT NULL)
                """,
                """
                CREATE TABLE users (id TEXT PRIMARY KEY, email TEXT NOT NULL UNIQUE, first_name TEXT, \
                last_name TEXT, password_hash TEXT NOT NULL, totp_secret TEXT, created BIGINT NOT NULL)
                """,
                """
                CREATE TABLE subjects (user_id TEXT NOT NULL, team_id TEXT NOT NULL, sub TEXT NOT NULL UNIQUE, \
                relay_email TEXT UNIQUE, created BIGINT NOT NULL, PRIMARY KEY (user_id, team_id))
                """,
                """
                CREATE TABLE consents (user_id TEXT NOT NULL, client_id TEXT NOT NULL, state TEXT NOT NULL, \
                share_email BIGINT NOT NULL, relay_forwarding BIGINT NOT NULL, name_delivered BIGINT NOT NULL, \
                created BIGINT NOT NULL, updated BIGINT NOT NULL, PRIMARY KEY (user_id, client_id))
                """,
                """
                CREATE TABLE codes (hash TEXT PRIMARY KEY, client_id TEXT NOT NULL, user_id TEXT NOT NULL, \
                redirect_uri TEXT, scope TEXT NOT NULL, nonce TEXT, auth_time BIGINT NOT NULL, \
                real_user_status BIGINT NOT NULL, expires BIGINT NOT NULL, used BIGINT)
                """,
                """
                CREATE TABLE grants (id TEXT PRIMARY KEY, refresh_hash TEXT NOT NULL UNIQUE, \
                client_id TEXT NOT NULL, user_id TEXT NOT NULL, code_hash TEXT, scope TEXT NOT NULL, \
                auth_time BIGINT NOT NULL, real_user_status BIGINT NOT NULL, created BIGINT NOT NULL, revoked BIGINT)
                """,
                "CREATE INDEX grants_user_client ON grants (user_id, client_id)",
                "CREATE INDEX grants_code ON grants (code_hash)",
                """
                CREATE TABLE migration_tokens (hash TEXT PRIMARY KEY, team_id TEXT NOT NULL, \
                client_id TEXT NOT NULL, expires BIGINT NOT NULL, used BIGINT)
                """,
                """
                CREATE TABLE signing_keys (kid TEXT PRIMARY KEY, private_pem TEXT NOT NULL, \
                created BIGINT NOT NULL, retired BIGINT)
                """,
                """
                CREATE TABLE sessions (hash TEXT PRIMARY KEY, user_id TEXT NOT NULL, auth_time BIGINT NOT NULL, \
                second_factor BIGINT NOT NULL, expires BIGINT NOT NULL)
                """,
                """
                CREATE TABLE device_tokens (hash TEXT PRIMARY KEY, user_id TEXT NOT NULL, name TEXT NOT NULL, \
                auth_time BIGINT NOT NULL, second_factor BIGINT NOT NULL, created BIGINT NOT NULL, revoked BIGINT)
                """,
                """
                CREATE TABLE transfers (transfer_sub TEXT PRIMARY KEY, user_id TEXT NOT NULL, \
                from_team TEXT NOT NULL, to_team TEXT NOT NULL, old_sub TEXT NOT NULL, created BIGINT NOT NULL, \
                exchanged BIGINT, UNIQUE (old_sub, to_team))
                """,
                """
                CREATE TABLE outbox (id TEXT PRIMARY KEY, client_id TEXT NOT NULL, url TEXT NOT NULL, \
                event TEXT NOT NULL, event_type TEXT NOT NULL, created BIGINT NOT NULL, attempts BIGINT NOT NULL, \
                next_attempt BIGINT NOT NULL, delivered BIGINT, last_error TEXT)
                """,
                "CREATE INDEX outbox_due ON outbox (delivered, next_attempt)",
            ]
        ),
        (
            "v2-sign-in-throttle",
            [
                // One row per account or client address with recent wrong guesses (keys are hashes).
                """
                CREATE TABLE sign_in_attempts (throttle_key TEXT PRIMARY KEY, failures BIGINT NOT NULL, \
                locked_until BIGINT NOT NULL, forget_after BIGINT NOT NULL)
                """,
                "CREATE INDEX sign_in_attempts_forget ON sign_in_attempts (forget_after)",
            ]
        ),
        (
            // The last one-time-code step each person used, so a code works once (RFC 6238 §5.2).
            "v3-totp-last-step",
            ["ALTER TABLE users ADD COLUMN totp_last_step BIGINT"]
        ),
        (
            // Browsers that signed in before (security review M9): their cookie (as SHA-256 hex)
            // gets a guessing counter of its own, so a stranger's wrong guesses do not lock the
            // owner out.
            "v4-known-devices",
            [
                """
                CREATE TABLE known_devices (hash TEXT PRIMARY KEY, user_id TEXT NOT NULL, \
                created BIGINT NOT NULL, expires BIGINT NOT NULL)
                """,
                "CREATE INDEX known_devices_user ON known_devices (user_id)",
            ]
        ),
    ]

    /// Applies what is missing, in one transaction; PostgreSQL instances starting together wait
    /// for each other on an advisory lock.
    static func migrate(_ database: any SQLDatabase) async throws {
        let dialect = database.dialect
        try await database.transaction { connection in
            if dialect == .postgres {
                try await connection.query("SELECT pg_advisory_xact_lock(4841504100)")
            }
            try await connection.query(
                "CREATE TABLE IF NOT EXISTS idp_migrations (name TEXT PRIMARY KEY, applied BIGINT NOT NULL)"
            )
            let applied = Set(
                try await connection.fetchAll(String.self, "SELECT name FROM idp_migrations")
            )
            let known = Set(migrations.map(\.name))
            if let unknown = applied.subtracting(known).first {
                throw StorageError(
                    .unsupportedSchema,
                    "the database was migrated by a newer Keyhaven (\(unknown)); upgrade Keyhaven"
                )
            }
            for migration in migrations where !applied.contains(migration.name) {
                for statement in migration.statements { try await connection.query(statement) }
                try await connection.query(
                    "INSERT INTO idp_migrations (name, applied) VALUES (?, ?)",
                    .text(migration.name),
                    .integer(Int64(Date().timeIntervalSince1970 * 1000))
                )
            }
        }
    }
}
