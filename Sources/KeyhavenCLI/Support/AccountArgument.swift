import ArgumentParser
import AutoFill
import Foundation
import KeyhavenAgent
import Vault
import _KeyhavenSupport

extension VaultCommand {
    /// The credential `name` refers to (``Vault/account(named:)``, wherever the vault is): an id or id prefix, else
    /// `SERVICE[/USER]` or a title. An ambiguous name fails (exit 1) listing the candidates; a name
    /// that finds nothing fails saying how to look.
    func account(_ name: String, in store: any CredentialStore) async throws -> Credential {
        switch try await store.account(named: name) {
        case .found(let credential):
            return credential
        case .ambiguous(let candidates):
            throw Output.failure(AccountArgument.ambiguity(name, candidates))
        case .notFound:
            throw Output.failure(
                "no account named \(name): `keyhaven search \(AccountArgument.service(of: name))` looks by text, "
                    + "`keyhaven list` shows every account, `keyhaven add \(AccountArgument.service(of: name))` adds one"
            )
        }
    }
}

/// The argument naming one account, shared by `show`, `edit`, `rm`, `copy` and `otp`.
struct AccountSelection: ParsableArguments {
    @Argument(
        help: ArgumentHelp(AccountArgument.help, valueName: "account"),
        completion: AccountArgument.completion
    ) var account: String
}

enum AccountArgument {
    /// The help text of the argument naming an account.
    static let help = "The account: SERVICE (a domain, URL or title), SERVICE/USER, or an id (4+ characters)."

    /// Shell completion of an account: the sites of the vault, asked of the agent when one runs
    /// unlocked (a completion never opens the vault or asks for the master password); nothing
    /// otherwise.
    static let completion = CompletionKind.custom { _, _, prefix in
        guard let connection = try? AgentClient.connect(),
            let sites = try? AgentClient.request(connection, .sites)
        else { return [] }
        return sites.filter { $0.hasPrefix(prefix) }
    }

    /// The SERVICE part of `SERVICE[/USER]`.
    static func service(of name: String) -> String {
        guard !name.contains("://"), let slash = name.firstIndex(of: "/") else { return name }
        return String(name[..<slash])
    }

    /// The failure message for a name several accounts fit: the candidates (id, title, user,
    /// service), one a line, and how to choose.
    static func ambiguity(_ name: String, _ candidates: [Credential]) -> String {
        var lines = ["\(name) names \(candidates.count) accounts; give SERVICE/USER or the id of one:"]
        for credential in candidates {
            let user = credential.user.isEmpty ? "(no user)" : credential.user
            lines.append(
                "  \(credential.id.short)  \(credential.content.displayTitle)  \(user)  "
                    + (credential.services.first?.identifier ?? "")
            )
        }
        return lines.joined(separator: "\n")
    }
}
