import Foundation
import HTTPTypes
public import Hummingbird
import IdentityProvider
public import NIOCore

/// The provider's request context: Hummingbird's basic one plus the peer's address, which the
/// sign-in throttle counts wrong guesses against.
public struct ProviderRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress
    }
}

extension ProviderServer {
    /// Who is signing in, for the per-address throttle: the last entry of ``clientAddressHeader``
    /// when one is configured (the entry the operator's own proxy appended; earlier entries are
    /// whatever the client claimed), otherwise the connection's peer.
    func clientAddress(_ request: Request, _ context: ProviderRequestContext) -> String? {
        if let header = clientAddressHeader, let name = HTTPField.Name(header) {
            let values = request.headers[values: name].joined(separator: ",")
            let entries = values.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            if let last = entries.last, !last.isEmpty { return last }
        }
        return context.remoteAddress?.ipAddress
    }

    /// Headers of a sign-in answer: `Retry-After` while sign-in is locked.
    static func retryHeaders(_ error: ProviderError) -> HTTPFields {
        var fields = HTTPFields()
        if let seconds = error.retryAfter { fields[.retryAfter] = String(seconds) }
        return fields
    }

    static func signInStatus(_ error: ProviderError) -> HTTPResponse.Status {
        switch error.code {
        case .secondFactorRequired: .ok
        case .tooManyAttempts: .tooManyRequests
        default: .unauthorized
        }
    }
}
