import Foundation
import Passkeys
import _KeyhavenSupport

#if canImport(FoundationXML)
import FoundationXML
#endif

/// KeePass 2 XML, as `keepassxc-cli export --format xml` (and KeePassXC's "Export to XML") writes
/// it: groups (their path becomes the folder; the root group and the Recycle Bin are not folders),
/// entries' `String` fields (Title, UserName, Password, URL, Notes, KeePassXC's `otp` URI) — and
/// KeePassXC's passkeys, which are entries with the `KPEX_PASSKEY_*` attributes (credential id and
/// user handle base64url, the key as a PKCS#8 PEM). An entry's `History` is not imported.
extension ImportParser {
    static func parseKeePassXML(_ bytes: [UInt8]) throws(VaultError) -> ParsedImport {
        // KeePass writes UTF-8. Checked first: Foundation's XMLParser traps on some invalid UTF-8
        // (in a comment, found by FuzzImport) instead of reporting an error.
        guard String(validating: bytes, as: UTF8.self) != nil else {
            throw VaultError(.invalidInput, "this KeePass XML file is not valid UTF-8")
        }
        let reader = KeePassXMLReader()
        let parser = XMLParser(data: Data(bytes))
        parser.shouldResolveExternalEntities = false
        parser.delegate = reader
        guard parser.parse(), reader.sawKeePassFile, reader.finished, !reader.malformed else {
            throw VaultError(
                .invalidInput,
                "not a KeePass XML export (line \(parser.lineNumber)); export again with keepassxc-cli export --format xml"
            )
        }
        var result = ParsedImport(format: .keepassXML, items: [], skipped: [], warnings: [])
        let dates = ISO8601DateFormatter()
        for (index, entry) in reader.entries.enumerated() {
            let location = ImportProblem.Location(index: index)
            let field = { (name: String) in entry.strings[name] ?? "" }
            if entry.groups.dropFirst().first == "Recycle Bin" {
                result.skipped.append(
                    ImportProblem(
                        location: location,
                        reason: "recycle-bin",
                        detail: "entry in the Recycle Bin (\(field("Title")))"
                    )
                )
                continue
            }
            let created = entry.created.flatMap { dates.date(from: $0) }
            var hasPasskey = false
            if entry.strings["KPEX_PASSKEY_PRIVATE_KEY_PEM"] != nil {
                if let passkey = keePassPasskey(entry.strings, created: created) {
                    result.passkeys.append(passkey)
                    hasPasskey = true
                } else {
                    result.warnings.append(
                        ImportProblem(
                            location: location,
                            reason: "credential-not-imported",
                            detail:
                                "a passkey without a site, ids or an ES256/Ed25519 key Keyhaven can read (\(field("Title")))"
                        )
                    )
                }
            }
            // A KeePassXC passkey entry has no password: the passkey is all of it.
            if field("Password").isEmpty && (hasPasskey || (field("UserName").isEmpty && field("URL").isEmpty)) {
                if !hasPasskey {
                    result.skipped.append(
                        ImportProblem(
                            location: location,
                            reason: "no-login-data",
                            detail: "entry has no username, password or URL (\(field("Title")))"
                        )
                    )
                }
                continue
            }
            let folder = entry.groups.dropFirst().joined(separator: "/")
            let totp = entry.strings["otp"].flatMap { $0.isEmpty ? nil : $0 }
            result.items.append(
                .init(
                    content: CredentialContent(
                        title: field("Title"),
                        services: services(
                            [field("URL")]
                                + entry.strings.filter { $0.key.hasPrefix("KP2A_URL") }
                                .sorted { Int($0.key.dropFirst(9)) ?? 0 < Int($1.key.dropFirst(9)) ?? 0 }.map(\.value)
                        ),
                        user: field("UserName"),
                        password: field("Password").isEmpty ? nil : field("Password"),
                        notes: field("Notes"),
                        totp: totp,
                        folder: folder.isEmpty ? nil : folder
                    ),
                    history: [],
                    location: location
                )
            )
        }
        return result
    }

    /// KeePassXC's passkey attributes as a passkey; nil when unreadable.
    static func keePassPasskey(_ strings: [String: String], created: Date?) -> PasskeyCredential? {
        let user = strings["KPEX_PASSKEY_USERNAME"] ?? strings["UserName"] ?? ""
        let flag = { (name: String) in strings[name].map { $0 != "0" && $0.lowercased() != "false" } ?? true }
        return importedPasskey(
            rpID: strings["KPEX_PASSKEY_RELYING_PARTY"],
            credentialID: strings["KPEX_PASSKEY_CREDENTIAL_ID"].flatMap { Base64URL.decode($0) },
            pkcs8: strings["KPEX_PASSKEY_PRIVATE_KEY_PEM"].flatMap { PEMText.decode($0, label: "PRIVATE KEY") },
            userHandle: strings["KPEX_PASSKEY_USER_HANDLE"].flatMap { Base64URL.decode($0) } ?? [],
            userName: user,
            userDisplayName: user,
            backupEligible: flag("KPEX_PASSKEY_FLAG_BE"),
            backedUp: flag("KPEX_PASSKEY_FLAG_BS"),
            created: created
        )
    }
}

/// PEM text: the base64 between `-----BEGIN label-----` and `-----END label-----`.
enum PEMText {
    static func decode(_ text: String, label: String) -> [UInt8]? {
        guard let begin = text.range(of: "-----BEGIN \(label)-----"),
            let end = text.range(of: "-----END \(label)-----", range: begin.upperBound..<text.endIndex)
        else { return nil }
        let body = text[begin.upperBound..<end.lowerBound].filter { !$0.isWhitespace }
        return Data(base64Encoded: String(body)).map(Array.init)
    }

    static func encode(_ bytes: [UInt8], label: String) -> String {
        let body = Data(bytes).base64EncodedString()
        var lines: [Substring] = []
        var rest = Substring(body)
        while !rest.isEmpty {
            lines.append(rest.prefix(64))
            rest = rest.dropFirst(64)
        }
        return "-----BEGIN \(label)-----\n" + lines.joined(separator: "\n") + "\n-----END \(label)-----"
    }
}

/// Collects a KeePass XML document's entries (outside `History`) with their group path.
final class KeePassXMLReader: NSObject, XMLParserDelegate {
    struct Entry {
        var strings: [String: String] = [:]
        var groups: [String]
        var created: String?
    }

    private(set) var entries: [Entry] = []
    private(set) var sawKeePassFile = false
    /// The document's end was read (a cut-off file is refused, not imported in part).
    private(set) var finished = false
    /// The parser reported an error (it may recover and go on; the file is refused all the same).
    private(set) var malformed = false

    func parser(_ parser: XMLParser, parseErrorOccurred parseError: any Error) { malformed = true }
    private var path: [String] = []
    private var groups: [String] = []
    private var current: Entry?
    private var historyDepth = 0
    private var key: String?
    private var value: String?
    private var text = ""

    func parser(
        _ parser: XMLParser,
        didStartElement name: String,
        namespaceURI: String?,
        qualifiedName: String?,
        attributes: [String: String] = [:]
    ) {
        if path.isEmpty { sawKeePassFile = name == "KeePassFile" }
        path.append(name)
        text = ""
        switch name {
        case "Group": groups.append("")
        case "History": historyDepth += 1
        case "Entry" where historyDepth == 0: current = Entry(groups: groups)
        case "String" where current != nil && historyDepth == 0:
            key = nil
            value = nil
        default: break
        }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) { text += string }

    func parser(
        _ parser: XMLParser,
        didEndElement name: String,
        namespaceURI: String?,
        qualifiedName: String?
    ) {
        defer {
            path.removeLast()
            text = ""
        }
        let parent = path.dropLast().last
        switch name {
        case "Name" where parent == "Group" && current == nil:
            if !groups.isEmpty { groups[groups.count - 1] = text }
        case "Group":
            if !groups.isEmpty { groups.removeLast() }
        case "History":
            historyDepth -= 1
        case "Key" where parent == "String" && historyDepth == 0:
            key = text
        case "Value" where parent == "String" && historyDepth == 0:
            value = text
        case "String" where historyDepth == 0:
            if let key, current != nil { current?.strings[key] = value ?? "" }
        case "CreationTime" where historyDepth == 0 && Array(path.dropLast().suffix(2)) == ["Entry", "Times"]:
            current?.created = text
        case "Entry" where historyDepth == 0:
            if let current { entries.append(current) }
            current = nil
        case "KeePassFile" where path.count == 1:
            finished = true
        default:
            break
        }
    }
}
