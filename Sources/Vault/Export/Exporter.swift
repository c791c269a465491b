public import Foundation
public import Passkeys
import _KeyhavenSupport

/// Export formats. Each re-imports to the same credentials (title, services, user, password, notes,
/// TOTP, folder); Bitwarden JSON also carries the password history, and it and CXF the passkeys.
public enum ExportFormat: String, Sendable, CaseIterable {
    /// Chrome's columns (`name,url,username,password,note`) plus `totp`, `folder` and `other_urls`
    /// (further services, one per line), so Chrome-style importers read it and nothing is lost.
    case csv
    /// Bitwarden's unencrypted JSON export.
    case bitwardenJSON = "bitwarden-json"
    /// FIDO Credential Exchange Format 1.0.
    case cxf
    /// KeePass 2 XML, which `keepassxc-cli import` reads; passkeys as KeePassXC's passkey entries.
    case keepassXML = "keepass-xml"
}

public enum Exporter {
    /// Serializes `credentials` (with `history[id]` where the format has room for it) and, in CXF
    /// and Bitwarden JSON, `passkeys` (CSV has no room for them: see ``carriesPasskeys(_:)``).
    public static func export(
        _ credentials: [Credential],
        history: [CredentialID: [PasswordHistoryEntry]] = [:],
        passkeys: [PasskeyCredential] = [],
        format: ExportFormat,
        now: Date = Date()
    ) throws(VaultError) -> Data {
        switch format {
        case .csv: return csv(credentials)
        case .bitwardenJSON: return try bitwardenJSON(credentials, history: history, passkeys: passkeys)
        case .cxf: return try cxf(credentials, passkeys: passkeys, now: now)
        case .keepassXML: return keepassXML(credentials, passkeys: passkeys, now: now)
        }
    }

    /// The document as pretty JSON; a failure is an error, never an empty export.
    static func serialize(_ document: [String: Any]) throws(VaultError) -> Data {
        do {
            return try JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys])
        } catch {
            throw VaultError(.invalidInput, "the export could not be written as JSON; nothing was written")
        }
    }

    // MARK: CSV

    static func csvField(_ value: String) -> String {
        guard
            // Scalars, not Characters: "\r\n" is one Character equal to neither "\r" nor "\n"
            // (a password holding one was written unquoted and split the row: found by FuzzImport).
            value.unicodeScalars.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" })
                || value.hasPrefix(" ") || value.hasSuffix(" ")
        else { return value }
        return "\"" + value.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    static func csv(_ credentials: [Credential]) -> Data {
        var lines = ["name,url,username,password,note,totp,folder,other_urls"]
        for credential in credentials {
            let services = credential.services.map(\.identifier)
            let fields = [
                credential.title, services.first ?? "", credential.user, credential.password ?? "", credential.notes,
                credential.totp ?? "", credential.folder ?? "", services.dropFirst().joined(separator: "\n"),
            ]
            lines.append(fields.map(csvField).joined(separator: ","))
        }
        return Data((lines.joined(separator: "\n") + "\n").utf8)
    }

    // MARK: Bitwarden JSON

    /// A passkey as Bitwarden's `login.fido2Credentials[]` entry: the key as base64url PKCS#8, a
    /// 16-byte credential id as a UUID and any other as `b64.` + base64url, strings for numbers.
    static func bitwardenPasskey(_ passkey: PasskeyCredential, dates: ISO8601DateFormatter) -> [String: Any]? {
        guard let key = try? passkey.pkcs8() else { return nil }
        let es256 = passkey.algorithm == COSEKey.Algorithm.es256.rawValue
        return [
            "credentialId": bitwardenCredentialID(passkey.credentialID),
            "keyType": "public-key",
            "keyAlgorithm": es256 ? "ECDSA" : "EdDSA",
            "keyCurve": es256 ? "P-256" : "Ed25519",
            "keyValue": Base64URL.encode(key),
            "rpId": passkey.rpID,
            "rpName": passkey.rpID,
            "userHandle": Base64URL.encode(passkey.userHandle),
            "userName": passkey.userName,
            "userDisplayName": passkey.userDisplayName,
            "counter": String(passkey.signCount),
            "discoverable": "true",
            "creationDate": dates.string(from: passkey.created),
        ]
    }

    static func bitwardenCredentialID(_ id: [UInt8]) -> String {
        guard id.count == 16 else { return "b64." + Base64URL.encode(id) }
        let hex = Hex.encode(id)
        let parts = [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { range in
            String(
                hex[
                    hex.index(
                        hex.startIndex,
                        offsetBy: range.lowerBound
                    )..<hex.index(hex.startIndex, offsetBy: range.upperBound)
                ]
            )
        }
        return parts.joined(separator: "-")
    }

    static func bitwardenJSON(
        _ credentials: [Credential],
        history: [CredentialID: [PasswordHistoryEntry]],
        passkeys: [PasskeyCredential] = []
    ) throws(VaultError) -> Data {
        let dates = ISO8601DateFormatter()
        dates.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        var folderIDs: [String: String] = [:]
        for folder in Set(credentials.compactMap(\.folder)).sorted() {
            folderIDs[folder] = UUID().uuidString.lowercased()
        }
        let folders: [[String: Any]] = folderIDs.sorted { $0.key < $1.key }.map { ["id": $0.value, "name": $0.key] }
        // Each passkey goes with its account's login (``PasskeyCredential/belongs(to:)``); the
        // others become logins of their own.
        var unclaimed = passkeys
        var items: [[String: Any]] = credentials.map { credential in
            let entries: [[String: Any]] = (history[credential.id] ?? []).map {
                ["lastUsedDate": dates.string(from: $0.replaced), "password": $0.password]
            }
            let mine = unclaimed.filter { $0.belongs(to: credential) }
            unclaimed.removeAll { passkey in mine.contains(passkey) }
            return [
                "id": credential.id.rawValue,
                "organizationId": NSNull(),
                "folderId": credential.folder.flatMap { folderIDs[$0] } ?? NSNull(),
                "type": 1,
                "reprompt": 0,
                "name": credential.title,
                "notes": credential.notes.isEmpty ? NSNull() : credential.notes,
                "favorite": false,
                "collectionIds": NSNull(),
                "passwordHistory": entries.isEmpty ? NSNull() : entries,
                "revisionDate": dates.string(from: credential.modified),
                "creationDate": dates.string(from: credential.created),
                "deletedDate": NSNull(),
                "login": [
                    "fido2Credentials": mine.compactMap { bitwardenPasskey($0, dates: dates) },
                    "uris": credential.services.map { ["match": NSNull(), "uri": $0.identifier] },
                    "username": credential.user,
                    "password": credential.password ?? NSNull(),
                    "totp": credential.totp ?? NSNull(),
                ] as [String: Any],
            ]
        }
        for passkey in unclaimed {
            guard let entry = bitwardenPasskey(passkey, dates: dates) else { continue }
            items.append([
                "id": UUID().uuidString.lowercased(), "organizationId": NSNull(), "folderId": NSNull(), "type": 1,
                "reprompt": 0, "name": passkey.rpID, "notes": NSNull(), "favorite": false, "collectionIds": NSNull(),
                "passwordHistory": NSNull(), "revisionDate": dates.string(from: passkey.lastUsed ?? passkey.created),
                "creationDate": dates.string(from: passkey.created), "deletedDate": NSNull(),
                "login": [
                    "fido2Credentials": [entry], "uris": [["match": NSNull(), "uri": "https://\(passkey.rpID)"]],
                    "username": passkey.userName, "password": NSNull(), "totp": NSNull(),
                ] as [String: Any],
            ])
        }
        let document: [String: Any] = ["encrypted": false, "folders": folders, "items": items]
        return try serialize(document)
    }

    // MARK: KeePass 2 XML

    /// Folders become nested groups under a root group; each passkey is an entry of its own with
    /// KeePassXC's `KPEX_PASSKEY_*` attributes (the key as a PKCS#8 PEM), as KeePassXC stores them.
    static func keepassXML(_ credentials: [Credential], passkeys: [PasskeyCredential], now: Date) -> Data {
        let dates = ISO8601DateFormatter()
        final class Group {
            var entries: [String] = []
            var children: [String: Group] = [:]
        }
        func uuid() -> String { withUnsafeBytes(of: UUID().uuid) { Data($0).base64EncodedString() } }
        // XML reads "\r\n" as "\n": a carriage return is written as a character reference.
        func escape(_ text: String) -> String { HTML.escape(text).replacingOccurrences(of: "\r", with: "&#13;") }
        func string(_ key: String, _ value: String, protected: Bool = false) -> String {
            "<String><Key>\(escape(key))</Key><Value\(protected ? " ProtectInMemory=\"True\"" : "")>\(escape(value))</Value></String>"
        }
        func entry(created: Date, modified: Date, _ fields: [String]) -> String {
            "<Entry><UUID>\(uuid())</UUID><Times><CreationTime>\(dates.string(from: created))</CreationTime>"
                + "<LastModificationTime>\(dates.string(from: modified))</LastModificationTime></Times>"
                + fields.joined() + "</Entry>"
        }
        let root = Group()
        for credential in credentials {
            var group = root
            for name in (credential.folder ?? "").split(separator: "/").map(String.init) where !name.isEmpty {
                if group.children[name] == nil { group.children[name] = Group() }
                group = group.children[name]!
            }
            let services = credential.services.map(\.identifier)
            var fields = [
                string("Title", credential.title), string("UserName", credential.user),
                string("Password", credential.password ?? "", protected: true), string("URL", services.first ?? ""),
                string("Notes", credential.notes),
            ]
            if let totp = credential.totp, !totp.isEmpty { fields.append(string("otp", totp, protected: true)) }
            // Further sites, as KeePassXC's additional-URL attributes.
            for (index, other) in services.dropFirst().enumerated() {
                fields.append(string(index == 0 ? "KP2A_URL" : "KP2A_URL_\(index)", other))
            }
            group.entries.append(entry(created: credential.created, modified: credential.modified, fields))
        }
        for passkey in passkeys {
            guard let key = try? passkey.pkcs8() else { continue }
            root.entries.append(
                entry(
                    created: passkey.created,
                    modified: passkey.lastUsed ?? passkey.created,
                    [
                        string("Title", passkey.rpID), string("UserName", passkey.userName),
                        string("Password", "", protected: true), string("URL", "https://\(passkey.rpID)"),
                        string("Notes", ""),
                        string("KPEX_PASSKEY_CREDENTIAL_ID", Base64URL.encode(passkey.credentialID)),
                        string(
                            "KPEX_PASSKEY_PRIVATE_KEY_PEM",
                            PEMText.encode(key, label: "PRIVATE KEY"),
                            protected: true
                        ),
                        string("KPEX_PASSKEY_RELYING_PARTY", passkey.rpID),
                        string("KPEX_PASSKEY_USERNAME", passkey.userName),
                        string("KPEX_PASSKEY_USER_HANDLE", Base64URL.encode(passkey.userHandle)),
                        string("KPEX_PASSKEY_FLAG_BE", passkey.backupEligible ? "1" : "0"),
                        string("KPEX_PASSKEY_FLAG_BS", passkey.backedUp ? "1" : "0"),
                    ]
                )
            )
        }
        func render(_ group: Group, name: String) -> String {
            "<Group><UUID>\(uuid())</UUID><Name>\(escape(name))</Name>" + group.entries.joined()
                + group.children.sorted { $0.key < $1.key }.map { render($0.value, name: $0.key) }.joined()
                + "</Group>"
        }
        let document =
            "<?xml version=\"1.0\" encoding=\"utf-8\" standalone=\"yes\"?>\n<KeePassFile><Meta><Generator>Keyhaven</Generator>"
            + "<DatabaseName>Keyhaven export \(dates.string(from: now))</DatabaseName></Meta><Root>"
            + render(root, name: "Keyhaven") + "</Root></KeePassFile>\n"
        return Data(document.utf8)
    }

    // MARK: CXF 1.0

    static func base64URL(_ data: Data) -> String { Base64URL.encode(data) }

    static func uuidBytes(_ id: CredentialID) -> Data {
        let uuid = UUID(uuidString: id.rawValue)!.uuid
        return withUnsafeBytes(of: uuid) { Data($0) }
    }

    /// Whether `format` exports passkeys.
    public static func carriesPasskeys(_ format: ExportFormat) -> Bool { format != .csv }

    static func cxf(
        _ credentials: [Credential],
        passkeys: [PasskeyCredential] = [],
        now: Date
    ) throws(VaultError) -> Data {
        var items: [[String: Any]] = []
        // Each passkey is an item of its own (CXF's `passkey` credential: the key as PKCS#8).
        for passkey in passkeys {
            guard let key = try? passkey.pkcs8() else { continue }
            let passkeyCredential: [String: Any] = [
                "type": "passkey", "credentialId": Base64URL.encode(passkey.credentialID), "rpId": passkey.rpID,
                "username": passkey.userName, "userDisplayName": passkey.userDisplayName,
                "userHandle": Base64URL.encode(passkey.userHandle), "key": Base64URL.encode(key),
                "fido2Extensions": [String: Any](),
            ]
            items.append([
                "id": Base64URL.encode(passkey.credentialID),
                "creationAt": Int(passkey.created.timeIntervalSince1970),
                "modifiedAt": Int((passkey.lastUsed ?? passkey.created).timeIntervalSince1970),
                "title": passkey.rpID,
                "scope": ["urls": ["https://\(passkey.rpID)"], "androidApps": [[String: Any]]()],
                "credentials": [passkeyCredential],
            ])
        }
        // Folders become collections (nested by path).
        var collectionItems: [String: [String]] = [:]
        for credential in credentials {
            let itemID = base64URL(uuidBytes(credential.id))
            var basic: [String: Any] = [
                "type": "basic-auth",
                "username": ["fieldType": "string", "value": credential.user],
            ]
            if let password = credential.password {
                basic["password"] = ["fieldType": "concealed-string", "value": password]
            }
            var creds: [[String: Any]] = [basic]
            if let totp = credential.totp, !totp.isEmpty {
                if totp.lowercased().hasPrefix("otpauth://") {
                    // Keep URIs verbatim: a note of the item would lose it; CXF's totp needs fields.
                    let parsed = URLComponents(string: totp)
                    let query = Dictionary(
                        (parsed?.queryItems ?? []).map { ($0.name.lowercased(), $0.value ?? "") },
                        uniquingKeysWith: { a, _ in a }
                    )
                    var entry: [String: Any] = [
                        "type": "totp", "secret": query["secret"] ?? "",
                        "period": Int(query["period"] ?? "") ?? 30, "digits": Int(query["digits"] ?? "") ?? 6,
                        "algorithm": (query["algorithm"] ?? "sha1").lowercased(),
                    ]
                    if let issuer = query["issuer"] { entry["issuer"] = issuer }
                    entry["x-keyhaven-otpauth"] = totp
                    creds.append(entry)
                } else {
                    creds.append(["type": "totp", "secret": totp, "period": 30, "digits": 6, "algorithm": "sha1"])
                }
            }
            if !credential.notes.isEmpty {
                creds.append(["type": "note", "content": ["fieldType": "string", "value": credential.notes]])
            }
            var urls: [String] = []
            var apps: [[String: Any]] = []
            // CXF lists a credential's URLs and its Android apps apart, and Keyhaven reads the apps
            // after the URLs. An app goes into `androidApps` when that keeps the order (it comes
            // after every URL) and it is its package alone; otherwise it stays in `urls` as the
            // `androidapp://` identifier it is, so the export re-imports exactly (found by FuzzImport).
            let lastURL = credential.services.lastIndex { $0.androidPackage == nil } ?? -1
            for (position, service) in credential.services.enumerated() {
                if let package = service.androidPackage, service.identifier == "androidapp://\(package)",
                    position > lastURL
                {
                    apps.append(["bundleId": package])
                } else {
                    urls.append(service.identifier)
                }
            }
            items.append([
                "id": itemID,
                "creationAt": Int(credential.created.timeIntervalSince1970),
                "modifiedAt": Int(credential.modified.timeIntervalSince1970),
                "title": credential.title,
                "scope": ["urls": urls, "androidApps": apps],
                "credentials": creds,
            ])
            if let folder = credential.folder {
                collectionItems[folder, default: []].append(itemID)
            }
        }
        let collections = collectionTree(collectionItems)
        let document: [String: Any] = [
            "version": ["major": 1, "minor": 0],
            "exporterRpId": "keyhaven.local",
            "exporterDisplayName": "Keyhaven",
            "timestamp": Int(now.timeIntervalSince1970),
            "accounts": [
                [
                    "id": base64URL(Data("keyhaven-vault".utf8)),
                    "username": "",
                    "email": "",
                    "collections": collections,
                    "items": items,
                ] as [String: Any]
            ],
        ]
        return try serialize(document)
    }

    /// Folder paths (`Work/VPN`) to nested CXF collections.
    static func collectionTree(_ itemsByPath: [String: [String]]) -> [[String: Any]] {
        final class Node {
            var children: [String: Node] = [:]
            var items: [String] = []
        }
        let root = Node()
        for (path, items) in itemsByPath {
            var node = root
            for part in path.split(separator: "/", omittingEmptySubsequences: false).map(String.init) {
                if node.children[part] == nil { node.children[part] = Node() }
                node = node.children[part]!
            }
            node.items += items
        }
        func render(_ node: Node, path: String) -> [[String: Any]] {
            node.children.sorted { $0.key < $1.key }.map { title, child in
                let childPath = path.isEmpty ? title : "\(path)/\(title)"
                var collection: [String: Any] = [
                    "id": base64URL(Data("collection:\(childPath)".utf8).prefix(48)),
                    "title": title,
                    "items": child.items.map { ["item": $0] },
                ]
                let sub = render(child, path: childPath)
                if !sub.isEmpty { collection["subCollections"] = sub }
                return collection
            }
        }
        return render(root, path: "")
    }
}
