import Foundation
import Passkeys

/// Reads password-manager exports into credentials: format detection, CSV dialects, JSON shapes,
/// non-login items skipped and reported, malformed rows reported with their line numbers while every
/// other row is read. Touches no vault; ``Vault/importItems(_:)`` stores the result.
public enum ImportParser {
    /// Parses `bytes`, detecting the format from the header unless `format` is given.
    public static func parse(_ bytes: [UInt8], format: ImportFormat? = nil) throws(VaultError) -> ParsedImport {
        guard let format = format ?? ImportFormat.detect(bytes) else {
            throw VaultError(
                .invalidInput,
                "unrecognised export format; supported: "
                    + ImportFormat.allCases.map(\.rawValue).joined(separator: ", ")
                    + " (use --format to choose one)"
            )
        }
        switch format {
        case .bitwardenJSON: return try parseBitwardenJSON(bytes)
        case .cxf: return try parseCXF(bytes)
        case .keepassXML: return try parseKeePassXML(bytes)
        default: return try parseCSV(bytes, format: format)
        }
    }

    // MARK: CSV

    static func parseCSV(_ bytes: [UInt8], format: ImportFormat) throws(VaultError) -> ParsedImport {
        let records = CSVReader.records(bytes)
        guard let headerRecord = records.first, headerRecord.problem == nil else {
            throw VaultError(.invalidInput, "the file has no readable header line")
        }
        let header = headerRecord.fields.map { $0.trimmingCharacters(in: .whitespaces) }
        var result = ParsedImport(format: format, items: [], skipped: [], warnings: [])
        var columns: [String: Int] = [:]
        for (index, name) in header.enumerated() where columns[name] == nil {
            columns[name] = index
        }
        let required = requiredColumns(format)
        let missing = required.filter { columns[$0] == nil }
        guard missing.isEmpty else {
            throw VaultError(
                .invalidInput,
                "the header lacks the \(format.rawValue) column(s) \(missing.joined(separator: ", "))"
            )
        }

        for record in records.dropFirst() {
            let location = ImportProblem.Location(line: record.line)
            if let problem = record.problem {
                result.skipped.append(
                    ImportProblem(location: location, reason: problem.rawValue, detail: detail(problem))
                )
                continue
            }
            if record.fields.count > header.count {
                result.skipped.append(
                    ImportProblem(
                        location: location,
                        reason: "too-many-fields",
                        detail: "\(record.fields.count) fields, header has \(header.count)"
                    )
                )
                continue
            }
            if record.fields.count < header.count {
                result.skipped.append(
                    ImportProblem(
                        location: location,
                        reason: "too-few-fields",
                        detail: "\(record.fields.count) fields, header has \(header.count)"
                    )
                )
                continue
            }
            let row = Row(fields: record.fields, columns: columns)
            switch mapRow(row, format: format) {
            case .item(let content):
                if content.services.isEmpty && (content.password ?? "").isEmpty {
                    result.skipped.append(
                        ImportProblem(
                            location: location,
                            reason: "missing-url-and-password",
                            detail: "url and password are both empty"
                        )
                    )
                } else {
                    result.items.append(.init(content: content, history: [], location: location))
                }
            case .skip(let reason, let detail):
                result.skipped.append(ImportProblem(location: location, reason: reason, detail: detail))
            }
        }
        return result
    }

    static func detail(_ problem: CSVReader.Problem) -> String {
        switch problem {
        case .bareQuote: return "double quote inside an unquoted field"
        case .textAfterClosingQuote: return "text after the closing quote of a field"
        case .unterminatedQuote: return "a quoted field is never closed; the rest of the file is part of it"
        case .invalidUTF8: return "the row is not valid UTF-8"
        case .tooManyFields: return "the row has more fields than the header line"
        }
    }

    static func requiredColumns(_ format: ImportFormat) -> [String] {
        switch format {
        case .chromeCSV: return ["name", "url", "username", "password"]
        case .keyhavenCSV: return ["name", "url", "username", "password", "note", "totp", "folder"]
        case .firefoxCSV: return ["url", "username", "password"]
        case .appleCSV: return ["Title", "URL", "Username", "Password"]
        case .bitwardenCSV: return ["type", "name", "login_uri", "login_username", "login_password"]
        case .onePasswordCSV: return ["Title", "Url", "Username", "Password"]
        case .keepassxcCSV: return ["Group", "Title", "Username", "Password", "URL"]
        case .lastpassCSV: return ["url", "username", "password", "name"]
        case .bitwardenJSON, .cxf, .keepassXML: return []
        }
    }

    struct Row {
        var fields: [String]
        var columns: [String: Int]
        subscript(_ name: String) -> String {
            guard let index = columns[name], index < fields.count else { return "" }
            return fields[index]
        }
        func optional(_ name: String) -> String? {
            let value = self[name]
            return value.isEmpty ? nil : value
        }
    }

    enum Mapped {
        case item(CredentialContent)
        case skip(reason: String, detail: String)
    }

    /// The services a row names. A URL cannot hold a line break, so a field with line breaks names one
    /// service per line (Keyhaven's own `other_urls` column is written that way): a service with a line
    /// break inside would not survive an export.
    static func services(_ values: [String]) -> [ServiceIdentifier] {
        values.flatMap { $0.split(whereSeparator: \.isNewline) }
            .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
            .filter { !$0.isEmpty }
            .map { ServiceIdentifier(androidAppURL($0)) }
    }

    /// Chrome's `android://<cert-hash>@<package>/` becomes `androidapp://<package>`.
    static func androidAppURL(_ url: String) -> String {
        guard url.lowercased().hasPrefix("android://"), let at = url.lastIndex(of: "@") else { return url }
        let package = url[url.index(after: at)...].split(separator: "/").first.map(String.init) ?? ""
        return package.isEmpty ? url : "androidapp://\(package)"
    }

    /// Where a CSV export keeps a credential's fields: title, URL, user name, password, and the notes
    /// and TOTP columns if it has them.
    struct Columns {
        var title, url, user, password: String
        var notes, totp: String?

        init(
            _ title: String,
            _ url: String,
            _ user: String,
            _ password: String,
            notes: String? = nil,
            totp: String? = nil
        ) {
            (self.title, self.url, self.user, self.password) = (title, url, user, password)
            (self.notes, self.totp) = (notes, totp)
        }

        static let chrome = Columns("name", "url", "username", "password", notes: "note")
        static let keyhaven = Columns("name", "url", "username", "password", notes: "note", totp: "totp")
        static let firefox = Columns("url", "url", "username", "password")
        static let apple = Columns("Title", "URL", "Username", "Password", notes: "Notes", totp: "OTPAuth")
        /// Apple's columns but for the URL's spelling.
        static let onePassword = Columns("Title", "Url", "Username", "Password", notes: "Notes", totp: "OTPAuth")
        static let bitwarden = Columns(
            "name",
            "login_uri",
            "login_username",
            "login_password",
            notes: "notes",
            totp: "login_totp"
        )
        static let keepassxc = Columns("Title", "URL", "Username", "Password", notes: "Notes", totp: "TOTP")
        static let lastpass = Columns("name", "url", "username", "password", notes: "extra", totp: "totp")
    }

    /// The credential a row holds in `columns`; `title`, `urls` and `folder` where the format makes
    /// them of more than one column.
    static func content(
        _ row: Row,
        _ columns: Columns,
        title: String? = nil,
        urls: [String]? = nil,
        folder: String? = nil
    ) -> CredentialContent {
        CredentialContent(
            title: title ?? row[columns.title],
            services: services(urls ?? [row[columns.url]]),
            user: row[columns.user],
            password: row[columns.password],
            notes: columns.notes.map { row[$0] } ?? "",
            totp: columns.totp.flatMap { row.optional($0) },
            folder: folder
        )
    }

    static func mapRow(_ row: Row, format: ImportFormat) -> Mapped {
        switch format {
        case .chromeCSV:
            return .item(content(row, .chrome))
        case .keyhavenCSV:
            let extra = row["other_urls"].split(whereSeparator: \.isNewline).map(String.init)
            return .item(content(row, .keyhaven, urls: [row["url"]] + extra, folder: row.optional("folder")))
        case .firefoxCSV:
            var title = ServiceIdentifier(row["url"]).host ?? row["url"]
            if title.hasPrefix("www.") { title.removeFirst(4) }
            return .item(content(row, .firefox, title: title))
        case .appleCSV:
            return .item(content(row, .apple))
        case .onePasswordCSV:
            return .item(content(row, .onePassword))
        case .bitwardenCSV:
            let type = row["type"].lowercased()
            guard type == "login" else {
                let reason = type == "note" ? "secure-note" : (type == "card" ? "card" : "not-a-login")
                return .skip(reason: reason, detail: "type '\(row["type"])' (\(row["name"]))")
            }
            return .item(
                content(
                    row,
                    .bitwarden,
                    urls: row["login_uri"].components(separatedBy: ","),
                    folder: row.optional("folder") ?? row.optional("collections")
                )
            )
        case .keepassxcCSV:
            let group = row["Group"].split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            if group.count >= 2 && group[1] == "Recycle Bin" {
                return .skip(reason: "recycle-bin", detail: "entry in the Recycle Bin (\(row["Title"]))")
            }
            if row["Username"].isEmpty && row["Password"].isEmpty && row["URL"].isEmpty {
                return .skip(
                    reason: "no-login-data",
                    detail: "entry has no username, password or URL (\(row["Title"]))"
                )
            }
            let folder = group.dropFirst().joined(separator: "/")
            return .item(content(row, .keepassxc, folder: folder.isEmpty ? nil : folder))
        case .lastpassCSV:
            if row["url"].trimmingCharacters(in: .whitespaces) == "http://sn" {
                let isCard = row["extra"].hasPrefix("NoteType:Credit Card")
                return .skip(
                    reason: isCard ? "card" : "secure-note",
                    detail: "url http://sn\(isCard ? ", extra starts NoteType:Credit Card" : "") (\(row["name"]))"
                )
            }
            let grouping = row["grouping"].replacingOccurrences(of: "\\", with: "/")
            return .item(content(row, .lastpass, folder: grouping.isEmpty || grouping == "(none)" ? nil : grouping))
        case .bitwardenJSON, .cxf, .keepassXML:
            preconditionFailure("JSON formats are not CSV")
        }
    }
}

extension ImportParser {
    /// A passkey read from an export, whatever the format named its fields: nil unless it has a
    /// relying party, a credential id and a PKCS#8 key Keyhaven can use (ES256 or Ed25519). The
    /// relying party is lower-cased.
    static func importedPasskey(
        rpID: String?,
        credentialID: [UInt8]?,
        pkcs8: [UInt8]?,
        userHandle: [UInt8],
        userName: String,
        userDisplayName: String,
        signCount: UInt32 = 0,
        backupEligible: Bool = true,
        backedUp: Bool = true,
        created: Date?
    ) -> PasskeyCredential? {
        guard let rpID = rpID?.lowercased(), !rpID.isEmpty, let credentialID, !credentialID.isEmpty,
            let key = pkcs8.flatMap(PasskeyCredential.privateKey(pkcs8:))
        else { return nil }
        return PasskeyCredential(
            rpID: rpID,
            credentialID: credentialID,
            userHandle: userHandle,
            userName: userName,
            userDisplayName: userDisplayName,
            algorithm: key.algorithm,
            privateKey: key.raw,
            signCount: signCount,
            backupEligible: backupEligible,
            backedUp: backedUp,
            created: created ?? Date()
        )
    }
}
