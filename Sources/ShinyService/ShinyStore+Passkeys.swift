import Foundation
import GRDB
import Passkeys

/// shiny's passkeys: the public keys its accounts registered (the private keys never leave the
/// person's authenticator), with their counters.
extension ShinyStore {
    struct StoredPasskey: Sendable, Hashable {
        var credentialID: [UInt8]
        var userID: Int64
        var publicKey: COSEKey
        var signCount: UInt32
        var created: Date
        var lastUsed: Date?
    }

    /// The account's WebAuthn user handle, made (16 random bytes) on first use.
    func passkeyHandle(for userID: Int64) throws -> [UInt8] {
        try database.write { db in
            if let handle = try Data.fetchOne(
                db,
                sql: "SELECT passkeyHandle FROM user WHERE id = ?",
                arguments: [userID]
            ) {
                return Array(handle)
            }
            let handle = Self.randomBytes(16)
            try db.execute(sql: "UPDATE user SET passkeyHandle = ? WHERE id = ?", arguments: [Data(handle), userID])
            return handle
        }
    }

    func user(passkeyHandle handle: [UInt8]) throws -> User? {
        try database.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM user WHERE passkeyHandle = ?", arguments: [Data(handle)])
                .map(Self.user)
        }
    }

    func addPasskey(_ registration: PasskeyRelyingParty.Registration, for userID: Int64) throws {
        try database.write { db in
            try db.execute(
                sql: "INSERT INTO passkey (credentialID, userID, publicKey, signCount, created) VALUES (?, ?, ?, ?, ?)",
                arguments: [
                    Data(registration.credentialID), userID, Data(registration.publicKey.cbor.encoded()),
                    Int64(registration.signCount), Date().timeIntervalSince1970,
                ]
            )
        }
    }

    static func passkey(_ row: Row) throws -> StoredPasskey {
        let key: Data = row["publicKey"]
        let created: Double = row["created"]
        let lastUsed: Double? = row["lastUsed"]
        return StoredPasskey(
            credentialID: Array(row["credentialID"] as Data),
            userID: row["userID"],
            publicKey: try COSEKey(cbor: CBOR.decode(Array(key))),
            signCount: UInt32(clamping: row["signCount"] as Int64),
            created: Date(timeIntervalSince1970: created),
            lastUsed: lastUsed.map(Date.init(timeIntervalSince1970:))
        )
    }

    func passkeys(for userID: Int64) throws -> [StoredPasskey] {
        try database.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM passkey WHERE userID = ? ORDER BY created", arguments: [userID])
        }.map(Self.passkey)
    }

    func passkey(credentialID: [UInt8]) throws -> StoredPasskey? {
        try database.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM passkey WHERE credentialID = ?", arguments: [Data(credentialID)])
        }.map(Self.passkey)
    }

    func notePasskeyUse(credentialID: [UInt8], signCount: UInt32) throws {
        try database.write { db in
            try db.execute(
                sql: "UPDATE passkey SET signCount = ?, lastUsed = ? WHERE credentialID = ?",
                arguments: [Int64(signCount), Date().timeIntervalSince1970, Data(credentialID)]
            )
        }
    }

    @discardableResult
    func removePasskey(credentialID: [UInt8], userID: Int64) throws -> Bool {
        try database.write { db in
            try db.execute(
                sql: "DELETE FROM passkey WHERE credentialID = ? AND userID = ?",
                arguments: [Data(credentialID), userID]
            )
            return db.changesCount > 0
        }
    }

    /// The account signs in with its passkeys only from now on: its password stops working.
    func retirePassword(for userID: Int64) throws {
        try database.write { db in
            try db.execute(sql: "UPDATE user SET passwordHash = NULL, salt = NULL WHERE id = ?", arguments: [userID])
        }
    }
}
