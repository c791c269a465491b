/// The Public Suffix List (https://publicsuffix.org), ICANN and private sections, compiled in from
/// `Resources/public_suffix_list.dat` (see its README for the version and licence).
///
/// One question is asked of it: the registrable domain (eTLD+1) of a host, where matching a
/// credential to a site stops climbing to parent domains. The algorithm is the list's own
/// (https://publicsuffix.org/list/): the matching rule with the most labels prevails, an exception
/// rule (`!`) prevails over every other and gives up its leftmost label, `*` matches one label, and
/// a host no rule matches has its last label as public suffix. Rules written in Unicode also match
/// hosts in their `xn--` form.
public struct PublicSuffixList: Sendable {
    private var rules: Set<String> = []
    private var wildcards: Set<String> = []
    private var exceptions: Set<String> = []

    /// The list shipped with Keyhaven, parsed once on first use.
    public static let shipped = PublicSuffixList(listText: embeddedPublicSuffixList)

    /// Parses the list's text format: one rule per line, `//` comments, blank lines ignored.
    public init(listText: String) {
        for line in listText.split(whereSeparator: \.isNewline) {
            let rule = line.prefix { !$0.isWhitespace }
            guard !rule.isEmpty, !rule.hasPrefix("//") else { continue }
            var forms = [rule.lowercased()]
            if let ascii = Punycode.asciiHost(forms[0]), ascii != forms[0] { forms.append(ascii) }
            for form in forms {
                if form.hasPrefix("!") {
                    // An exception names a registrable domain under a wildcard: one label (`!com`)
                    // excepts nothing, and taken as written it would leave an empty public suffix
                    // (found by FuzzServiceOrigin).
                    guard form.contains(".") else { continue }
                    exceptions.insert(String(form.dropFirst()))
                } else if form.hasPrefix("*.") {
                    wildcards.insert(String(form.dropFirst(2)))
                } else {
                    rules.insert(form)
                }
            }
        }
    }

    /// The public suffix of `host` (`co.uk` for `www.example.co.uk`); nil for an empty label or a
    /// leading dot. Hosts are compared lower-cased; a trailing dot is ignored.
    public func publicSuffix(of host: String) -> String? {
        guard let labels = Self.labels(of: host) else { return nil }
        return labels.suffix(suffixLabelCount(labels)).joined(separator: ".")
    }

    /// The registrable domain of `host` (`example.co.uk` for `www.example.co.uk`): its public suffix
    /// and one more label. Nil when `host` is itself a public suffix (`co.uk`, `github.io`) or not a
    /// domain name.
    public func registrableDomain(of host: String) -> String? {
        guard let labels = Self.labels(of: host) else { return nil }
        let count = suffixLabelCount(labels)
        guard labels.count > count else { return nil }
        return labels.suffix(count + 1).joined(separator: ".")
    }

    private func suffixLabelCount(_ labels: [Substring]) -> Int {
        var longest = 1  // the implicit rule `*`
        for start in labels.indices {
            let suffix = labels[start...].joined(separator: ".")
            let count = labels.count - start
            // An exception rule is more specific than the wildcard it excepts and prevails.
            if exceptions.contains(suffix) { return count - 1 }
            if rules.contains(suffix) { longest = max(longest, count) }
            if start > 0 && wildcards.contains(suffix) { longest = max(longest, count + 1) }
        }
        return longest
    }

    private static func labels(of host: String) -> [Substring]? {
        var host = Substring(host.lowercased())
        if host.hasSuffix(".") { host = host.dropLast() }
        let labels = host.split(separator: ".", omittingEmptySubsequences: false)
        guard !host.isEmpty, !labels.contains(where: \.isEmpty) else { return nil }
        return labels
    }
}

extension ServiceOrigin {
    /// Whether the host is an IP address (v4 dotted quad or v6 literal) rather than a name.
    public var isIPAddress: Bool {
        host.contains(":")
            || host.split(separator: ".", omittingEmptySubsequences: false).count == 4
                && host.split(separator: ".").allSatisfy { UInt8($0) != nil }
    }

    /// The registrable domain (eTLD+1) of the host, from the Public Suffix List shipped with
    /// Keyhaven; nil for IP addresses, `localhost`, and hosts that are themselves public suffixes.
    public var registrableDomain: String? {
        guard !isIPAddress else { return nil }
        return PublicSuffixList.shipped.registrableDomain(of: host)
    }

    /// The host and each parent domain down to the registrable domain
    /// (`a.b.example.co.uk` → itself, `b.example.co.uk`, `example.co.uk`); just the host for IP
    /// addresses, loopback names and hosts that are public suffixes. Credentials are shared along
    /// this chain and never beyond it.
    public var hostAndParentsWithinSite: [String] {
        guard let site = registrableDomain, host != site, host.hasSuffix("." + site) else { return [host] }
        var result = [host]
        var rest = Substring(host)
        while rest != site, let dot = rest.firstIndex(of: ".") {
            rest = rest[rest.index(after: dot)...]
            result.append(String(rest))
        }
        return result
    }
}
