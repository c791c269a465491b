public import AsyncHTTPClient
import Foundation
public import KeyhavenJOSE
import NIOCore
import NIOHTTP1
import _KeyhavenHTTPSupport
public import _KeyhavenSupport

@_exported public import struct _KeyhavenSupport.KeyhavenError

/// How the kit talks to the provider. ``HTTPRelyingPartyTransport`` is the real one; tests may
/// substitute their own.
public protocol RelyingPartyTransport: Sendable {
    func get(_ url: String) async throws -> (status: Int, body: [UInt8])
    func postForm(
        _ url: String,
        fields: [(String, String)],
        bearer: String?
    ) async throws -> (status: Int, body: [UInt8])
}

/// async-http-client: 10-second timeouts, at most 1 MiB of body, no redirects.
public struct HTTPRelyingPartyTransport: RelyingPartyTransport {
    let client: HTTPClient

    public static let shared: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(connect: .seconds(5), read: .seconds(10))
        configuration.redirectConfiguration = .disallow
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    public init(client: HTTPClient = HTTPRelyingPartyTransport.shared) {
        self.client = client
    }

    public func get(_ url: String) async throws -> (status: Int, body: [UInt8]) {
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Accept", value: "application/json")
        return try await send(request)
    }

    public func postForm(
        _ url: String,
        fields: [(String, String)],
        bearer: String?
    ) async throws -> (
        status: Int, body: [UInt8]
    ) {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.headers.add(name: "Accept", value: "application/json")
        if let bearer { request.headers.add(name: "Authorization", value: "Bearer \(bearer)") }
        request.body = .bytes(ByteBuffer(string: FormURLEncoding.encode(fields)))
        return try await send(request)
    }

    func send(_ request: HTTPClientRequest) async throws -> (status: Int, body: [UInt8]) {
        do {
            let deadline = NIODeadline.now() + .seconds(10)
            let response = try await client.execute(request, deadline: deadline)
            let body = try await response.body.collect(upTo: 1 << 20, deadline: deadline)
            return (Int(response.status.code), Array(buffer: body))
        } catch {
            throw RelyingPartyError(.transport, "the provider could not be reached (\(type(of: error)))")
        }
    }
}

/// What went wrong, for the service's logs and its users. Never includes a token or a secret.
public typealias RelyingPartyError = KeyhavenError<RelyingPartyErrorDomain>

/// The domain of ``RelyingPartyError``: its details say what the provider or the token said.
public enum RelyingPartyErrorDomain: KeyhavenErrorDomain {
    public enum Details: Sendable {
        /// The provider's OAuth `error` (`.provider`).
        case oauthError(String)
        /// Why the token was refused (`.token`).
        case token(JOSEError)
    }
}

extension RelyingPartyError {
    /// `invalid_grant`, `invalid_client`… when the provider said so.
    public var oauthError: String? {
        if case .oauthError(let error) = details { error } else { nil }
    }

    /// Why the token was refused (`.token`).
    public var token: JOSEError? {
        if case .token(let error) = details { error } else { nil }
    }

    public init(_ code: Code, _ message: String, oauthError: String, file: String = #fileID, line: UInt = #line) {
        self.init(code, message, details: .oauthError(oauthError), file: file, line: line)
    }

    public init(_ code: Code, _ message: String, token: JOSEError, file: String = #fileID, line: UInt = #line) {
        self.init(code, message, details: .token(token), file: file, line: line)
    }
}

extension RelyingPartyError.Code {
    /// The provider answered with an OAuth error (``RelyingPartyError/oauthError`` holds it).
    public static var provider: Self { Self("provider") }
    /// The provider could not be reached, or answered something else than the protocol.
    public static var transport: Self { Self("transport") }
    /// A token or notification did not verify (``RelyingPartyError/token`` holds why).
    public static var token: Self { Self("token") }
}
