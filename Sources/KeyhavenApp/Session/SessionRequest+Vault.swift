import Passkeys
public import Vault

extension SessionRequest {
    /// The answer with `vault`: what ``KeyhavenSession/answer(_:)`` runs on the session's thread,
    /// and what the CLI runs itself when no unlocked agent holds the vault (one implementation of
    /// every request, wherever it is served). Failures are answers too (``SessionResponse/failure(_:)``).
    public func answer(with vault: Vault) -> SessionResponse {
        do {
            return try answering(vault)
        } catch {
            return .failure(SessionError(vault: error))
        }
    }

    func answering(_ vault: Vault) throws(VaultError) -> SessionResponse {
        switch self {
        case .list(let deleted):
            return .listing(CredentialListing(try vault.list(onlyDeleted: deleted)))
        case .search(let query, let text):
            return .listing(
                CredentialListing(text ? try vault.search(text: query) : try vault.credentials(forService: query))
            )
        case .account(let name):
            return .account(try vault.account(named: name))
        case .credential(let id):
            return .credential(try vault.credential(id))
        case .history(let id):
            return .history(try vault.history(id))
        case .histories(let ids):
            var histories: [CredentialID: [PasswordHistoryEntry]] = [:]
            for id in ids { histories[id] = try vault.history(id) }
            return .histories(histories)
        case .add(let content):
            return .id(try vault.add(content))
        case .update(let id, let changes):
            return .credential(try vault.update(id) { changes.apply(to: &$0) })
        case .remove(let id):
            try vault.remove(id)
            return .done
        case .restore(let id):
            try vault.restore(id)
            return .done
        case .resolve(let prefix):
            return .id(try vault.resolve(prefix))
        case .passkeys(let withKeys):
            return .passkeys(
                try vault.passkeys().map { passkey in
                    var shown = passkey
                    if !withKeys { shown.privateKey = [] }
                    return PasskeyEntry(id: vault.passkeyID(passkey), passkey: shown)
                }
            )
        case .importItems(let parsed, let dryRun):
            let service = ImportService(vault: vault)
            return .importReport(dryRun ? try service.preview(parsed) : try service.run(parsed))
        case .pendingUpgrades:
            return .count(try vault.pendingUpgrades().count)
        case .syncConflicts, .syncResolve, .syncEnable, .syncNow, .syncStatus, .syncDisable, .syncJoin,
            .deviceApprove, .deviceList, .deviceRevoke:
            // Sync talks to a server: a session with sync answers it (`answerWithSync`), never a
            // vault on its own.
            throw VaultError(
                .invalidInput,
                "sync is answered by a session with sync (this Keyhaven's agent or command line), not by the vault"
            )
        }
    }
}

extension KeyhavenSession {
    /// Answers a front end's request (the agent's socket) with the unlocked vault, on the session's
    /// thread. A request that changes the vault raises the revision and publishes `.changed`, as
    /// every write through the session does (the AutoFill agent then reads its identities again).
    public func answer(_ request: SessionRequest) -> SessionResponse {
        do {
            return try withVault { request.answer(with: $0) }
        } catch let error as SessionError {
            return .failure(error)
        } catch {
            return .failure(SessionError(.failed, "The request failed."))
        }
    }
}
