import Foundation
import KeyhavenApp
import KeyhavenTesting
import Passkeys
import Testing
import Vault

/// The session's remote form (issue 27, item 2): every request and answer survives the socket's
/// JSON unchanged, another protocol version is refused with what to do, and the one implementation
/// of the requests does what the commands expect of it.
struct SessionMessageTests {
    static let chrome = Fixtures.packageRoot().appendingPathComponent("Tests/VaultTests/Fixtures/imports/chrome.csv")

    struct Samples {
        let credential: Credential
        let other: Credential
        let passkey: PasskeyCredential
        let parsed: ParsedImport
        let report: ImportReport
    }

    static func samples() throws -> Samples {
        let test = try TestVault()
        let id = try test.vault.add(
            CredentialContent(
                title: "GitHub",
                services: [ServiceIdentifier("github.com"), ServiceIdentifier("https://gist.github.com/login")],
                user: "ada",
                password: "pw-1 ✓",
                notes: "line one\nline two",
                totp: "JBSWY3DPEHPK3PXP",
                folder: "Work/Code"
            )
        )
        try test.vault.update(id) { $0.password = "pw-2" }
        try test.vault.remove(id)
        let credential = try test.vault.credential(id)
        let other = try test.vault.credential(
            try test.vault.add(CredentialContent(services: [ServiceIdentifier("example.org")], user: "bob"))
        )
        let passkey = PasskeyCredential(
            rpID: "example.org",
            credentialID: [1, 2, 3, 250],
            userHandle: [9, 8, 7],
            userName: "bob",
            userDisplayName: "Bob",
            algorithm: -7,
            privateKey: Array(repeating: 42, count: 32),
            signCount: 3,
            created: Date(timeIntervalSince1970: 1_700_000_000.25),
            lastUsed: Date(timeIntervalSince1970: 1_700_000_100)
        )
        let parsed = try ImportService.read(contentsOf: chrome)
        let report = try ImportService(vault: try TestVault().vault).preview(parsed)
        return Samples(credential: credential, other: other, passkey: passkey, parsed: parsed, report: report)
    }

    /// Which case a request is; the switch is exhaustive, so a new request does not compile until
    /// it is listed here (and then in ``requests(_:)``).
    static func kind(_ request: SessionRequest) -> String {
        switch request {
        case .list: "list"
        case .search: "search"
        case .account: "account"
        case .credential: "credential"
        case .history: "history"
        case .histories: "histories"
        case .add: "add"
        case .update: "update"
        case .remove: "remove"
        case .restore: "restore"
        case .resolve: "resolve"
        case .passkeys: "passkeys"
        case .importItems: "importItems"
        case .pendingUpgrades: "pendingUpgrades"
        case .syncConflicts: "syncConflicts"
        case .syncResolve: "syncResolve"
        case .syncEnable: "syncEnable"
        case .syncNow: "syncNow"
        case .syncStatus: "syncStatus"
        case .syncDisable: "syncDisable"
        case .syncJoin: "syncJoin"
        case .deviceApprove: "deviceApprove"
        case .deviceList: "deviceList"
        case .deviceRevoke: "deviceRevoke"
        }
    }

    static func kind(_ response: SessionResponse) -> String {
        switch response {
        case .listing: "listing"
        case .account: "account"
        case .credential: "credential"
        case .history: "history"
        case .histories: "histories"
        case .id: "id"
        case .passkeys: "passkeys"
        case .importReport: "importReport"
        case .count: "count"
        case .syncConflicts: "syncConflicts"
        case .syncStatus: "syncStatus"
        case .syncReport: "syncReport"
        case .syncDevices: "syncDevices"
        case .syncApproval: "syncApproval"
        case .done: "done"
        case .failure: "failure"
        }
    }

    static func requests(_ samples: Samples) -> [SessionRequest] {
        let id = samples.credential.id
        var everyChange = CredentialChanges()
        (everyChange.user, everyChange.password) = ("ada@example.org", "generated-in-the-cli")
        (everyChange.title, everyChange.notes, everyChange.totp, everyChange.folder) = ("", "n", .remove, .set("Home"))
        everyChange.addServices = [ServiceIdentifier("android://com.example.app")]
        everyChange.removeServices = ["github.com"]
        return [
            .list(deleted: true), .list(deleted: false), .search(query: "github.com", text: false),
            .search(query: "work notes", text: true), .account(name: "github.com/ada"), .credential(id: id),
            .history(id: id), .histories(ids: [id, samples.other.id]), .add(samples.credential.content),
            .update(id: id, changes: everyChange),
            .update(id: id, changes: CredentialChanges()), .remove(id: id), .restore(id: id),
            .resolve(prefix: String(id.rawValue.prefix(6))), .passkeys(withKeys: true),
            .passkeys(withKeys: false), .importItems(samples.parsed, dryRun: true), .pendingUpgrades,
            .syncConflicts(reveal: true), .syncConflicts(reveal: false),
            .syncResolve(id: id, field: "password", keep: .current),
            .syncResolve(id: id, field: "passkey/0123456789abcdef", keep: .other(option: 2)),
            .syncEnable(server: "https://sync.example", deviceName: "laptop"), .syncNow, .syncStatus,
            .syncDisable,
            .syncJoin(
                server: "https://sync.example",
                deviceName: "phone",
                code: "K7QM-2XPA-9FRT-4HDW",
                timeoutSeconds: 600
            ),
            .deviceApprove(code: "K7QM-2XPA-9FRT-4HDW"), .deviceList,
            .deviceRevoke(id: String(repeating: "c", count: 32)),
        ]
    }

    static var syncReport: SyncReport {
        var report = SyncReport(status: .disabled)
        report.status.pending = 1
        (report.pushed, report.pulled, report.created, report.updated, report.deleted, report.restored) = (
            1, 2, 3, 4, 5, 6
        )
        report.rejections = ["item 00: too large"]
        return report
    }

    static func responses(_ samples: Samples) -> [SessionResponse] {
        [
            .listing(
                CredentialListing(
                    credentials: [samples.credential, samples.other],
                    failures: [SessionError(.failed, "record 1234 could not be read")]
                )
            ),
            .account(.found(samples.credential)), .account(.ambiguous([samples.credential, samples.other])),
            .account(.notFound), .credential(samples.credential),
            .history([PasswordHistoryEntry(password: "old", replaced: Date(timeIntervalSince1970: 12.5))]),
            .histories([
                samples.credential.id: [PasswordHistoryEntry(password: "o", replaced: Date())], samples.other.id: [],
            ]),
            .id(samples.other.id), .passkeys([PasskeyEntry(id: "pk-1", passkey: samples.passkey)]),
            .importReport(samples.report), .count(3), .syncStatus(.disabled), .syncConflicts([]),
            .syncConflicts([
                SyncConflictItem(
                    id: samples.credential.id,
                    title: "Mail",
                    service: "mail.example",
                    user: "ada",
                    conflicts: [
                        SyncFieldConflict(
                            field: "password",
                            option: 1,
                            secret: true,
                            masked: true,
                            current: nil,
                            other: nil,
                            otherWritten: Date(timeIntervalSince1970: 1_800_000_000.125)
                        ),
                        SyncFieldConflict(
                            field: "title",
                            option: 1,
                            secret: false,
                            masked: false,
                            current: "Mail",
                            other: nil,
                            otherWritten: Date(timeIntervalSince1970: 1_800_000_001)
                        ),
                    ]
                )
            ]),
            .syncStatus(
                SyncStatus(
                    server: "https://sync.example",
                    account: String(repeating: "a", count: 32),
                    deviceID: String(repeating: "b", count: 32),
                    deviceName: "laptop",
                    pending: 2,
                    conflicts: 1,
                    lastSync: Date(timeIntervalSince1970: 1_800_000_000.25)
                )
            ),
            .syncReport(Self.syncReport),
            .syncDevices([
                SyncDeviceEntry(
                    id: String(repeating: "b", count: 32),
                    name: "laptop",
                    created: Date(timeIntervalSince1970: 1_800_000_000.5),
                    approvedBy: nil,
                    revoked: nil,
                    current: true
                ),
                SyncDeviceEntry(
                    id: String(repeating: "c", count: 32),
                    name: "phone",
                    created: Date(timeIntervalSince1970: 1_800_000_100),
                    approvedBy: String(repeating: "b", count: 32),
                    revoked: Date(timeIntervalSince1970: 1_800_000_200),
                    current: false
                ),
            ]),
            .syncApproval(
                SyncApproval(deviceID: String(repeating: "c", count: 32), deviceName: "phone", account: "acct")
            ),
            .done,
            .failure(SessionError(.locked, "Keyhaven is locked: run `keyhaven unlock`.")),
        ]
    }

    @Test func everyRequestAndAnswerSurvivesTheSocketUnchanged() throws {
        let samples = try Self.samples()
        let requests = Self.requests(samples)
        #expect(Set(requests.map(Self.kind)).count == 24, "every kind of request is sent")
        for (index, request) in requests.enumerated() {
            let frame = try SessionProtocol.encode(request, id: index + 7)
            let (id, decoded) = SessionProtocol.decodeRequest(frame)
            #expect(id == index + 7)
            #expect(try decoded.get() == request, "\(Self.kind(request))")
        }
        let responses = Self.responses(samples)
        #expect(Set(responses.map(Self.kind)).count == 16, "every kind of answer is sent")
        for response in responses {
            let frame = SessionProtocol.encode(response, id: 3)
            let decoded = try SessionProtocol.decodeResponse(frame)
            #expect(decoded == response, "\(Self.kind(response))")
            if case .failure(let sent) = response, case .failure(let received) = decoded {
                #expect(sent.message == received.message)
            }
        }
        // The envelope names its type and version (`v`, as every message on the socket).
        let envelope =
            try JSONSerialization.jsonObject(with: try SessionProtocol.encode(.pendingUpgrades)) as? [String: Any]
        #expect(envelope?["type"] as? String == "session" && envelope?["v"] as? Int == SessionProtocol.version)
    }

    /// The version is `v`; for one release each message also carries `version`, the name it had,
    /// and a message with `version` alone (from the release before) is read: an agent left
    /// running across an update and the new CLI still understand each other.
    @Test func aMaskedConflictsJSONHasEveryKeyWithNull() throws {
        let item = SyncConflictItem(
            id: CredentialID(),
            title: "Mail",
            service: nil,
            user: "ada",
            conflicts: [
                SyncFieldConflict(
                    field: "password",
                    option: 1,
                    secret: true,
                    masked: true,
                    current: nil,
                    other: nil,
                    otherWritten: Date(timeIntervalSince1970: 0)
                )
            ]
        )
        let json = try #require(
            try JSONSerialization.jsonObject(with: JSONEncoder().encode(item)) as? [String: Any]
        )
        #expect(json["service"] is NSNull)
        let conflict = try #require((json["conflicts"] as? [[String: Any]])?.first)
        #expect(conflict["current"] is NSNull && conflict["other"] is NSNull)
        #expect(try JSONDecoder().decode(SyncConflictItem.self, from: JSONEncoder().encode(item)) == item)
    }

    @Test func theVersionIsVAndTheOldNameIsReadForOneRelease() throws {
        func members(_ frame: Data) throws -> [String: Any] {
            try #require(try JSONSerialization.jsonObject(with: frame) as? [String: Any])
        }
        let request = try members(try SessionProtocol.encode(.list(deleted: false), id: 5))
        #expect(request["v"] as? Int == 1 && request["version"] as? Int == 1)
        let response = try members(SessionProtocol.encode(.done, id: 5))
        #expect(response["v"] as? Int == 1 && response["version"] as? Int == 1)
        let header = try members(SessionProtocol.frames(Data(count: 10), limit: 4)[0])
        #expect(header["v"] as? Int == 1 && header["version"] as? Int == 1 && header["parts"] as? Int == 3)

        // The release before wrote `version` only; this one reads it.
        let old = Data(#"{"type":"session","version":1,"id":6,"request":{"list":{"deleted":false}}}"#.utf8)
        let (id, decoded) = SessionProtocol.decodeRequest(old)
        #expect(id == 6 && (try? decoded.get()) == .list(deleted: false), "\(decoded)")
        let oldAnswer = Data(#"{"version":1,"id":6,"response":{"done":{}}}"#.utf8)
        #expect(try SessionProtocol.decodeResponse(oldAnswer) == .done)
        #expect(try SessionProtocol.parts(in: Data(#"{"type":"session.parts","version":1,"parts":2}"#.utf8)) == 2)
        // `v` alone is what the release after writes.
        let new = Data(#"{"type":"session","v":1,"id":7,"request":{"list":{"deleted":true}}}"#.utf8)
        #expect((try? SessionProtocol.decodeRequest(new).request.get()) == .list(deleted: true))
        #expect(try SessionProtocol.decodeResponse(Data(#"{"v":1,"id":7,"response":{"done":{}}}"#.utf8)) == .done)
        #expect(try SessionProtocol.parts(in: Data(#"{"type":"session.parts","v":1,"parts":2}"#.utf8)) == 2)
        // `v` decides when both are there; neither is a bad request.
        let newer = Data(#"{"type":"session","v":2,"version":1,"id":8,"request":{"list":{"deleted":true}}}"#.utf8)
        #expect(throws: SessionError(.unsupportedVersion, "")) {
            try SessionProtocol.decodeRequest(newer).request.get()
        }
        #expect(throws: SessionError(.badRequest, "")) {
            try SessionProtocol.parts(in: Data(#"{"type":"session.parts","parts":2}"#.utf8))
        }
    }

    @Test func errorCodesTravelByTheirNames() throws {
        let codes: [SessionError.Code] = [.locked, .wrongPassword, .badRequest, .failed, .unsupportedVersion]
        #expect(codes.map(\.name) == ["locked", "wrongPassword", "badRequest", "failed", "unsupportedVersion"])
        let wire = try JSONEncoder().encode(SessionError(.wrongPassword, "The master password is wrong."))
        let object = try JSONSerialization.jsonObject(with: wire) as? [String: String]
        #expect(object == ["code": "wrongPassword", "message": "The master password is wrong."])
    }

    @Test func anotherVersionIsRefusedWithWhatToDo() throws {
        let (id, request) = SessionProtocol.decodeRequest(
            try SessionProtocol.encode(.list(deleted: false), id: 4, version: 2)
        )
        #expect(id == 4)
        #expect(throws: SessionError(.unsupportedVersion, "")) { try request.get() }
        if case .failure(let error) = request {
            #expect(error.message.contains("version 2") && error.message.contains("restart the agent"))
        }
        let answer = SessionProtocol.encode(.done, id: 1, version: 0)
        #expect(throws: SessionError(.unsupportedVersion, "")) { try SessionProtocol.decodeResponse(answer) }
        // A request this Keyhaven does not know, and a frame without a version, are bad requests
        // whose message does not repeat what was sent.
        let unknown = Data(#"{"type":"session","version":1,"id":2,"request":{"teleport":{"secret":"s3cret"}}}"#.utf8)
        let (unknownID, refused) = SessionProtocol.decodeRequest(unknown)
        #expect(unknownID == 2)
        #expect(throws: SessionError(.badRequest, "")) { try refused.get() }
        if case .failure(let error) = refused { #expect(!error.message.contains("s3cret")) }
        #expect(throws: SessionError(.badRequest, "")) {
            try SessionProtocol.decodeRequest(Data("{}".utf8)).request.get()
        }
    }

    @Test func aMessageLongerThanAFrameIsCutIntoPartsAndJoinedWhole() throws {
        let message = try SessionProtocol.encode(.search(query: String(repeating: "x", count: 95), text: true))
        #expect(SessionProtocol.frames(message, limit: message.count) == [message])
        let frames = SessionProtocol.frames(message, limit: 40)
        let parts = try #require(try SessionProtocol.parts(in: frames[0]))
        #expect(parts == frames.count - 1 && frames.dropFirst().allSatisfy { $0.count <= 40 })
        #expect(frames.dropFirst().reduce(Data(), +) == message)
        #expect(try SessionProtocol.parts(in: message) == nil)
        let tooMany = Data(#"{"type":"session.parts","version":1,"parts":129}"#.utf8)
        #expect(throws: SessionError(.badRequest, "")) { try SessionProtocol.parts(in: tooMany) }
        let otherVersion = Data(#"{"type":"session.parts","version":2,"parts":2}"#.utf8)
        #expect(throws: SessionError(.unsupportedVersion, "")) { try SessionProtocol.parts(in: otherVersion) }
    }

    @Test func theRequestsDoWhatTheCommandsExpect() throws {
        let test = try TestVault()
        func ask(_ request: SessionRequest) -> SessionResponse { request.answer(with: test.vault) }
        guard
            case .id(let id) = ask(
                .add(
                    CredentialContent(
                        services: [ServiceIdentifier("github.com")],
                        user: "ada",
                        password: "a",
                        totp: "JBSWY3DPEHPK3PXP",
                        folder: "Work"
                    )
                )
            )
        else {
            Issue.record("add answers with an id")
            return
        }
        var changes = CredentialChanges()
        (changes.password, changes.totp, changes.folder) = ("b", .remove, .set("Home"))
        changes.addServices = [ServiceIdentifier("gist.github.com")]
        changes.removeServices = ["github.com"]
        guard case .credential(let changed) = ask(.update(id: id, changes: changes)) else {
            Issue.record("update answers with the credential")
            return
        }
        #expect(changed.password == "b" && changed.totp == nil && changed.folder == "Home" && changed.user == "ada")
        #expect(changed.services.map(\.identifier) == ["gist.github.com"])
        #expect(ask(.history(id: id)) == .history(try test.vault.history(id)))
        // (As stored: `update` answers with the dates it wrote, before the store rounds them.)
        #expect(ask(.account(name: "gist.github.com/ada")) == .account(.found(try test.vault.credential(id))))
        #expect(ask(.account(name: "nothing.example")) == .account(.notFound))
        // Refusals carry the vault's code and a message without secrets.
        guard case .failure(let missing) = ask(.resolve(prefix: "ffffffff")) else {
            Issue.record("an unknown id is refused")
            return
        }
        #expect(missing.code.name == "notFound")
        // Passkeys travel without their private keys unless asked.
        let passkey = PasskeyCredential(
            rpID: "github.com",
            credentialID: [1],
            userHandle: [2],
            userName: "ada",
            userDisplayName: "Ada",
            algorithm: -7,
            privateKey: Array(repeating: 7, count: 32),
            created: Date()
        )
        try test.vault.savePasskey(passkey)
        guard case .passkeys(let listed) = ask(.passkeys(withKeys: false)),
            case .passkeys(let withKeys) = ask(.passkeys(withKeys: true))
        else {
            Issue.record("passkeys are listed")
            return
        }
        #expect(
            listed.count == 1 && listed[0].passkey.privateKey.isEmpty && listed[0].id == test.vault.passkeyID(passkey)
        )
        #expect(withKeys.map(\.passkey) == [passkey])
        #expect(ask(.remove(id: id)) == .done)
        guard case .listing(let deleted) = ask(.list(deleted: true)) else {
            Issue.record("list answers with a listing")
            return
        }
        #expect(deleted.credentials.map(\.id) == [id])
        #expect(ask(.restore(id: id)) == .done)
        #expect(ask(.pendingUpgrades) == .count(0))
    }

    @Test func aChangeThroughTheSessionIsPublished() async throws {
        let test = try TestVault()
        let session = KeyhavenSession(.init(vaultURL: test.url, allowInsecureKDF: true))
        #expect(
            await session.answer(.list(deleted: false))
                == .failure(SessionError(.locked, "Keyhaven is locked: run `keyhaven unlock`."))
        )
        try await session.unlock(masterPassword: test.masterPassword)
        let events = await session.events()
        let unchanged = await session.currentRevision
        _ = await session.answer(.list(deleted: false))
        #expect(await session.currentRevision == unchanged, "a read is no change")
        let added = await session.answer(
            .add(CredentialContent(services: [ServiceIdentifier("example.org")], user: "bob"))
        )
        guard case .id(let id) = added else {
            Issue.record("add answers with an id, not \(added)")
            return
        }
        #expect(try test.vault.credential(id).user == "bob")
        var iterator = events.makeAsyncIterator()
        let event = await iterator.next()
        #expect(event == .changed(revision: unchanged + 1))
    }
}
