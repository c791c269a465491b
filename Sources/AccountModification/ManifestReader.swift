public import _KeyhavenSupport

/// Reads a service's account-modification manifest (`GET {origin}/.well-known/account-modification`).
/// The one reader both the audit (“one-tap upgrade available”) and `keyhaven upgrade` use, so they
/// can never disagree about what a service offers. Implemented over HTTP in `KeyhavenHTTP`
/// (redirects followed only within the origin); tests may script it.
public protocol ManifestReader: Sendable {
    /// The manifest of `origin`, validated by ``AccountModificationManifest/resolved(for:)``.
    func manifest(for origin: ServiceOrigin) async throws(ManifestError) -> AccountModificationManifest
}

extension ManifestReader {
    /// The manifest of the service a person named (`example.com`, a URL): see
    /// ``ServiceOrigin/init(service:)``.
    public func manifest(forService service: String) async throws(ManifestError) -> AccountModificationManifest {
        guard let origin = ServiceOrigin(service: service) else {
            throw ManifestError(.notAService, "\(service) is not a domain or an https URL")
        }
        return try await manifest(for: origin)
    }
}

/// Why a manifest could not be read. The message is for the person and never carries a secret.
public typealias ManifestError = KeyhavenError<ManifestErrorDomain>

/// The domain of ``ManifestError``.
public enum ManifestErrorDomain: KeyhavenErrorDomain {}

extension ManifestError.Code {
    /// The service is not a web origin Keyhaven may contact.
    public static var notAService: Self { Self("notAService") }
    /// The service publishes no manifest (an HTTP status other than 200).
    public static var notPublished: Self { Self("notPublished") }
    /// The manifest is not valid JSON of the expected shape.
    public static var malformed: Self { Self("malformed") }
    /// The manifest points outside the service's origin, or to plain http off loopback.
    public static var crossOrigin: Self { Self("crossOrigin") }
    /// The service could not be reached.
    public static var unreachable: Self { Self("unreachable") }
}

extension AccountModificationManifest {
    /// The manifest as published by `origin`, with its endpoint made absolute and checked: the
    /// protocol endpoint must be on the service's own origin (passwords are posted there), and that
    /// origin must be https or loopback.
    public func resolved(for origin: ServiceOrigin) throws(ManifestError) -> AccountModificationManifest {
        guard origin.isPotentiallyTrustworthy else {
            throw ManifestError(.crossOrigin, "\(origin) is plain http; upgrades need https")
        }
        guard let endpoint = origin.resolveSameOrigin(endpoint) else {
            throw ManifestError(
                .crossOrigin,
                "\(origin)'s account-modification manifest points to another origin (\(endpoint)); refused"
            )
        }
        var resolved = self
        resolved.endpoint = endpoint
        return resolved
    }
}
