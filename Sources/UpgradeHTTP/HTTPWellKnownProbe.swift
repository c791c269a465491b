public import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
public import SecurityRecommendations
public import _KeyhavenHTTPSupport

/// GETs for change-password discovery and manifests: redirects followed by hand (at most 5, to
/// learn the final URL), 5-second timeout, at most 64 KiB of body, no cookies, fails fast when a site
/// cannot be reached.
public struct HTTPWellKnownProbe: WellKnownProbe {
    public let client: HTTPClient
    /// How long one request may take.
    let timeout: Duration

    public init(client: HTTPClient = OutboundHTTP.shared, timeout: Duration = .seconds(5)) {
        self.client = client
        self.timeout = timeout
    }

    public func get(_ url: String) async -> ProbeResponse? {
        var current = url
        for _ in 0...5 {
            var request = HTTPClientRequest(url: current)
            request.headers.add(name: "User-Agent", value: "Keyhaven")
            request.headers.add(name: "Cache-Control", value: "no-store")
            guard let response = try? await client.execute(request, timeout: TimeAmount(timeout)) else { return nil }
            let status = Int(response.status.code)
            if [301, 302, 303, 307, 308].contains(status), let location = response.headers.first(name: "Location"),
                let next = URL(string: location, relativeTo: URL(string: current))?.absoluteURL.absoluteString
            {
                current = next
                continue
            }
            let body = (try? await response.body.collect(upTo: 64 << 10)).map { Array(buffer: $0) } ?? []
            return ProbeResponse(status: status, finalURL: current, body: body)
        }
        return nil
    }
}
