public import AccountModification
import Foundation
public import KeyhavenUpgrade

/// Upgrades over HTTP: manifests from `/.well-known/account-modification`, the protocol with
/// AsyncHTTPClient.
public struct HTTPUpgradeEnvironment: UpgradeEnvironment {
    public var requestTimeout: Duration

    public init(requestTimeout: Duration = .seconds(30)) {
        self.requestTimeout = requestTimeout
    }

    public func manifest(for service: String) async throws -> AccountModificationManifest {
        try await ManifestFetcher.fetch(service: service)
    }

    public func transport(endpoint: String) -> any ModificationTransport {
        HTTPModificationTransport(endpoint: endpoint, timeout: requestTimeout)
    }

    public func isUnknownRequest(_ error: any Error) -> Bool {
        error is UnknownModificationRequest
    }
}
