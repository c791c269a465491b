import AsyncHTTPClient
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Why an outgoing request failed, as far as its caller must know: the one reading of
/// AsyncHTTPClient's and SwiftNIO's errors for every outgoing call.
public enum OutboundFailure: Sendable, Equatable {
    /// Nothing was sent: the name did not resolve, the connection was refused, or there is no
    /// route to the host (or no network at all). Retrying at once rarely helps.
    case unreachable
    /// Time ran out (connecting, reading, or the request's deadline): it may have been delivered.
    case timedOut
    /// The caller cancelled it.
    case cancelled
    /// Anything else (a dropped connection, TLS, a malformed answer): it may have been delivered.
    case other

    /// Classifies `error` from `HTTPClient.execute` or from reading a response.
    public init(_ error: any Error) {
        if error is CancellationError {
            self = .cancelled
        } else if let error = error as? HTTPClientError {
            switch error {
            case .cancelled: self = .cancelled
            case .deadlineExceeded, .readTimeout, .connectTimeout, .writeTimeout: self = .timedOut
            default: self = Self.fromDescription(error)
            }
        } else if let error = error as? NIOConnectionError {
            // No connection attempt at all: neither lookup gave an address.
            if error.connectionErrors.isEmpty {
                self = .unreachable
            } else {
                let kinds = error.connectionErrors.map { Self($0.error) }
                self =
                    kinds.allSatisfy { $0 == .unreachable }
                    ? .unreachable : kinds.contains(.timedOut) ? .timedOut : .other
            }
        } else if let error = error as? IOError {
            self = Self.unreachableErrnos.contains(error.errnoCode) ? .unreachable : .other
        } else if error is SocketAddressError.UnknownHost {
            self = .unreachable
        } else if let error = error as? ChannelError, case .connectTimeout = error {
            self = .timedOut
        } else {
            self = Self.fromDescription(error)
        }
    }

    /// `connect` errors that mean the request never left.
    static let unreachableErrnos: Set<Int32> = [ECONNREFUSED, ENETUNREACH, EHOSTUNREACH, ENETDOWN, EADDRNOTAVAIL]

    /// Errors that only say what they are in their text.
    private static func fromDescription(_ error: any Error) -> Self {
        let text = String(describing: error)
        if text.contains("connectionRefused") || text.contains("Connection refused") || text.contains("connect(") {
            return .unreachable
        }
        return .other
    }
}
