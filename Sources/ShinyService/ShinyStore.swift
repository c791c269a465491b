import AccountModification
import AccountModificationKit
import Crypto
import Foundation
import GRDB
import Logging
import OneTimeCodes
import _CryptoExtras
import _KeyhavenSupport

/// shiny's users: its own SQLite table, passwords hashed with scrypt, optional TOTP, sessions.
final class ShinyStore: Sendable {
    let database: DatabaseQueue
    let scryptLogN: Int
    let logger = Logger(label: "shiny.store")

    struct User: Sendable {
        var id: Int64
        var name: String
        var totpSecret: String?
        var signInSubject: String?
        var hasPassword: Bool
    }

    init(path: String?, scryptLogN: Int) throws {
        self.scryptLogN = scryptLogN
        if let path {
            // Password hashes and authenticator secrets: private from the first byte (PrivateFile).
            for warning in try PrivateFile.prepareDatabase(at: path) {
                FileHandle.standardError.write(Data("shiny: warning: \(warning)\n".utf8))
            }
            database = try DatabaseQueue(path: path)
        } else {
            database = try DatabaseQueue()
        }
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1-users-sessions") { db in
            try db.create(table: "user") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("name", .text).notNull().unique(onConflict: .fail)
                t.column("passwordHash", .blob)
                t.column("salt", .blob)
                t.column("totpSecret", .text)
                t.column("signInSubject", .text)
                t.column("created", .double).notNull()
            }
            try db.create(table: "session") { t in
                t.column("tokenHash", .blob).primaryKey()
                t.column("userID", .integer).notNull().references("user", onDelete: .cascade)
                t.column("expires", .double).notNull()
            }
        }
        migrator.registerMigration("v2-modification-ledger") { db in
            try db.create(table: "modificationRequest") { t in
                t.column("requestId", .text).primaryKey()
                t.column("response", .blob).notNull()
                t.column("updated", .double).notNull()
            }
        }
        migrator.registerMigration("v3-totp-last-step") { db in
            // The last authenticator step used, so a code signs in once (RFC 6238 §5.2).
            try db.alter(table: "user") { t in t.add(column: "totpLastStep", .integer) }
        }
        migrator.registerMigration("v4-passkeys") { db in
            // The WebAuthn user handle: random, never the name (it ends up in authenticators).
            try db.alter(table: "user") { t in t.add(column: "passkeyHandle", .blob) }
            try db.create(table: "passkey") { t in
                t.column("credentialID", .blob).primaryKey()
                t.column("userID", .integer).notNull().indexed().references("user", onDelete: .cascade)
                t.column("publicKey", .blob).notNull()  // COSE
                t.column("signCount", .integer).notNull()
                t.column("created", .double).notNull()
                t.column("lastUsed", .double)
            }
        }
        try migrator.migrate(database)
    }

    func hash(_ password: String, salt: [UInt8]) throws -> [UInt8] {
        let key = try KDF.Scrypt.deriveKey(
            from: Array(password.utf8),
            salt: salt,
            outputByteCount: 32,
            rounds: 1 << scryptLogN,
            blockSize: 8,
            parallelism: 1
        )
        return key.withUnsafeBytes { Array($0) }
    }

    static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }

    func createUser(name: String, password: String, totp: Bool) throws -> (user: User, totpSecret: String?) {
        let salt = Self.randomBytes(16)
        let digest = try hash(password, salt: salt)
        var generator = SystemRandomNumberGenerator()
        let secret = totp ? TOTP.randomSecret(using: &generator) : nil
        let id = try database.write { db -> Int64 in
            try db.execute(
                sql: "INSERT INTO user (name, passwordHash, salt, totpSecret, created) VALUES (?, ?, ?, ?, ?)",
                arguments: [name, Data(digest), Data(salt), secret, Date().timeIntervalSince1970]
            )
            return db.lastInsertedRowID
        }
        return (User(id: id, name: name, totpSecret: secret, signInSubject: nil, hasPassword: true), secret)
    }

    func user(named name: String) throws -> User? {
        try database.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM user WHERE name = ?", arguments: [name]).map(Self.user)
        }
    }

    func user(id: Int64) throws -> User? {
        try database.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM user WHERE id = ?", arguments: [id]).map(Self.user)
        }
    }

    static func user(_ row: Row) -> User {
        let hash: Data? = row["passwordHash"]
        return User(
            id: row["id"],
            name: row["name"],
            totpSecret: row["totpSecret"],
            signInSubject: row["signInSubject"],
            hasPassword: hash != nil
        )
    }

    /// The user whose password this is (and whose TOTP code, when enabled, matches).
    /// `needsCode` is true when the password is right but a code is required and missing or wrong.
    /// Checks a user's password and, for a TOTP account, `code`. With `useCode` (real sign-ins, the
    /// step-up page) a valid code is also used up: it and older ones stop working. Without it
    /// nothing changes (a check for tests and the demo).
    func verify(
        name: String,
        password: String,
        code: String? = nil,
        useCode: Bool = false
    ) throws -> (user: User?, needsCode: Bool) {
        let row = try database.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM user WHERE name = ?", arguments: [name])
        }
        guard let row else {
            // Spend the same time as for a real user.
            _ = try hash(password, salt: Self.randomBytes(16))
            return (nil, false)
        }
        let stored: Data? = row["passwordHash"]
        let salt: Data? = row["salt"]
        guard let stored, let salt else { return (nil, false) }  // signs in with Keyhaven only
        guard constantTimeEqual(try hash(password, salt: Array(salt)), Array(stored)) else { return (nil, false) }
        let user = Self.user(row)
        if user.totpSecret != nil {
            guard let code, try useCode ? self.useCode(code, for: user) : self.codeIsValid(code, for: user) else {
                return (user, true)
            }
        }
        return (user, false)
    }

    func codeIsValid(_ code: String, for user: User) -> Bool {
        guard let secret = user.totpSecret, let totp = try? TOTP(secret: secret) else { return false }
        return totp.verify(code, at: Date())
    }

    /// Whether `code` is the user's current authenticator code and newer than the last one used;
    /// if so, it becomes the last one used.
    func useCode(_ code: String, for user: User) throws -> Bool {
        guard let secret = user.totpSecret, let totp = try? TOTP(secret: secret),
            let step = totp.matchingStep(code, at: Date())
        else { return false }
        return try database.write { db in
            try db.execute(
                sql: "UPDATE user SET totpLastStep = ? WHERE id = ? AND (totpLastStep IS NULL OR totpLastStep < ?)",
                arguments: [step, user.id, step]
            )
            return db.changesCount > 0
        }
    }

    func setPassword(_ password: String, for userID: Int64) throws {
        let salt = Self.randomBytes(16)
        let digest = try hash(password, salt: salt)
        try database.write { db in
            try db.execute(
                sql: "UPDATE user SET passwordHash = ?, salt = ? WHERE id = ?",
                arguments: [Data(digest), Data(salt), userID]
            )
        }
    }

    /// Links the account to an identity-provider subject; its password stops working.
    func linkSignIn(subject: String, for userID: Int64) throws {
        try database.write { db in
            try db.execute(
                sql: "UPDATE user SET signInSubject = ?, passwordHash = NULL, salt = NULL WHERE id = ?",
                arguments: [subject, userID]
            )
        }
    }

    /// An account made by Sign in with Keyhaven: no password, linked from the start. A taken name
    /// gets a suffix.
    func createLinkedUser(name: String, subject: String) throws -> User {
        try database.write { db in
            var candidate = name
            var suffix = 1
            while try Bool.fetchOne(
                db,
                sql: "SELECT EXISTS (SELECT 1 FROM user WHERE name = ?)",
                arguments: [candidate]
            )! {
                suffix += 1
                candidate = "\(name)-\(suffix)"
            }
            try db.execute(
                sql: "INSERT INTO user (name, signInSubject, created) VALUES (?, ?, ?)",
                arguments: [candidate, subject, Date().timeIntervalSince1970]
            )
            return User(
                id: db.lastInsertedRowID,
                name: candidate,
                totpSecret: nil,
                signInSubject: subject,
                hasPassword: false
            )
        }
    }

    func sessionCount(for userID: Int64) throws -> Int {
        try database.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM session WHERE userID = ?", arguments: [userID]) ?? 0
        }
    }

    func unlinkSignIn(subject: String) throws {
        try database.write { db in
            try db.execute(sql: "UPDATE user SET signInSubject = NULL WHERE signInSubject = ?", arguments: [subject])
        }
    }

    func user(signInSubject subject: String) throws -> User? {
        try database.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM user WHERE signInSubject = ?", arguments: [subject]).map(Self.user)
        }
    }

    // MARK: Sessions (tokens are stored as SHA-256 digests)

    func createSession(for userID: Int64, lifetime: TimeInterval = 3600) throws -> String {
        let token = Hex.encode(Self.randomBytes(32))
        try database.write { db in
            try db.execute(
                sql: "INSERT INTO session (tokenHash, userID, expires) VALUES (?, ?, ?)",
                arguments: [Data(SHA256.hash(data: Data(token.utf8))), userID, Date().timeIntervalSince1970 + lifetime]
            )
        }
        return token
    }

    func user(sessionToken token: String) throws -> User? {
        let digest = Data(SHA256.hash(data: Data(token.utf8)))
        return try database.read { db in
            try Row.fetchOne(
                db,
                sql:
                    "SELECT user.* FROM session JOIN user ON user.id = session.userID WHERE tokenHash = ? AND expires > ?",
                arguments: [digest, Date().timeIntervalSince1970]
            ).map(Self.user)
        }
    }

    func endSessions(for userID: Int64) throws {
        try database.write { db in
            try db.execute(sql: "DELETE FROM session WHERE userID = ?", arguments: [userID])
        }
    }
}

/// shiny keeps the kit's ledger in its own database (one row per request: the kit's entry as JSON,
/// with no passwords in it), so a retry, poll or cancel after a restart gets the recorded answer.
/// SQLite's default synchronous mode makes each save durable before the kit answers.
struct ShinyLedger: ModificationLedger {
    let store: ShinyStore

    func save(_ entry: ModificationLedgerEntry) {
        guard let data = try? JSONEncoder().encode(entry) else { return }
        do {
            try store.database.write { db in
                try db.execute(
                    sql: "INSERT OR REPLACE INTO modificationRequest (requestId, response, updated) VALUES (?, ?, ?)",
                    arguments: [entry.requestId, data, Date().timeIntervalSince1970]
                )
            }
        } catch {
            store.logger.error("could not record the answer to an account-modification request")
        }
    }

    func load(_ requestId: String) -> ModificationLedgerEntry? {
        let data = try? store.database.read { db in
            try Data.fetchOne(
                db,
                sql: "SELECT response FROM modificationRequest WHERE requestId = ?",
                arguments: [requestId]
            )
        }
        guard let data else { return nil }
        if let entry = try? JSONDecoder().decode(ModificationLedgerEntry.self, from: data) { return entry }
        // A row from before shiny kept the request's summary: its answer alone.
        return (try? JSONDecoder().decode(ModificationResponse.self, from: data)).map {
            .init(response: $0, request: nil)
        }
    }
}
