import BreachCheck
import BreachCheckHTTP
import Foundation
import KeyhavenApp
import KeyhavenWebApp
import SecurityRecommendations
import UpgradeHTTP

extension WebApp.Services {
    /// The web app's outside world over HTTP, deciding the breach source as `keyhaven audit` does.
    static func http(environment: [String: String]) -> WebApp.Services {
        WebApp.Services(
            breachSource: { settings, vaultURL in
                func index(_ path: String) throws -> SecurityAudit.BreachSource {
                    .index(try BreachIndex(url: URL(fileURLWithPath: path)))
                }
                func api(_ base: String) -> SecurityAudit.BreachSource {
                    .api(RangeClient(transport: HTTPRangeTransport(base: base), baseDescription: base))
                }
                switch settings.breachSource {
                case .none: return .none(reason: "the breach check is turned off in Settings")
                case .index: return try index(settings.breachIndexPath)
                case .api: return api(settings.breachAPI)
                case .automatic:
                    if let path = environment["KEYHAVEN_BREACH_INDEX"], !path.isEmpty { return try index(path) }
                    let beside = vaultURL.deletingLastPathComponent().appendingPathComponent("pwned.khbi").path
                    if FileManager.default.fileExists(atPath: beside) { return try index(beside) }
                    return api("https://api.pwnedpasswords.com")
                }
            },
            auditNetwork: { settings in
                settings.contactServices ? .init(probe: HTTPWellKnownProbe(), manifests: HTTPManifestReader()) : .none
            },
            upgradeEnvironment: HTTPUpgradeEnvironment()
        )
    }
}
