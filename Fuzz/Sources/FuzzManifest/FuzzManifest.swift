import AccountModification
import Foundation
import _KeyhavenSupport

/// One fuzz input: the body of `GET /.well-known/account-modification`, decoded as Keyhaven decodes
/// it and resolved for each of a few origins (https, loopback http, plain http off loopback, an
/// IPv6 literal with a port), as ``HTTPManifestReader`` does before anything is posted to it.
///
/// Beyond "no crash": a manifest that decodes re-encodes to one that decodes equal; a resolved
/// manifest's endpoint is an absolute URL on exactly the origin it was published by, and only ever
/// for an https or loopback origin (passwords are posted there); resolving is idempotent and
/// changes nothing but the endpoint.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let body = Data(UnsafeRawBufferPointer(start: start, count: count))
    guard let manifest = try? JSONDecoder().decode(AccountModificationManifest.self, from: body) else { return 0 }
    guard let encoded = try? JSONEncoder().encode(manifest),
        (try? JSONDecoder().decode(AccountModificationManifest.self, from: encoded)) == manifest
    else { fatalError("a manifest does not survive encoding") }

    for origin in origins {
        guard let resolved = try? manifest.resolved(for: origin) else { continue }
        guard origin.isPotentiallyTrustworthy else { fatalError("resolved for plain http \(origin)") }
        guard ServiceOrigin.of(url: resolved.endpoint) == origin, origin.isSameOrigin(as: resolved.endpoint) else {
            fatalError("endpoint \(resolved.endpoint.debugDescription) is not on \(origin)")
        }
        guard (try? resolved.resolved(for: origin)) == resolved else { fatalError("resolving is not idempotent") }
        var same = resolved
        same.endpoint = manifest.endpoint
        guard same == manifest else { fatalError("resolving changed more than the endpoint") }
        for other in origins where other != origin && (try? manifest.resolved(for: other)) != nil {
            // The same relative endpoint may resolve on several origins; an absolute one on one only.
            guard manifest.endpoint.hasPrefix("/") else {
                fatalError(
                    "absolute endpoint \(manifest.endpoint.debugDescription) resolved for \(origin) and \(other)"
                )
            }
        }
    }
    return 0
}

let origins = [
    ServiceOrigin("https://shiny.example")!, ServiceOrigin("https://shiny.example:8443")!,
    ServiceOrigin("http://127.0.0.1:8080")!, ServiceOrigin("http://shiny.example")!,
    ServiceOrigin("http://[::1]:9000")!, ServiceOrigin("https://xn--bcher-kva.example")!,
]

/// No generated seeds: scripts/fuzz.sh writes manifests.
func seeds() -> [[UInt8]] { [] }
