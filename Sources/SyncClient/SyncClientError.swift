public import _KeyhavenSupport

/// Why a call to the sync server failed. Messages say what to do next; they never hold a token,
/// a challenge, a signature or a payload, and what the server said is kept only as printable
/// text of bounded length (a hostile server cannot write to the person's terminal through it).
public typealias SyncClientError = KeyhavenError<SyncClientErrorDomain>

/// The domain of ``SyncClientError``.
public enum SyncClientErrorDomain: KeyhavenErrorDomain {
    /// For ``SyncClientError/Code/busy``: the seconds the server asked to wait (its `Retry-After`,
    /// 1 to 60; ``SyncClientError/retryAfter``).
    public typealias Details = Int

    public static var descriptionIncludesCode: Bool { true }
}

extension SyncClientError.Code {
    /// No connection could be made (refused, no route, the name did not resolve): nothing was sent.
    public static var unreachable: Self { Self("unreachable") }
    /// No answer in time, or the connection broke: the request may have been applied (a push is
    /// safe to send again, it is idempotent).
    public static var noAnswer: Self { Self("noAnswer") }
    /// The device is not (or no longer) enrolled, or its signature was refused: sign in again or
    /// have an enrolled device approve this one.
    public static var unauthorized: Self { Self("unauthorized") }
    /// The server refused a signature as made for another server: its public URL (`--public-url`)
    /// is not the URL this device uses, or a server in between relays this device's sign-in.
    public static var wrongServer: Self { Self("wrongServer") }
    /// The server refused the approval (the approver is not enrolled in the account, or revoked).
    public static var forbidden: Self { Self("forbidden") }
    /// The account or device named does not exist on the server.
    public static var notFound: Self { Self("notFound") }
    /// The key is already enrolled (or was revoked, and can never be enrolled again).
    public static var alreadyEnrolled: Self { Self("alreadyEnrolled") }
    /// The server refused the request as malformed (a bug on one side, or versions that differ).
    public static var invalidRequest: Self { Self("invalidRequest") }
    /// Something that exists once exists already (a join request with this code is pending, or it
    /// was approved already).
    public static var alreadyExists: Self { Self("alreadyExists") }
    /// The item is larger than the server accepts.
    public static var tooLarge: Self { Self("tooLarge") }
    /// The server failed (5xx): retry later.
    public static var serverFailure: Self { Self("serverFailure") }
    /// The answer is not what docs/openapi/sync.yaml says (another program on that address?).
    public static var badAnswer: Self { Self("badAnswer") }
    /// The server URL is not `https://HOST[:PORT][/PATH]` (or `http://` to this machine), or it
    /// holds a user name, a password, a query or a fragment.
    public static var invalidServer: Self { Self("invalidServer") }
    /// The device's cursor is beyond the server's latest change (the server was restored from a
    /// backup): resync from 0 (``VaultSync/SyncReplica/resync()``; ``SyncSession/pull()`` does it).
    public static var cursorAhead: Self { Self("cursorAhead") }
    /// The server has too many long polls waiting: wait ``SyncClientError/retryAfter`` seconds.
    public static var busy: Self { Self("busy") }
    /// The server kept answering one item's push as stale (more merges in one push than a server
    /// that applies compare-and-swap could cause): stopped rather than loop.
    public static var noProgress: Self { Self("noProgress") }
}

extension SyncClientError {
    /// For ``Code/busy``: the seconds the server asked to wait before asking again (1 to 60).
    public var retryAfter: Int? { code == .busy ? details : nil }

    /// `text` as printable ASCII, at most 160 characters: what of a server's words may be shown.
    static func neutralised(_ text: String) -> String {
        let printable = text.unicodeScalars.map { (0x20...0x7E).contains($0.value) ? Character($0) : "?" }
        let capped = String(printable.prefix(160))
        return printable.count > 160 ? capped + "…" : capped
    }
}
