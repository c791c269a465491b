import ArgumentParser
import Foundation
import KeyhavenApp
import Vault

extension CredentialStore {
    func syncConflicts(reveal: Bool) async throws -> [SyncConflictItem] {
        try await ask(.syncConflicts(reveal: reveal)) { if case .syncConflicts(let items) = $0 { items } else { nil } }
    }

    func resolveSyncConflict(_ id: CredentialID, field: String, keep: SyncConflictChoice) async throws -> SyncStatus {
        try await ask(.syncResolve(id: id, field: field, keep: keep)) {
            if case .syncStatus(let status) = $0 { status } else { nil }
        }
    }
}

/// `keyhaven list --conflicts`: the credentials sync left with two values of a field.
enum ConflictListing {
    static let hidden = "••••••••"

    static func print(_ items: [SyncConflictItem]) {
        guard !items.isEmpty else {
            Swift.print("No conflicts.")
            return
        }
        for item in items {
            let place = TerminalText.neutralised(
                [item.service, item.user.isEmpty ? nil : item.user].compactMap { $0 }.joined(separator: "/")
            )
            Swift.print(
                "\(item.id.short)  \(TerminalText.neutralised(item.title))\(place.isEmpty ? "" : "  (\(place))")"
            )
            let several = Dictionary(grouping: item.conflicts, by: \.field).filter { $0.value.count > 1 }
            for conflict in item.conflicts {
                let other = several[conflict.field] == nil ? "other" : "other:\(conflict.option)"
                Swift.print(
                    "  \(conflict.field): current \(shown(conflict.current, conflict))  |  \(other) "
                        + "\(shown(conflict.other, conflict))  (written \(conflict.otherWritten.formatted(.iso8601)))"
                )
            }
        }
        Swift.print("Keep one value: keyhaven sync resolve ID --field FIELD --keep current|other")
    }

    static func shown(_ value: String?, _ conflict: SyncFieldConflict) -> String {
        if conflict.masked { return hidden }
        return value.map { "\"\(TerminalText.neutralised($0))\"" } ?? "(none)"
    }
}

struct SyncResolve: SyncVaultCommand {
    static let configuration = CommandConfiguration(
        commandName: "resolve",
        abstract: "Resolve a sync conflict: keep the current or the other value of a field.",
        discussion: """
            When two devices change the same field of a credential without seeing each other's \
            change, sync keeps the later value current and the other in the item's history, marked \
            as a conflict (`keyhaven list --conflicts` shows them; the web app's Sync page too). \
            This keeps one of them: --keep current keeps the value in use, --keep other the one \
            that lost (other:N when a field has several, numbered as `list --conflicts` shows). \
            The choice is written as a new edit (a replaced password goes to the history) and the \
            next sync (`keyhaven sync now`, or the agent's background sync) sends it: the mark \
            then leaves every device. --json prints the sync status after it.

            Examples:
              keyhaven list --conflicts
              keyhaven sync resolve github.com/alice --field password --keep other
              keyhaven sync resolve 3f2a9c1e --field notes --keep current --json
            """
    )
    @OptionGroup var options: VaultOptions
    @ParentCommand var sync: Keyhaven.Sync
    @OptionGroup var selection: AccountSelection
    @Option(
        name: .long,
        help: ArgumentHelp("The conflicting field: password, notes, user, title, … (as `list --conflicts` names it).")
    )
    var field: String
    @Option(name: .long, help: ArgumentHelp("Which value to keep: current, other or other:N.", valueName: "value"))
    var keep: String
    @Flag(name: .long, help: "Print the status as JSON.") var json = false

    func validate() throws {
        guard SyncConflictChoice(keep) != nil else {
            throw ValidationError("--keep takes current, other or other:N (N from 1), not \(keep)")
        }
    }

    func run() async throws {
        let store = try await openStore()
        let credential = try await account(selection.account, in: store)
        let status = try await store.resolveSyncConflict(credential.id, field: field, keep: SyncConflictChoice(keep)!)
        if json {
            Swift.print(try Output.json(status))
            return
        }
        Swift.print(
            "Kept the \(keep.lowercased().hasPrefix("other") ? "other" : "current") value of \(field) for "
                + "\(credential.content.displayTitle) (\(credential.id.short)); the next sync sends it."
        )
        SyncStatusCommand.describe(status)
    }
}
