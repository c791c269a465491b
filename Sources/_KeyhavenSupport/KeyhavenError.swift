/// The one shape of Keyhaven's public errors: an opaque code to match on, a message for the person,
/// optional typed details, and where the error was made.
///
/// A module declares only what is its own — a domain (a case-less enum), a type alias and its
/// codes — and the rest is written here once:
///
/// ```swift
/// public enum VaultErrorDomain: KeyhavenErrorDomain {
///     public typealias Details = CredentialID  // the record concerned, if any
/// }
/// public typealias VaultError = KeyhavenError<VaultErrorDomain>
/// extension VaultError.Code {
///     /// The master password does not open the vault.
///     public static var wrongPassword: Self { Self("wrongPassword") }
/// }
///
/// throw VaultError(.wrongPassword, "the master password is wrong")
/// ```
///
/// Why a generic struct, not a protocol each error type adopts (the other design considered): a
/// protocol can give `==`, `hash` and `description` defaults, but every adopter would still write
/// its stored `code`/`message`/location and an `init` taking `#fileID`/`#line` — the ceremony that
/// was copied by hand into fourteen types and then drifted. Here the stored fields, the init and
/// the conformances exist once, and what differs between modules is a type parameter:
/// - **Codes are typed by domain.** `VaultError.Code.wrongPassword` is declared on
///   `KeyhavenError<VaultErrorDomain>.Code` only, so a vault code cannot be thrown as a
///   ``KeyhavenError`` of another domain, and `throws(VaultError)` stays as precise as before.
/// - **Codes are opaque**, as in swift-certificates' `CertificateError.ErrorCode`: a struct over a
///   name with static members, not a public enum, so a new code never breaks a caller's `switch`.
///   Only Keyhaven's own targets can make one (the initializer is `package`).
/// - **Errors compare and hash by code alone**, so a test builds the error it expects without
///   knowing the message or where it was thrown: `#expect(throws: VaultError(.notFound, ""))`.
/// - **Where it was made** (``location``, `#fileID` and `#line`, as swift-certificates'
///   `Error.swift` and NIO's `FileSystemError` carry it): shown by `debugDescription` and
///   `String(reflecting:)`, never in ``description``. `#fileID` is `Module/File.swift`, no path of
///   the machine that built Keyhaven.
/// - **``description`` is what a person reads** (the command line prints it): the message, or
///   `code: message` for a domain that says so (``KeyhavenErrorDomain/descriptionIncludesCode``).
///   Messages never carry a secret (a password, a key, a token): each thrower names records by id
///   and files by path, and that is what its tests check.
/// - **Details** a domain needs (the vault's record, a database's SQLSTATE, whether a request was
///   delivered) are one typed value, ``details``; a domain names them with an extension property
///   (`VaultError.record`). A domain without details leaves them `Never`.
public struct KeyhavenError<Domain: KeyhavenErrorDomain>: Error, Hashable, Sendable, CustomStringConvertible,
    CustomDebugStringConvertible
{
    /// What went wrong, to match on: a name stable across releases (some travel on the wire, e.g.
    /// the AutoFill protocol's `code`). New codes may be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name (`wrongPassword`), what ``description`` says too.
        public let name: String

        /// A code named `name`; a domain declares each of its codes once, as a static member.
        package init(_ name: String) {
            self.name = name
        }

        public var description: String { name }
    }

    public var code: Code
    /// What went wrong and, where there is something to do, what to do about it. Never a secret.
    public var message: String
    /// The domain's details (see ``KeyhavenErrorDomain/Details``), nil when there are none.
    public var details: Domain.Details?
    /// Where the error was made.
    public var location: ErrorLocation

    public init(
        _ code: Code,
        _ message: String,
        details: Domain.Details? = nil,
        file: String = #fileID,
        line: UInt = #line
    ) {
        self.code = code
        self.message = message
        self.details = details
        self.location = ErrorLocation(file, line)
    }

    /// The message, after the code when the domain says so (``KeyhavenErrorDomain/descriptionIncludesCode``).
    public var description: String {
        Domain.descriptionIncludesCode ? "\(code): \(message)" : message
    }

    /// `VaultError.wrongPassword: the master password is wrong (Vault/Vault.swift:120)`.
    public var debugDescription: String {
        "\(Domain.errorName).\(code): \(message) (\(location))"
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}

/// What one family of ``KeyhavenError``s has of its own: its name, its details and how it reads.
/// Adopted by a case-less enum (`enum VaultErrorDomain: KeyhavenErrorDomain {}`).
public protocol KeyhavenErrorDomain: Sendable {
    /// What an error carries besides its code and message (`Never` when nothing).
    associatedtype Details: Sendable = Never
    /// The name `debugDescription` starts with; by default the domain's type name without its
    /// `Domain` suffix (`VaultErrorDomain` → `VaultError`).
    static var errorName: String { get }
    /// Whether ``KeyhavenError/description`` is `code: message` rather than the message alone (for
    /// errors that are quoted inside other messages, where the code is the useful part).
    static var descriptionIncludesCode: Bool { get }
}

extension KeyhavenErrorDomain {
    public static var errorName: String {
        let name = String(describing: Self.self)
        return name.hasSuffix("Domain") ? String(name.dropLast("Domain".count)) : name
    }

    public static var descriptionIncludesCode: Bool { false }
}

/// Where an error was made: `#fileID` (`Module/File.swift`) and `#line`.
public struct ErrorLocation: Hashable, Sendable, CustomStringConvertible {
    public let fileID: String
    public let line: UInt

    /// `#fileID` (`Module/File.swift`) and `#line`.
    public init(_ fileID: String, _ line: UInt) {
        (self.fileID, self.line) = (fileID, line)
    }

    public var description: String { "\(fileID):\(line)" }
}
