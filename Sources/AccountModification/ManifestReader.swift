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
public struct ManifestError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, as an opaque code (new codes may be added).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String {
            case notAService, notPublished, malformed, crossOrigin, unreachable
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }
        public var description: String { base.rawValue }

        /// The service is not a web origin Keyhaven may contact.
        public static let notAService = Code(.notAService)
        /// The service publishes no manifest (an HTTP status other than 200).
        public static let notPublished = Code(.notPublished)
        /// The manifest is not valid JSON of the expected shape.
        public static let malformed = Code(.malformed)
        /// The manifest points outside the service's origin, or to plain http off loopback.
        public static let crossOrigin = Code(.crossOrigin)
        /// The service could not be reached.
        public static let unreachable = Code(.unreachable)
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    public static func == (lhs: ManifestError, rhs: ManifestError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
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
