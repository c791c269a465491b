import AutoFill
import Foundation
import KeyhavenAgent
import KeyhavenApp
import KeyhavenSync
import Vault

/// Where a vault command's credentials are: the vault this process opened (``LocalCredentialStore``),
/// or the running agent's unlocked one, reached with typed ``SessionRequest``s over its socket
/// (``AgentCredentialStore``). The commands are written once against it and render the answers here.
protocol CredentialStore {
    /// Serves one request; a refusal is a ``SessionResponse/failure(_:)``.
    func answer(_ request: SessionRequest) async throws -> SessionResponse
}

/// The vault unlocked by this process (no agent, a locked one, or `KEYHAVEN_NO_AGENT=1`): a
/// ``KeyhavenSession`` of the command's own answers the same typed requests the agent's does.
struct LocalCredentialStore: CredentialStore {
    let session: KeyhavenSession

    func answer(_ request: SessionRequest) async throws -> SessionResponse {
        await session.answerWithSync(request)
    }
}

/// The running agent's unlocked session, over the connection this command opened.
struct AgentCredentialStore: CredentialStore {
    let connection: FrameConnection

    func answer(_ request: SessionRequest) async throws -> SessionResponse {
        let message = try SessionProtocol.encode(request)
        var reply = Data()
        do {
            for frame in SessionProtocol.frames(message, limit: Frames.maximumLength) {
                try connection.send(frame)
            }
            let first = try receive()
            if let parts = try SessionProtocol.parts(in: first) {
                for _ in 0..<parts { reply.append(try receive()) }
            } else {
                reply = first
            }
        } catch let error as CommandFailure {
            throw error
        } catch let error as SessionError {
            throw error
        } catch {
            throw Output.failure("the agent did not answer: \(error)")
        }
        return try SessionProtocol.decodeResponse(reply)
    }

    private func receive() throws -> Data {
        guard let frame = try connection.receive() else {
            throw Output.failure("the agent closed the connection without answering")
        }
        return frame
    }
}

extension CredentialStore {
    /// The answer to `request` that `extract` accepts; a refusal becomes the command's failure
    /// (exit 2 for a wrong password or a locked agent, as when the vault is opened here).
    func ask<T>(_ request: SessionRequest, _ extract: (SessionResponse) -> T?) async throws -> T {
        let response: SessionResponse
        do {
            response = try await answer(request)
        } catch let error as SessionError {
            throw Self.failure(error)
        }
        if case .failure(let error) = response { throw Self.failure(error) }
        guard let value = extract(response) else {
            throw Output.failure("the agent answered with something else than was asked: is it the same Keyhaven?")
        }
        return value
    }

    static func failure(_ error: SessionError) -> CommandFailure {
        let message = error.message.hasSuffix(".") ? String(error.message.dropLast()) : error.message
        return Output.failure(message, exitCode: [.wrongPassword, .locked].contains(error.code) ? 2 : 1)
    }

    func list(deleted: Bool = false) async throws -> CredentialListing {
        try await ask(.list(deleted: deleted)) { if case .listing(let listing) = $0 { listing } else { nil } }
    }

    func search(_ query: String, text: Bool) async throws -> CredentialListing {
        try await ask(.search(query: query, text: text)) { if case .listing(let listing) = $0 { listing } else { nil } }
    }

    func account(named name: String) async throws -> AccountLookup {
        try await ask(.account(name: name)) { if case .account(let lookup) = $0 { lookup } else { nil } }
    }

    func credential(_ id: CredentialID) async throws -> Credential {
        try await ask(.credential(id: id)) { if case .credential(let credential) = $0 { credential } else { nil } }
    }

    func history(_ id: CredentialID) async throws -> [PasswordHistoryEntry] {
        try await ask(.history(id: id)) { if case .history(let history) = $0 { history } else { nil } }
    }

    func histories(_ ids: [CredentialID]) async throws -> [CredentialID: [PasswordHistoryEntry]] {
        try await ask(.histories(ids: ids)) { if case .histories(let histories) = $0 { histories } else { nil } }
    }

    func add(_ content: CredentialContent) async throws -> CredentialID {
        try await ask(.add(content)) { if case .id(let id) = $0 { id } else { nil } }
    }

    func update(_ id: CredentialID, _ changes: CredentialChanges) async throws -> Credential {
        try await ask(.update(id: id, changes: changes)) {
            if case .credential(let credential) = $0 { credential } else { nil }
        }
    }

    func remove(_ id: CredentialID) async throws {
        try await done(.remove(id: id))
    }

    func restore(_ id: CredentialID) async throws {
        try await done(.restore(id: id))
    }

    /// Asks for a change answered with ``SessionResponse/done``.
    func done(_ request: SessionRequest) async throws {
        _ = try await ask(request) { (response: SessionResponse) -> Bool? in
            if case .done = response { true } else { nil }
        }
    }

    func resolve(_ prefix: String) async throws -> CredentialID {
        try await ask(.resolve(prefix: prefix)) { if case .id(let id) = $0 { id } else { nil } }
    }

    func passkeys(withKeys: Bool = false) async throws -> [PasskeyEntry] {
        try await ask(.passkeys(withKeys: withKeys)) { if case .passkeys(let passkeys) = $0 { passkeys } else { nil } }
    }

    func importItems(_ parsed: ParsedImport, dryRun: Bool) async throws -> ImportReport {
        try await ask(.importItems(parsed, dryRun: dryRun)) {
            if case .importReport(let report) = $0 { report } else { nil }
        }
    }

    func enableSync(server: String, deviceName: String) async throws -> SyncStatus {
        try await ask(.syncEnable(server: server, deviceName: deviceName)) {
            if case .syncStatus(let status) = $0 { status } else { nil }
        }
    }

    func syncNow() async throws -> SyncReport {
        try await ask(.syncNow) { if case .syncReport(let report) = $0 { report } else { nil } }
    }

    func disableSync() async throws -> SyncStatus {
        try await ask(.syncDisable) { if case .syncStatus(let status) = $0 { status } else { nil } }
    }

    func joinSync(server: String, deviceName: String, code: String, timeoutSeconds: Int) async throws -> SyncStatus {
        try await ask(.syncJoin(server: server, deviceName: deviceName, code: code, timeoutSeconds: timeoutSeconds)) {
            if case .syncStatus(let status) = $0 { status } else { nil }
        }
    }

    func approveDevice(code: String) async throws -> SyncApproval {
        try await ask(.deviceApprove(code: code)) { if case .syncApproval(let approval) = $0 { approval } else { nil } }
    }

    func syncDevices() async throws -> [SyncDeviceEntry] {
        try await ask(.deviceList) { if case .syncDevices(let devices) = $0 { devices } else { nil } }
    }

    func revokeDevice(_ id: String) async throws -> SyncDeviceEntry {
        try await ask(.deviceRevoke(id: id)) {
            if case .syncDevices(let devices) = $0, devices.count == 1 { devices[0] } else { nil }
        }
    }

    func syncStatus() async throws -> SyncStatus {
        try await ask(.syncStatus) { if case .syncStatus(let status) = $0 { status } else { nil } }
    }

    /// Tells the person, without contacting anything, that upgrades are pending (or that the
    /// journal cannot be read): ``Reconciler/notice(_:)`` wherever the vault is.
    func noticePendingUpgrades() async {
        do {
            let count: Int = try await ask(.pendingUpgrades) { if case .count(let count) = $0 { count } else { nil } }
            guard count > 0 else { return }
            Output.error(Reconciler.pendingNote(count))
        } catch let failure as CommandFailure {
            Output.error("keyhaven: warning: the upgrade journal cannot be read (\(failure.message))")
        } catch {
            Output.error("keyhaven: warning: the upgrade journal cannot be read (\(error))")
        }
    }
}
