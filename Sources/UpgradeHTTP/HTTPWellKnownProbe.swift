public import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
public import SecurityRecommendations
public import _KeyhavenHTTPSupport
import _KeyhavenSupport

/// GETs for change-password discovery: redirects followed by hand (at most 5, to learn the final
/// URL) but only to `https` pages of the same site (security review Low #14), 5 seconds for the
/// whole chain and the body (one deadline), at most 64 KiB of body, no cookies, fails fast when a
/// site cannot be reached; a body that does not arrive in time is no answer (nil), never an empty
/// page.
///
/// "Same site" is the registrable domain (eTLD+1): `example.com` → `www.example.com` or
/// `accounts.example.com` is followed — that is how most sites publish their change-password page —
/// while another site, a private address, plain `http` (except on loopback, for tests and local
/// services) and `http+unix://` sockets are not contacted; the probe then answers with the redirect
/// it stopped at, which discovery does not take as a change-password page. Manifests are stricter
/// still (same origin, ``HTTPManifestReader``): they say where passwords are sent.
public struct HTTPWellKnownProbe: WellKnownProbe {
    public let client: HTTPClient
    /// How long a probe may take: every redirect and the final body.
    let timeout: Duration

    public init(client: HTTPClient = OutboundHTTP.shared, timeout: Duration = .seconds(5)) {
        self.client = client
        self.timeout = timeout
    }

    public func get(_ url: String) async -> ProbeResponse? {
        guard let start = ServiceOrigin.of(url: url), start.isPotentiallyTrustworthy else { return nil }
        var current = url
        let deadline = NIODeadline.now() + TimeAmount(timeout)
        for _ in 0...5 {
            var request = HTTPClientRequest(url: current)
            request.headers.add(name: "User-Agent", value: "Keyhaven")
            request.headers.add(name: "Cache-Control", value: "no-store")
            guard let response = try? await client.execute(request, deadline: deadline) else { return nil }
            let status = Int(response.status.code)
            if [301, 302, 303, 307, 308].contains(status) {
                guard let location = response.headers.first(name: "Location"),
                    let next = URL(string: location, relativeTo: URL(string: current))?.absoluteURL.absoluteString,
                    Self.mayFollow(from: start, to: next)
                else {
                    return ProbeResponse(status: status, finalURL: current)
                }
                current = next
                continue
            }
            do {
                let body = try await response.body.collect(upTo: 64 << 10, deadline: deadline)
                return ProbeResponse(status: status, finalURL: current, body: Array(buffer: body))
            } catch is NIOTooManyBytesError {
                // A page larger than discovery reads: its status and URL still say what it is.
                return ProbeResponse(status: status, finalURL: current)
            } catch {
                // Timed out, cut off or cancelled: not the page (an empty 200 would read as one).
                return nil
            }
        }
        return nil
    }

    /// Whether a probe that started at `start` may follow a redirect to `url`: an `https` URL (or
    /// `http` on loopback) on the same host, or on another host of the same registrable domain.
    static func mayFollow(from start: ServiceOrigin, to url: String) -> Bool {
        guard let target = ServiceOrigin.of(url: url), target.isPotentiallyTrustworthy else { return false }
        if target.host == start.host { return true }
        guard let site = start.registrableDomain else { return false }
        return target.registrableDomain == site
    }
}
