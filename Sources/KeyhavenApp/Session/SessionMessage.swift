public import Foundation
public import Passkeys
public import Vault

/// What a front end asks of a ``KeyhavenSession`` from another process: the session's remote form
/// (the CLI's requests to a running, unlocked agent). One request, one ``SessionResponse``; both
/// travel as JSON in a ``SessionProtocol`` envelope that carries the protocol version.
///
/// Everything the vault commands need and nothing more: no command line, environment or printed
/// text crosses the socket, only these values; the command renders the answer where it runs.
public enum SessionRequest: Hashable, Sendable, Codable {
    /// The credentials, or only the recently deleted ones: ``SessionResponse/listing(_:)``.
    case list(deleted: Bool)
    /// `text`: titles, users, services, notes and folders containing `query`; else the credentials
    /// for the service `query` names (a domain or URL): ``SessionResponse/listing(_:)``.
    case search(query: String, text: Bool)
    /// The account a person's name for it finds (``Vault/account(named:)``: an id or its first
    /// characters, `SERVICE[/USER]`, or a title): ``SessionResponse/account(_:)``.
    case account(name: String)
    /// One credential by id: ``SessionResponse/credential(_:)``.
    case credential(id: CredentialID)
    /// Its earlier passwords, oldest first: ``SessionResponse/history(_:)``.
    case history(id: CredentialID)
    /// The histories of several credentials at once (an export): ``SessionResponse/histories(_:)``.
    case histories(ids: [CredentialID])
    /// A new credential (its password chosen, or generated, by the caller): ``SessionResponse/id(_:)``.
    case add(CredentialContent)
    /// Changes to a credential: ``SessionResponse/credential(_:)`` as it is after them.
    case update(id: CredentialID, changes: CredentialChanges)
    /// To Recently Deleted: ``SessionResponse/done``.
    case remove(id: CredentialID)
    /// Back from Recently Deleted: ``SessionResponse/done``.
    case restore(id: CredentialID)
    /// The credential whose id starts with `prefix` (4+ characters): ``SessionResponse/id(_:)``.
    case resolve(prefix: String)
    /// The vault's passkeys with their ids; their private keys only `withKeys` (an export):
    /// ``SessionResponse/passkeys(_:)``.
    case passkeys(withKeys: Bool)
    /// An export read by the caller, added in one transaction, or only previewed (`dryRun`):
    /// ``SessionResponse/importReport(_:)``.
    case importItems(ParsedImport, dryRun: Bool)
    /// How many upgrades a previous run left unconfirmed: ``SessionResponse/count(_:)``.
    case pendingUpgrades
    /// `keyhaven list --conflicts`: the credentials with sync conflict marks, secret values only
    /// when `reveal`: ``SessionResponse/syncConflicts(_:)``. Answered by a session with sync.
    case syncConflicts(reveal: Bool)
    /// `keyhaven sync resolve`: keeps one value of `field`'s conflict in credential `id`, written as
    /// a new edit the next sync sends: ``SessionResponse/syncStatus(_:)``.
    case syncResolve(id: CredentialID, field: String, keep: SyncConflictChoice)
    /// `keyhaven sync enable`: turns sync on with a new account on `server`, this device named
    /// `deviceName`: ``SessionResponse/syncStatus(_:)``. Answered by a session with sync (the
    /// `KeyhavenSync` target's `answerWithSync`), as the agent's and the CLI's are.
    case syncEnable(server: String, deviceName: String)
    /// `keyhaven sync now`: ``SessionResponse/syncReport(_:)``.
    case syncNow
    /// `keyhaven sync status`: ``SessionResponse/syncStatus(_:)``.
    case syncStatus
    /// `keyhaven sync disable`: turns sync off on this device; answered with the status it had
    /// (``SessionResponse/syncStatus(_:)``: the server and account it leaves).
    case syncDisable
    /// `keyhaven sync join`: this device joins the account of a device that approves `code` (the
    /// join code the command made and showed) within `timeoutSeconds`:
    /// ``SessionResponse/syncStatus(_:)`` after the first sync.
    case syncJoin(server: String, deviceName: String, code: String, timeoutSeconds: Int)
    /// `keyhaven device approve`: ``SessionResponse/syncApproval(_:)``.
    case deviceApprove(code: String)
    /// `keyhaven device list`: ``SessionResponse/syncDevices(_:)``.
    case deviceList
    /// `keyhaven device revoke ID`: ``SessionResponse/syncDevices(_:)`` holding the revoked device.
    case deviceRevoke(id: String)
}

/// The session's answer to one ``SessionRequest``: the typed values, or why it refused.
public enum SessionResponse: Hashable, Sendable, Codable {
    case listing(CredentialListing)
    case account(AccountLookup)
    case credential(Credential)
    case history([PasswordHistoryEntry])
    case histories([CredentialID: [PasswordHistoryEntry]])
    case id(CredentialID)
    case passkeys([PasskeyEntry])
    case importReport(ImportReport)
    case count(Int)
    case syncConflicts([SyncConflictItem])
    case syncStatus(SyncStatus)
    case syncReport(SyncReport)
    case syncDevices([SyncDeviceEntry])
    case syncApproval(SyncApproval)
    case done
    /// A code to match on and a message for the person; never a secret.
    case failure(SessionError)
}

/// Credentials and the records that could not be read (``Vault/Listing`` as it travels).
public struct CredentialListing: Hashable, Sendable, Codable {
    public var credentials: [Credential]
    /// One per record that could not be read, named by id.
    public var failures: [SessionError]

    public init(credentials: [Credential], failures: [SessionError] = []) {
        (self.credentials, self.failures) = (credentials, failures)
    }

    public init(_ listing: Vault.Listing) {
        self.init(credentials: listing.credentials, failures: listing.failures.map(SessionError.init(vault:)))
    }
}

/// A passkey with the id the vault knows it by (`keyhaven passkey rm ID`).
public struct PasskeyEntry: Hashable, Sendable, Codable {
    public var id: String
    /// Its private key is empty unless the request asked for keys.
    public var passkey: PasskeyCredential

    public init(id: String, passkey: PasskeyCredential) {
        (self.id, self.passkey) = (id, passkey)
    }
}

/// What `keyhaven edit` changes in a credential; nil (or an empty list) leaves a field as it is.
///
/// ```swift
/// var changes = CredentialChanges()
/// changes.password = generated
/// changes.folder = .remove
/// ```
public struct CredentialChanges: Hashable, Sendable, Codable {
    /// A change of an optional field: a new value, or none.
    public enum Field: Hashable, Sendable, Codable {
        case set(String)
        case remove

        var value: String? {
            if case .set(let value) = self { value } else { nil }
        }
    }

    public var user: String?
    /// A new password; the old one moves to the history.
    public var password: String?
    public var title: String?
    public var notes: String?
    public var totp: Field?
    public var folder: Field?
    public var addServices: [ServiceIdentifier] = []
    /// Services removed, by identifier.
    public var removeServices: [String] = []

    /// No change yet: set the fields to change.
    public init() {}

    /// `content` with these changes (services removed first, then the new ones added).
    public func apply(to content: inout CredentialContent) {
        if let user { content.user = user }
        if let password { content.password = password }
        if let title { content.title = title }
        if let notes { content.notes = notes }
        if let totp { content.totp = totp.value }
        if let folder { content.folder = folder.value }
        content.services.removeAll { removeServices.contains($0.identifier) }
        content.services += addServices
    }
}

/// The envelope of a session message on the agent's socket and its version.
///
/// A request is `{"type": "session", "v": 1, "id": N, "request": {…}}`, its answer
/// `{"v": 1, "id": N, "response": {…}}`. A request of another version is refused with
/// ``SessionError/Code/unsupportedVersion`` before anything else of it is read, and so is an
/// answer of another version: the CLI and the agent must be the same Keyhaven.
///
/// A message longer than a frame (a listing of thousands of credentials, a large import) travels
/// in parts (``frames(_:limit:)``): a header `{"type": "session.parts", "v": 1, "parts": K}`,
/// then K frames whose bytes, joined, are the message.
///
/// The version is `v`, as on every other message of the socket (``AgentCommand``, the browser
/// protocol). This envelope first named it `version`; for one release every session message still
/// carries `version` too and a message with `version` alone is read, so a CLI and an agent a
/// release apart (an agent left running across an update) still understand each other. The
/// release after drops `version` (``Versioned/version``).
public enum SessionProtocol {
    /// The version this Keyhaven speaks.
    public static let version = 1
    /// The `type` of a request frame (the agent's other CLI requests are `agent.*`).
    public static let type = "session"
    /// The `type` of the header of a message in parts.
    public static let partsType = "session.parts"
    /// The most parts a message may have (128 frames of 1 MiB: an import's 64 MiB file, parsed).
    public static let maximumParts = 128

    /// The version members of a session message: `v`, and `version` for one release.
    protocol Versioned {
        /// The protocol version.
        var v: Int? { get }
        /// The name `v` had before; written beside `v` and read when `v` is absent, for one
        /// release only (remove it in the next).
        var version: Int? { get }
    }

    struct Header: Codable, Versioned {
        var type: String?
        var v: Int?
        var version: Int?
        var id: Int?
        var parts: Int?
    }

    /// The frames that carry `message` where a frame holds at most `limit` bytes: the message
    /// itself, or a parts header and the message's bytes cut into frames.
    public static func frames(_ message: Data, limit: Int) -> [Data] {
        guard message.count > limit else { return [message] }
        let chunks = stride(from: 0, to: message.count, by: limit).map { offset in
            Data(message.dropFirst(offset).prefix(limit))
        }
        let header = Data(
            #"{"type":"\#(partsType)","v":\#(version),"version":\#(version),"parts":\#(chunks.count)}"#.utf8
        )
        return [header] + chunks
    }

    /// How many frames follow `frame`, when it is the header of a message in parts; nil when it is
    /// a message itself. A header of another version, or of too many parts, is refused.
    public static func parts(in frame: Data) throws(SessionError) -> Int? {
        guard let header = try? JSONDecoder().decode(Header.self, from: frame), header.type == partsType else {
            return nil
        }
        guard let received = header.protocolVersion else {
            throw SessionError(.badRequest, "A message in parts has no session protocol version.")
        }
        guard received == version else { throw .unsupportedVersion(received) }
        guard let parts = header.parts, (1...maximumParts).contains(parts) else {
            throw SessionError(.badRequest, "A message in parts has 1 to \(maximumParts) parts.")
        }
        return parts
    }

    struct RequestFrame: Codable, Versioned {
        var type = SessionProtocol.type
        var v: Int?
        var version: Int?
        var id: Int
        var request: SessionRequest
    }

    struct ResponseFrame: Codable, Versioned {
        var v: Int?
        var version: Int?
        var id: Int
        var response: SessionResponse
    }

    /// A request ready to send.
    public static func encode(
        _ request: SessionRequest,
        id: Int = 1,
        version: Int = SessionProtocol.version
    ) throws -> Data {
        try JSONEncoder().encode(RequestFrame(v: version, version: version, id: id, request: request))
    }

    /// The request in `frame` and its id; the error says why it cannot be served (another version,
    /// a request this Keyhaven does not know). The error never repeats what the frame holds.
    public static func decodeRequest(_ frame: Data) -> (id: Int, request: Result<SessionRequest, SessionError>) {
        guard let header = try? JSONDecoder().decode(Header.self, from: frame), let received = header.protocolVersion
        else {
            return (0, .failure(SessionError(.badRequest, "The request has no session protocol version.")))
        }
        let id = header.id ?? 0
        guard received == version else { return (id, .failure(.unsupportedVersion(received))) }
        do {
            return (id, .success(try JSONDecoder().decode(RequestFrame.self, from: frame).request))
        } catch {
            return (id, .failure(SessionError(.badRequest, "The request could not be read\(Self.place(error)).")))
        }
    }

    /// An answer ready to send.
    public static func encode(_ response: SessionResponse, id: Int, version: Int = SessionProtocol.version) -> Data {
        do {
            return try JSONEncoder().encode(ResponseFrame(v: version, version: version, id: id, response: response))
        } catch {
            let failure = SessionResponse.failure(SessionError(.failed, "The answer could not be written."))
            // A failure always encodes.
            let frame = ResponseFrame(v: version, version: version, id: id, response: failure)
            return (try? JSONEncoder().encode(frame)) ?? Data()
        }
    }

    /// The answer in `frame`.
    public static func decodeResponse(_ frame: Data) throws(SessionError) -> SessionResponse {
        guard let header = try? JSONDecoder().decode(Header.self, from: frame), let received = header.protocolVersion
        else {
            throw SessionError(.badRequest, "The agent's answer has no session protocol version.")
        }
        guard received == version else { throw .unsupportedVersion(received) }
        do {
            return try JSONDecoder().decode(ResponseFrame.self, from: frame).response
        } catch {
            throw SessionError(.badRequest, "The agent's answer could not be read\(Self.place(error)).")
        }
    }

    /// Where decoding failed (the coding path, never a value).
    static func place(_ error: any Error) -> String {
        let context: DecodingError.Context? =
            switch error as? DecodingError {
            case .typeMismatch(_, let context), .valueNotFound(_, let context), .keyNotFound(_, let context),
                .dataCorrupted(let context):
                context
            default: nil
            }
        guard let path = context?.codingPath, !path.isEmpty else { return "" }
        return " at " + path.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
    }
}

extension SessionProtocol.Versioned {
    /// The version the message carries: `v`, else (a message of the release before) `version`.
    var protocolVersion: Int? { v ?? version }
}

extension SessionError {
    /// A message of another protocol version than this Keyhaven's.
    static func unsupportedVersion(_ version: Int) -> SessionError {
        SessionError(
            .unsupportedVersion,
            "Session protocol version \(version) is not supported (this Keyhaven speaks version "
                + "\(SessionProtocol.version)): run the same Keyhaven for the command and the agent — "
                + "restart the agent after an update (`keyhaven agent stop`, then `keyhaven agent`)."
        )
    }

    /// A vault error as it travels: its code and message (which name records by id only).
    public init(vault error: VaultError) {
        self.init(Code(error.code.name), error.message)
    }
}
