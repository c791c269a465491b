public import _KeyhavenSupport

@_exported public import struct _KeyhavenSupport.KeyhavenError

/// Why a passkey operation failed (codes are stable; messages never carry key material). Its
/// description is `code: message`.
public typealias PasskeyError = KeyhavenError<PasskeyErrorDomain>

/// The domain of ``PasskeyError``.
public enum PasskeyErrorDomain: KeyhavenErrorDomain {
    public static var descriptionIncludesCode: Bool { true }
}

extension PasskeyError.Code {
    // Keys and authenticator data (COSEKey, AuthenticatorData).
    /// A COSE key that is malformed or not a valid point.
    public static var invalidKey: Self { Self("invalidKey") }
    /// An algorithm other than ES256 and EdDSA.
    public static var unsupportedAlgorithm: Self { Self("unsupportedAlgorithm") }
    /// Authenticator data that is cut off, or whose flags contradict each other.
    public static var invalidAuthenticatorData: Self { Self("invalidAuthenticatorData") }

    // The relying party (PasskeyRelyingParty).
    /// Not a registration or assertion response of the expected shape.
    public static var invalidResponse: Self { Self("invalidResponse") }
    /// `clientDataJSON` names another type, challenge or origin.
    public static var invalidClientData: Self { Self("invalidClientData") }
    /// An attestation statement that does not verify, or of a format not accepted.
    public static var invalidAttestation: Self { Self("invalidAttestation") }
    /// The assertion's signature does not verify with the stored key.
    public static var invalidSignature: Self { Self("invalidSignature") }
    /// The signature counter went backwards (a cloned authenticator).
    public static var counterRegressed: Self { Self("counterRegressed") }

    // The authenticator (Authenticator).
    /// The page's options are not valid WebAuthn options.
    public static var invalidRequest: Self { Self("invalidRequest") }
    /// The page's origin may not use the relying-party id it names.
    public static var originNotAllowed: Self { Self("originNotAllowed") }
    /// An excluded credential is already stored (the page sees InvalidStateError).
    public static var excluded: Self { Self("excluded") }
    /// The site did not ask for this credential (NotAllowedError).
    public static var notAllowed: Self { Self("notAllowed") }
    /// The request needs the person verified again (an unlock grown old).
    public static var userVerificationRequired: Self { Self("userVerificationRequired") }
}
