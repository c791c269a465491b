public import AsyncHTTPClient
import NIOCore

/// The one HTTP client factory for Keyhaven's outgoing calls (breach ranges, service probes,
/// manifests, the account-modification protocol, the provider's device API and notifications).
///
/// Policy, the same everywhere: redirects are never followed by the client — a caller that follows
/// them does so by its own rules (same origin only, for manifests); connections take at most 5
/// seconds and are not retried (a refused connection must be reported as "not delivered"); every
/// request carries its own deadline (`execute(_:timeout:)`). One shared client, so connection pools
/// and event loops are shared too.
public enum OutboundHTTP {
    /// The shared client (lives as long as the process).
    public static let shared: HTTPClient = make()

    /// A client with the policy above (tests make their own with longer connect limits).
    public static func make(connectTimeout: Duration = .seconds(5)) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(connect: .init(connectTimeout))
        configuration.redirectConfiguration = .disallow
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }
}
