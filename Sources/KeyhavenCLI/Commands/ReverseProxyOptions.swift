import ArgumentParser

/// Where a server behind a reverse proxy finds the client's address (`idp serve`, `sync serve`):
/// their per-address limits (sign-in throttles, pending join requests) would otherwise see every
/// client as the proxy.
struct ReverseProxyOptions: ParsableArguments {
    @Option(
        name: .customLong("client-address-header"),
        help:
            "Header your reverse proxy sets to the client's address (X-Forwarded-For), believed only from trusted proxies."
    )
    var clientAddressHeader: String?
    @Option(
        name: .customLong("trusted-proxy"),
        help: "Address of a reverse proxy whose --client-address-header is believed (repeatable; default loopback)."
    )
    var trustedProxies: [String] = []

    /// The proxies whose header is believed: the ones given, or loopback.
    var trusted: Set<String> { trustedProxies.isEmpty ? ["127.0.0.1", "::1"] : Set(trustedProxies) }

    func validate() throws {
        let tokenCharacters = Set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
        if let clientAddressHeader,
            clientAddressHeader.isEmpty || !clientAddressHeader.allSatisfy(tokenCharacters.contains)
        {
            throw ValidationError("--client-address-header: '\(clientAddressHeader)' is not a header name")
        }
        if !trustedProxies.isEmpty && clientAddressHeader == nil {
            throw ValidationError("--trusted-proxy needs --client-address-header")
        }
    }
}
