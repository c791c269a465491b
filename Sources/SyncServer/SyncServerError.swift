public import _KeyhavenSupport

@_exported public import struct _KeyhavenSupport.KeyhavenError

/// Why the sync server refused a request. Messages name accounts, devices and items by id only:
/// never a token, a challenge, a signature or a payload.
public typealias SyncServerError = KeyhavenError<SyncServerErrorDomain>

/// The domain of ``SyncServerError``.
public enum SyncServerErrorDomain: KeyhavenErrorDomain {
    public typealias Details = SyncServerErrorDetails
    public static var descriptionIncludesCode: Bool { true }
}

/// What the server's operator needs about a refusal that its caller must not learn; logged by the
/// server, never sent.
public enum SyncServerErrorDetails: Sendable, Hashable {
    /// A ``SyncServerError/Code/wrongServer`` refusal: the origin the device said it signed for
    /// (parsed, so no text of the caller's) and this server's public origin.
    case signedForAnotherServer(signedFor: ServiceOrigin, own: ServiceOrigin)

    /// A line for the server's log (origins only: no signature, challenge or key).
    public var logMessage: String {
        switch self {
        case .signedForAnotherServer(let signedFor, let own):
            "refused a signature made for \(signedFor.serialized), not for this server's public URL "
                + "\(own.serialized): a device uses another URL for this server (start it with --public-url set "
                + "to that URL), or a server between them relays its sign-in"
        }
    }
}

extension SyncServerError.Code {
    /// The request is malformed (a field missing or not in its encoding): fix the client.
    public static var invalidRequest: Self { Self("invalidRequest") }
    /// No valid credential: a missing, unknown, expired or revoked token; a challenge that is
    /// unknown, used, expired or for another device; a signature that does not verify. Ask for a
    /// new challenge and sign it with the device's key.
    public static var unauthorized: Self { Self("unauthorized") }
    /// The device signed for another server (its message names another origin than this server's
    /// public URL): a server relaying this one's challenges, or a server started without the
    /// `--public-url` its devices use. Not retried: check the device's server URL.
    public static var wrongServer: Self { Self("wrongServer") }
    /// The device is known but not allowed to do this (a revoked approver, another account's device).
    public static var forbidden: Self { Self("forbidden") }
    /// The account or device does not exist.
    public static var notFound: Self { Self("notFound") }
    /// The key is already enrolled (a key, once enrolled, is never enrolled again: a revoked
    /// device's key stays revoked). Make a new key pair on the device.
    public static var alreadyEnrolled: Self { Self("alreadyEnrolled") }
    /// Something that exists once exists already: a join request with this lookup is pending, or
    /// it has its grant already.
    public static var alreadyExists: Self { Self("alreadyExists") }
    /// An item's payload (or the request) is larger than the server accepts.
    public static var tooLarge: Self { Self("tooLarge") }
    /// Too many long polls at once (for the device, or for the server): retry after a few seconds.
    public static var busy: Self { Self("busy") }
    /// The cursor is beyond the account's latest sequence (the server was restored from a backup):
    /// resync from 0.
    public static var cursorAhead: Self { Self("cursorAhead") }
    /// The database failed (see the server's log); retry later.
    public static var storage: Self { Self("storage") }
}
