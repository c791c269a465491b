public import AccountModification
import Foundation
public import KeyhavenApp

/// Upgrades over HTTP: manifests from `/.well-known/account-modification`, the protocol with
/// AsyncHTTPClient.
public struct HTTPUpgradeEnvironment: UpgradeEnvironment {
    public var requestTimeout: Duration
    public var manifests: any ManifestReader

    public init(requestTimeout: Duration = .seconds(30), manifests: any ManifestReader = HTTPManifestReader()) {
        self.requestTimeout = requestTimeout
        self.manifests = manifests
    }

    public func manifest(for service: String) async throws -> AccountModificationManifest {
        try await manifests.manifest(forService: service)
    }

    public func transport(endpoint: String) -> any ModificationTransport {
        HTTPModificationTransport(endpoint: endpoint, timeout: requestTimeout)
    }

}
