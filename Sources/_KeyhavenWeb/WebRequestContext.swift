public import Hummingbird
public import NIOCore

/// The request context of Keyhaven's servers (the provider, shiny): Hummingbird's basic one, plus
/// the peer's address (which sign-in throttles count wrong guesses against) and the one JSON style
/// (``WebJSON``) for routes that return `ResponseEncodable` values.
public struct WebRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }

    public var responseEncoder: WebJSON.ResponseEncoder { WebJSON.ResponseEncoder() }
}
