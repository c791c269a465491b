import Foundation
import Passkeys
import _KeyhavenSupport

extension ImportParser {
    static func decodeJSON(_ bytes: [UInt8]) throws(VaultError) -> JSONValue {
        var data = Data(bytes)
        if data.starts(with: [0xEF, 0xBB, 0xBF]) { data.removeFirst(3) }
        do {
            return try JSONDecoder().decode(JSONValue.self, from: data)
        } catch {
            throw VaultError(.invalidInput, "the file is not valid JSON")
        }
    }

    // MARK: Bitwarden JSON

    static func parseBitwardenJSON(_ bytes: [UInt8]) throws(VaultError) -> ParsedImport {
        let document = try decodeJSON(bytes)
        if document["encrypted"]?.bool == true || document["passwordProtected"]?.bool == true {
            throw VaultError(
                .invalidInput,
                "this Bitwarden export is encrypted; export again as \"JSON\" (unencrypted) to import it"
            )
        }
        guard let items = document["items"]?.array else {
            throw VaultError(.invalidInput, "a Bitwarden JSON export needs an \"items\" array")
        }
        var folders: [String: String] = [:]
        for folder in document["folders"]?.array ?? [] {
            if let id = folder["id"]?.string, let name = folder["name"]?.string {
                folders[id] = name
            }
        }
        var result = ParsedImport(format: .bitwardenJSON, items: [], skipped: [], warnings: [])
        let dates = ISO8601DateFormatter()
        dates.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        for (index, item) in items.enumerated() {
            let location = ImportProblem.Location(index: index)
            let name = item["name"]?.string ?? ""
            // Any number may stand here (`1e300`, `-0.5`): only an exact integer is a type.
            let type = item["type"]?.integer ?? 0
            guard type == 1, let login = item["login"] else {
                let reasons = [2: "secure-note", 3: "card", 4: "identity", 5: "ssh-key"]
                result.skipped.append(
                    ImportProblem(
                        location: location,
                        reason: reasons[type] ?? "not-a-login",
                        detail: "type \(type) (\(name))"
                    )
                )
                continue
            }
            let uris = (login["uris"]?.array ?? []).compactMap { $0["uri"]?.string }
            let content = CredentialContent(
                title: name,
                services: services(uris),
                user: login["username"]?.string ?? "",
                password: login["password"]?.string,
                notes: item["notes"]?.string ?? "",
                totp: login["totp"]?.string.flatMap { $0.isEmpty ? nil : $0 },
                folder: item["folderId"]?.string.flatMap { folders[$0] }
            )
            let history: [PasswordHistoryEntry] = (item["passwordHistory"]?.array ?? []).compactMap { entry in
                guard let password = entry["password"]?.string else { return nil }
                let date =
                    entry["lastUsedDate"]?.string.flatMap { dates.date(from: $0) } ?? Date(timeIntervalSince1970: 0)
                return PasswordHistoryEntry(password: password, replaced: date)
            }
            result.items.append(.init(content: content, history: history, location: location))
            for (credentialIndex, entry) in (login["fido2Credentials"]?.array ?? []).enumerated() {
                if let passkey = bitwardenPasskey(entry, dates: dates) {
                    result.passkeys.append(passkey)
                } else {
                    result.warnings.append(
                        ImportProblem(
                            location: .init(index: index, credential: credentialIndex),
                            reason: "credential-not-imported",
                            detail: "a passkey without a site, ids or an ES256/Ed25519 key Keyhaven can read"
                        )
                    )
                }
            }
        }
        return result
    }

    /// A Bitwarden `fido2Credentials` entry: `keyValue` is the key as base64url PKCS#8,
    /// `credentialId` a UUID (16 bytes) or `b64.` + base64url, numbers are strings.
    static func bitwardenPasskey(_ entry: JSONValue, dates: ISO8601DateFormatter) -> PasskeyCredential? {
        let counter: UInt32? =
            entry["counter"]?.string.flatMap { UInt32($0) } ?? entry["counter"]?.integer.flatMap { UInt32(exactly: $0) }
        let key: [UInt8]? = entry["keyValue"]?.string.flatMap { text in
            Base64URL.decode(text) ?? Data(base64Encoded: text).map { Array($0) }
        }
        return importedPasskey(
            rpID: entry["rpId"]?.string,
            credentialID: entry["credentialId"]?.string.flatMap(bitwardenCredentialID),
            pkcs8: key,
            userHandle: entry["userHandle"]?.string.flatMap { Base64URL.decode($0) } ?? [],
            userName: entry["userName"]?.string ?? "",
            userDisplayName: entry["userDisplayName"]?.string ?? "",
            signCount: counter ?? 0,
            created: entry["creationDate"]?.string.flatMap { dates.date(from: $0) }
        )
    }

    static func bitwardenCredentialID(_ text: String) -> [UInt8]? {
        if text.hasPrefix("b64.") { return Base64URL.decode(text.dropFirst(4)) }
        if let uuid = UUID(uuidString: text) { return withUnsafeBytes(of: uuid.uuid) { Array($0) } }
        return Base64URL.decode(text)
    }

    // MARK: FIDO CXF 1.0

    static func parseCXF(_ bytes: [UInt8]) throws(VaultError) -> ParsedImport {
        let document = try decodeJSON(bytes)
        guard let major = document["version"]?["major"]?.number else {
            throw VaultError(.invalidInput, "a CXF document needs a \"version\" object")
        }
        guard major == 1 else {
            throw VaultError(
                .invalidInput,
                "CXF version \(Int(exactly: major).map(String.init) ?? "\(major)") is not supported (only 1.x)"
            )
        }
        var result = ParsedImport(format: .cxf, items: [], skipped: [], warnings: [])
        for (accountIndex, account) in (document["accounts"]?.array ?? []).enumerated() {
            let folders = collectionPaths(account["collections"]?.array ?? [], parent: nil)
            for (index, item) in (account["items"]?.array ?? []).enumerated() {
                let location = ImportProblem.Location(account: accountIndex, index: index)
                let title = item["title"]?.string ?? ""
                let credentials = item["credentials"]?.array ?? []
                let types = credentials.map { $0["type"]?.string ?? "" }
                // Passkeys first: an item may hold nothing else.
                let passkeysBefore = result.passkeys.count
                for (credentialIndex, credential) in credentials.enumerated()
                where credential["type"]?.string == "passkey" {
                    if let passkey = cxfPasskey(credential, created: item["creationAt"]?.number) {
                        result.passkeys.append(passkey)
                    } else {
                        result.warnings.append(
                            ImportProblem(
                                location: .init(account: accountIndex, index: index, credential: credentialIndex),
                                reason: "credential-not-imported",
                                detail: "a passkey without a site, ids or an ES256/Ed25519 key Keyhaven can read"
                            )
                        )
                    }
                }
                guard let basic = credentials.first(where: { $0["type"]?.string == "basic-auth" }) else {
                    if result.passkeys.count > passkeysBefore { continue }
                    let (reason, detail) = cxfSkipReason(types, title: title, item: item)
                    result.skipped.append(ImportProblem(location: location, reason: reason, detail: detail))
                    continue
                }
                var notes = ""
                var totp: String?
                for (credentialIndex, credential) in credentials.enumerated() {
                    switch credential["type"]?.string ?? "" {
                    case "basic-auth", "passkey":
                        break
                    case "note":
                        notes = credential["content"]?["value"]?.string ?? ""
                    case "totp":
                        totp = cxfTOTP(credential, title: title)
                        if totp == nil, credential["secret"]?.string?.isEmpty == false {
                            result.warnings.append(
                                ImportProblem(
                                    location: .init(account: accountIndex, index: index, credential: credentialIndex),
                                    reason: "credential-not-imported",
                                    detail:
                                        "the one-time-code parameters are out of range (digits 6–10, period 1–86400 s)"
                                )
                            )
                        }
                    case let type where known.contains(type):
                        result.warnings.append(
                            ImportProblem(
                                location: .init(account: accountIndex, index: index, credential: credentialIndex),
                                reason: "credential-not-imported",
                                detail: "type '\(type)' is not stored by Keyhaven; the item's basic-auth imports"
                            )
                        )
                    case let type:
                        result.warnings.append(
                            ImportProblem(
                                location: .init(account: accountIndex, index: index, credential: credentialIndex),
                                reason: "unknown-credential-type",
                                detail: "type '\(type)' ignored; the item's basic-auth imports"
                            )
                        )
                    }
                }
                let urls = item["scope"]?["urls"]?.array?.compactMap(\.string) ?? []
                let apps = (item["scope"]?["androidApps"]?.array ?? []).compactMap { $0["bundleId"]?.string }
                let content = CredentialContent(
                    title: title,
                    services: services(urls + apps.map { "androidapp://\($0)" }),
                    user: basic["username"]?["value"]?.string ?? "",
                    password: basic["password"]?["value"]?.string,
                    notes: notes,
                    totp: totp,
                    folder: item["id"]?.string.flatMap { folders[$0] }
                )
                result.items.append(.init(content: content, history: [], location: location))
            }
        }
        return result
    }

    /// A CXF `passkey` credential (its key PKCS#8, ES256 or Ed25519); nil when unreadable.
    static func cxfPasskey(_ credential: JSONValue, created: Double?) -> PasskeyCredential? {
        // CXF requires the user handle.
        guard let handle = credential["userHandle"]?.string.flatMap({ Base64URL.decode($0) }) else { return nil }
        return importedPasskey(
            rpID: credential["rpId"]?.string,
            credentialID: credential["credentialId"]?.string.flatMap { Base64URL.decode($0) },
            pkcs8: credential["key"]?.string.flatMap { Base64URL.decode($0) },
            userHandle: handle,
            userName: credential["username"]?.string ?? "",
            userDisplayName: credential["userDisplayName"]?.string ?? "",
            created: created.flatMap { $0.isFinite ? Date(timeIntervalSince1970: $0) : nil }
        )
    }

    /// Credential types of CXF 1.0 that Keyhaven does not store.
    static let known: Set<String> = [
        "credit-card", "address", "api-key", "custom-fields", "drivers-license", "file", "generated-password",
        "identity-document", "item-reference", "passport", "person-name", "ssh-key", "wifi",
    ]

    static func cxfSkipReason(_ types: [String], title: String, item: JSONValue) -> (String, String) {
        if types.contains("passkey") {
            let rpID = item["credentials"]?.array?.first { $0["type"]?.string == "passkey" }?["rpId"]?.string ?? title
            return ("passkey-only", "only a 'passkey' credential (\(rpID)), and it could not be read")
        }
        if types.contains("credit-card") {
            return ("card", "only a 'credit-card' credential (\(title))")
        }
        if types == ["note"] {
            return ("secure-note", "only a 'note' credential (\(title))")
        }
        return ("no-login-data", "no basic-auth credential (\(title))")
    }

    /// A CXF `totp` credential as Keyhaven stores it: the bare base32 secret for the common
    /// parameters (SHA-1, 6 digits, 30 s), otherwise an otpauth URI with them spelled out.
    static func cxfTOTP(_ credential: JSONValue, title: String) -> String? {
        if let original = credential["x-keyhaven-otpauth"]?.string {
            return original  // written by Keyhaven's own export: the URI exactly as stored
        }
        guard let secret = credential["secret"]?.string, !secret.isEmpty else { return nil }
        let algorithm = (credential["algorithm"]?.string ?? "sha1").uppercased()
        // Numbers from the file are checked before use: `1e300` or `-1` is not a digit count.
        guard let digits = credential["digits"].map({ $0.integer }) ?? 6, (6...10).contains(digits),
            let period = credential["period"].map({ $0.integer }) ?? 30, (1...86_400).contains(period)
        else { return nil }
        if algorithm == "SHA1" && digits == 6 && period == 30 {
            return secret
        }
        var components = URLComponents()
        components.scheme = "otpauth"
        components.host = "totp"
        let issuer = credential["issuer"]?.string ?? title
        let user = credential["username"]?.string ?? ""
        components.path = "/" + (user.isEmpty ? issuer : "\(issuer):\(user)")
        components.queryItems = [
            URLQueryItem(name: "secret", value: secret),
            URLQueryItem(name: "issuer", value: issuer),
            URLQueryItem(name: "algorithm", value: algorithm),
            URLQueryItem(name: "digits", value: String(digits)),
            URLQueryItem(name: "period", value: String(period)),
        ]
        return components.string
    }

    /// Item id → `/`-joined collection path.
    static func collectionPaths(_ collections: [JSONValue], parent: String?) -> [String: String] {
        var paths: [String: String] = [:]
        for collection in collections {
            let title = collection["title"]?.string ?? ""
            let path = parent.map { "\($0)/\(title)" } ?? title
            for reference in collection["items"]?.array ?? [] {
                if let item = reference["item"]?.string, paths[item] == nil {
                    paths[item] = path
                }
            }
            for (item, subPath) in collectionPaths(collection["subCollections"]?.array ?? [], parent: path)
            where paths[item] == nil {
                paths[item] = subPath
            }
        }
        return paths
    }
}
