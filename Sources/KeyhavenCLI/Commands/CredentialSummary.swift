import Foundation
import Passkeys
import Vault

/// The JSON shape of a credential in `list --json` and friends (no secrets unless revealed).
struct CredentialSummary: Encodable {
    var id: String
    var title: String
    var services: [String]
    var user: String
    var folder: String?
    var hasPassword: Bool
    var hasTOTP: Bool
    var signIn: String?
    var created: Date
    var modified: Date
    var deleted: Date?
    var password: String?
    var notes: String?
    var totp: String?
    var history: [HistoryItem]?
    /// `list --json`: the account's passkeys (same site or a parent, same user), never their keys.
    var passkeys: [Keyhaven.Passkey.Summary]?

    struct HistoryItem: Encodable {
        var replaced: Date
        var password: String?
    }

    init(_ credential: Credential, reveal: Bool = false, history: [PasswordHistoryEntry]? = nil) {
        id = credential.id.rawValue
        title = credential.content.displayTitle
        services = credential.services.map(\.identifier)
        user = credential.user
        folder = credential.folder
        hasPassword = credential.password != nil
        hasTOTP = credential.totp != nil
        signIn = credential.signIn.map { "\($0.issuer) (\($0.subject))" }
        created = credential.created
        modified = credential.modified
        deleted = credential.deleted
        if reveal {
            password = credential.password
            notes = credential.notes
            totp = credential.totp
        }
        self.history = history?.map { HistoryItem(replaced: $0.replaced, password: reveal ? $0.password : nil) }
    }

    /// A passkey-only account (no credential of the vault is its site and user).
    init(passkeyOnly passkeys: [Keyhaven.Passkey.Summary], rpID: String, user: String) {
        id = passkeys.first?.id ?? ""
        title = rpID
        services = ["https://\(rpID)"]
        self.user = user
        hasPassword = false
        hasTOTP = false
        created = passkeys.map(\.created).min() ?? Date(timeIntervalSince1970: 0)
        modified = passkeys.map { $0.lastUsed ?? $0.created }.max() ?? created
        self.passkeys = passkeys
    }

    /// `list --json`: every credential with the passkeys of its account, then the accounts that
    /// have only passkeys.
    static func listing(_ credentials: [Credential], passkeys: [(id: String, passkey: PasskeyCredential)]) -> [Self] {
        var unclaimed = passkeys
        var summaries = credentials.map { credential in
            var summary = CredentialSummary(credential)
            let mine = unclaimed.filter { $0.passkey.belongs(to: credential) }
            unclaimed.removeAll { entry in mine.contains { $0.id == entry.id } }
            summary.passkeys = mine.map { Keyhaven.Passkey.Summary($0.passkey, id: $0.id) }
            return summary
        }
        let groups = Dictionary(grouping: unclaimed) { "\($0.passkey.rpID)\u{0}\($0.passkey.userName)" }
        for (_, group) in groups.sorted(by: { $0.key < $1.key }) {
            let first = group[0].passkey
            summaries.append(
                CredentialSummary(
                    passkeyOnly: group.map { Keyhaven.Passkey.Summary($0.passkey, id: $0.id) },
                    rpID: first.rpID,
                    user: first.userName
                )
            )
        }
        return summaries
    }
}

enum Table {
    /// A plain text table of credentials.
    static func print(_ credentials: [Credential]) {
        guard !credentials.isEmpty else {
            KeyhavenCLI.print("(no credentials)")
            return
        }
        let rows = credentials.map { credential in
            [
                credential.id.short, credential.content.displayTitle, credential.user,
                credential.services.first?.identifier ?? "", credential.folder ?? "",
            ]
        }
        let header = ["ID", "TITLE", "USER", "SERVICE", "FOLDER"]
        var widths = header.map(\.count)
        for row in rows {
            for (index, cell) in row.enumerated() {
                widths[index] = min(max(widths[index], cell.count), 40)
            }
        }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { index, cell in
                let clipped = cell.count > widths[index] ? String(cell.prefix(widths[index] - 1)) + "…" : cell
                return clipped.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }.joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }
        KeyhavenCLI.print(line(header))
        for row in rows { KeyhavenCLI.print(line(row)) }
    }
}
