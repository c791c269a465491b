import Foundation
import _KeyhavenSupport

/// One fuzz input, the first byte choosing what the rest is:
/// - even: what a person, an import file or a service calls a service (`example.com`,
///   `https://Example.COM:8443/login`, `http://[::1]:9000`, an IDN…), parsed as ``ServiceOrigin``
///   and looked up in the Public Suffix List shipped with Keyhaven;
/// - odd: a Public Suffix List's text (as upstream publishes it), then a host looked up in it: the
///   text up to the first NUL is the list, the rest the host.
///
/// Beyond "no crash": an origin's serialisation parses back to the same origin; `init(service:)`
/// is that origin made https unless loopback; the registrable domain is the host or a parent of it,
/// one label longer than its public suffix, which is itself a suffix of the host; the chain of
/// parents that credentials are shared along runs from the host to the registrable domain and never
/// past it; relative references resolve onto the origin, absolute ones only when same-origin.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: start, count: count)
    guard let mode = bytes.first else { return 0 }
    let rest = bytes.dropFirst()
    if mode & 1 == 0 {
        fuzzOrigin(String(decoding: rest, as: UTF8.self))
    } else {
        let split = rest.firstIndex(of: 0) ?? rest.endIndex
        let list = PublicSuffixList(listText: String(decoding: rest[..<split], as: UTF8.self))
        let host = String(decoding: rest[split...].dropFirst(), as: UTF8.self)
        checkSuffixes(list, host)
    }
    return 0
}

func fuzzOrigin(_ text: String) {
    checkSuffixes(.shipped, text)
    _ = ServiceOrigin.of(url: text)
    guard let origin = ServiceOrigin(text) else {
        if ServiceOrigin(service: text) != nil { fatalError("init(service:) accepted what init rejects") }
        return
    }
    guard ServiceOrigin(origin.serialized) == origin else {
        fatalError("\(origin.serialized.debugDescription) does not parse back (from \(text.debugDescription))")
    }
    guard ServiceOrigin.of(url: origin.url("/x")) == origin, origin.isSameOrigin(as: origin.serialized) else {
        fatalError("a URL on \(origin) is not on it")
    }
    guard let service = ServiceOrigin(service: text), service.host == origin.host,
        service.isPotentiallyTrustworthy, service.scheme == .https || origin.isLoopback
    else { fatalError("init(service:) of \(text.debugDescription) is wrong") }
    if let port = origin.port, !(1...65535).contains(port) { fatalError("port \(port)") }

    if let site = origin.registrableDomain {
        guard !origin.isIPAddress, origin.host == site || origin.host.hasSuffix("." + site) else {
            fatalError("registrable domain \(site) of \(origin.host) is not the host or a parent")
        }
    }
    let chain = origin.hostAndParentsWithinSite
    guard chain.first == origin.host else { fatalError("the chain does not start at the host") }
    if chain.count > 1 {
        guard let site = origin.registrableDomain, chain.last == site else {
            fatalError("the chain of \(origin.host) goes past its registrable domain: \(chain)")
        }
        for (child, parent) in zip(chain, chain.dropFirst()) where !child.hasSuffix("." + parent) {
            fatalError("\(parent) is not a parent of \(child)")
        }
    }
    // Relative references land on the origin; absolute ones resolve only to themselves on it.
    for reference in ["/", "/path?q=1", text, "//" + origin.host + "/x", origin.serialized + "/y"] {
        guard let resolved = origin.resolveSameOrigin(reference) else { continue }
        guard origin.isSameOrigin(as: resolved) else {
            fatalError("\(reference.debugDescription) resolved off \(origin): \(resolved.debugDescription)")
        }
    }
}

func checkSuffixes(_ list: PublicSuffixList, _ host: String) {
    let suffix = list.publicSuffix(of: host)
    let site = list.registrableDomain(of: host)
    guard let suffix else {
        if site != nil { fatalError("a registrable domain without a public suffix: \(host.debugDescription)") }
        return
    }
    var name = host.lowercased()
    if name.hasSuffix(".") { name.removeLast() }
    guard name == suffix || name.hasSuffix("." + suffix) else {
        fatalError("public suffix \(suffix.debugDescription) is not a suffix of \(host.debugDescription)")
    }
    if let site {
        let labels = { (text: String) in text.split(separator: ".", omittingEmptySubsequences: false).count }
        guard site.hasSuffix("." + suffix), labels(site) == labels(suffix) + 1,
            name == site || name.hasSuffix("." + site)
        else {
            fatalError("registrable domain \(site.debugDescription) of \(host.debugDescription) (suffix \(suffix))")
        }
    } else if name != suffix {
        fatalError("\(host.debugDescription) has a suffix \(suffix) but no registrable domain")
    }
}

/// No generated seeds: scripts/fuzz.sh writes hosts and URLs from the tests' vectors.
func seeds() -> [[UInt8]] { [] }
