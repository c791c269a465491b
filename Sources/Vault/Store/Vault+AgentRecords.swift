public import Foundation
import GRDB

/// Small secrets `keyhaven agent` keeps with the vault (browser pairings and their keys): sealed
/// like credentials, with their kind and a random id in the clear, covered by the integrity check,
/// and re-sealed by `passwd`.
public struct AgentRecord: Hashable, Sendable {
    /// A random id chosen by the agent (a pairing id).
    public var id: String
    /// What the record is (`browser-pairing`).
    public var kind: String
    /// The sealed content (the agent's own JSON).
    public var content: Data
    public var created: Date

    public init(id: String, kind: String, content: Data, created: Date) {
        self.id = id
        self.kind = kind
        self.content = content
        self.created = created
    }
}

extension Vault {
    /// A record's associated data: its id and a version that grows with every replacement.
    static func agentRecordAD(_ id: String, version: Int64) -> String {
        "keyhaven/agent-record/v1|\(id)|\(version)"
    }

    /// Saves `record`, replacing the one with its id.
    public func saveAgentRecord(_ record: AgentRecord) throws(VaultError) {
        try guarded {
            try authenticatedWrite { db in
                let version =
                    (try Int64.fetchOne(db, sql: "SELECT version FROM agentRecord WHERE id = ?", arguments: [record.id])
                        ?? 0) + 1
                let sealed = try keys.seal(
                    record.content,
                    associatedData: Self.agentRecordAD(record.id, version: version)
                )
                try db.execute(
                    sql:
                        "INSERT OR REPLACE INTO agentRecord (id, kind, version, sealed, created) VALUES (?, ?, ?, ?, ?)",
                    arguments: [record.id, record.kind, version, sealed, record.created.timeIntervalSince1970]
                )
            }
        }
    }

    /// The records of one kind, oldest first.
    public func agentRecords(kind: String) throws(VaultError) -> [AgentRecord] {
        try guarded {
            let keys = self.keys
            let rows = try database.read { db in
                try Row.fetchAll(
                    db,
                    sql: "SELECT id, version, sealed, created FROM agentRecord WHERE kind = ? ORDER BY created, id",
                    arguments: [kind]
                )
            }
            return try rows.map { row in
                let id: String = row["id"]
                let content = try keys.open(
                    row["sealed"],
                    associatedData: Self.agentRecordAD(id, version: row["version"])
                )
                return AgentRecord(
                    id: id,
                    kind: kind,
                    content: content,
                    created: Date(timeIntervalSince1970: row["created"])
                )
            }
        }
    }

    /// Removes a record; false when there was none with that id.
    @discardableResult
    public func removeAgentRecord(id: String) throws(VaultError) -> Bool {
        try deleteRows("DELETE FROM agentRecord WHERE id = ?", arguments: [id])
    }
}
