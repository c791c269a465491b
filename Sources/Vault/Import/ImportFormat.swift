import Foundation
public import Passkeys

/// The export formats Keyhaven reads. See docs/import-formats.md for each one's shape.
public enum ImportFormat: String, Sendable, Codable, CaseIterable {
    case chromeCSV = "chrome-csv"
    case firefoxCSV = "firefox-csv"
    case appleCSV = "apple-passwords-csv"
    case bitwardenCSV = "bitwarden-csv"
    case bitwardenJSON = "bitwarden-json"
    case onePasswordCSV = "1password8-csv"
    case keepassxcCSV = "keepassxc-csv"
    case lastpassCSV = "lastpass-csv"
    case cxf = "cxf-1.0-json"
    case keyhavenCSV = "keyhaven-csv"
    /// KeePass 2 XML (`keepassxc-cli export --format xml`), with KeePassXC's passkeys.
    case keepassXML = "keepass-xml"

    /// Accepts the format ids and the usual names (`chrome`, `edge`, `safari`, `1password`, …).
    public init?(name: String) {
        let key = name.lowercased()
        if let format = ImportFormat(rawValue: key) {
            self = format
            return
        }
        switch key {
        case "chrome", "edge", "chromium", "brave", "opera", "vivaldi": self = .chromeCSV
        case "firefox": self = .firefoxCSV
        case "safari", "apple", "apple-passwords", "icloud": self = .appleCSV
        case "bitwarden": self = .bitwardenCSV
        case "1password", "onepassword", "1password-csv": self = .onePasswordCSV
        case "keepassxc", "keepass": self = .keepassxcCSV
        case "lastpass": self = .lastpassCSV
        case "cxf", "fido-cxf", "credential-exchange": self = .cxf
        case "keyhaven", "csv": self = .keyhavenCSV
        case "keepassxc-xml", "keepass2-xml", "xml": self = .keepassXML
        default: return nil
        }
    }

    /// Recognises a file from its first bytes (JSON keys or the CSV header).
    public static func detect(_ bytes: [UInt8]) -> ImportFormat? {
        var start = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        while start < bytes.count && [0x20, 0x09, 0x0A, 0x0D].contains(bytes[start]) {
            start += 1
        }
        guard start < bytes.count else { return nil }
        if bytes[start] == UInt8(ascii: "<") {
            let head = String(decoding: bytes.prefix(4096), as: UTF8.self)
            return head.contains("<KeePassFile") ? .keepassXML : nil
        }
        if bytes[start] == UInt8(ascii: "{") {
            let head = String(decoding: bytes.prefix(4096), as: UTF8.self)
            if head.contains("\"exporterRpId\"") || head.contains("\"accounts\"") { return .cxf }
            if head.contains("\"encrypted\"") || head.contains("\"items\"") { return .bitwardenJSON }
            return nil
        }
        guard let header = CSVReader.records(Array(bytes.prefix(8192))).first?.fields else { return nil }
        return detect(header: header)
    }

    static func detect(header: [String]) -> ImportFormat? {
        let names = header.map { $0.trimmingCharacters(in: .whitespaces) }
        let set = Set(names)
        let lower = Set(names.map { $0.lowercased() })
        if names.first == "Group" && set.isSuperset(of: ["Title", "Username", "Password", "URL", "Notes"]) {
            return .keepassxcCSV
        }
        if set.isSuperset(of: ["httpRealm", "formActionOrigin", "guid"]) { return .firefoxCSV }
        if set.isSuperset(of: ["login_uri", "login_username", "login_password", "type"]) { return .bitwardenCSV }
        if set.isSuperset(of: ["extra", "grouping", "url", "username", "password", "name"]) { return .lastpassCSV }
        if set.isSuperset(of: ["Title", "Url", "OTPAuth"]) && !set.isDisjoint(with: ["Favorite", "Archived", "Tags"]) {
            return .onePasswordCSV
        }
        if names == ["Title", "URL", "Username", "Password", "Notes", "OTPAuth"]
            || names == ["Title", "URL", "Username", "Password", "OTPAuth"]
            || names == ["Title", "URL", "Username", "Password", "Notes"]
        {
            return .appleCSV
        }
        if names.count >= 5, Array(names.prefix(5)) == ["name", "url", "username", "password", "note"],
            lower.isSuperset(of: ["totp", "folder"])
        {
            return .keyhavenCSV
        }
        if names == ["name", "url", "username", "password", "note"] || names == ["name", "url", "username", "password"]
        {
            return .chromeCSV
        }
        return nil
    }
}

/// What an import read from a file, before it touches a vault.
public struct ParsedImport: Hashable, Sendable, Codable {
    public var format: ImportFormat
    public var items: [Item]
    public var skipped: [ImportProblem]
    public var warnings: [ImportProblem]
    /// Passkeys, when the format carries them (FIDO CXF).
    public var passkeys: [PasskeyCredential] = []

    /// One credential from the file.
    public struct Item: Hashable, Sendable, Codable {
        public var content: CredentialContent
        /// Earlier passwords, when the format carries them (Bitwarden JSON).
        public var history: [PasswordHistoryEntry]
        public var location: ImportProblem.Location
    }
}

/// Something in a file that was not imported, or imported only in part.
public struct ImportProblem: Hashable, Sendable, Codable, CustomStringConvertible {
    /// Where: a 1-based physical line (CSV) or 0-based positions (JSON).
    public struct Location: Hashable, Sendable, Codable {
        public var line: Int?
        public var account: Int?
        public var index: Int?
        public var credential: Int?

        public init(line: Int? = nil, account: Int? = nil, index: Int? = nil, credential: Int? = nil) {
            self.line = line
            self.account = account
            self.index = index
            self.credential = credential
        }
    }

    public var location: Location
    /// A stable code: `secure-note`, `card`, `passkey-only`, `no-login-data`, `too-many-fields`,
    /// `too-few-fields`, `missing-url-and-password`, `bare-quote`, `invalid-utf8`,
    /// `unknown-credential-type`, …
    public var reason: String
    /// In words. Never contains a password.
    public var detail: String

    public var description: String {
        var place: [String] = []
        if let line = location.line { place.append("line \(line)") }
        if let account = location.account { place.append("account \(account)") }
        if let index = location.index { place.append("item \(index)") }
        if let credential = location.credential { place.append("credential \(credential)") }
        return "\(place.joined(separator: ", ")): \(reason): \(detail)"
    }
}
