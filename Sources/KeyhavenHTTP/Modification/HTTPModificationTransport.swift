public import AccountModification
public import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// The account-modification protocol over HTTP with AsyncHTTPClient.
///
/// Errors say whether the request may have reached the service: a refused connection did not (the
/// flow fails cleanly); a timeout, a dropped connection or an answer that is not the protocol may
/// have (the flow is indeterminate and the journal keeps both passwords until the service can be
/// asked).
public struct HTTPModificationTransport: ModificationTransport {
    public let endpoint: String
    public let timeout: Duration
    let client: HTTPClient

    public static let client: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(connect: .seconds(5))
        configuration.redirectConfiguration = .disallow
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    public init(
        endpoint: String,
        timeout: Duration = .seconds(30),
        client: HTTPClient = HTTPModificationTransport.client
    ) {
        var endpoint = endpoint
        while endpoint.hasSuffix("/") { endpoint.removeLast() }
        self.endpoint = endpoint
        self.timeout = timeout
        self.client = client
    }

    public func send(_ request: ModificationFlow.Request) async throws -> ModificationResponse {
        switch request {
        case .changePassword(let body): return try await call("POST", "/change-password", body: body)
        case .convertToSignIn(let body): return try await call("POST", "/convert-to-sign-in", body: body)
        }
    }

    public func status(requestId: String) async throws -> ModificationResponse {
        try await call("GET", "/requests/\(requestId)", body: Optional<String>.none)
    }

    public func cancel(requestId: String) async throws -> ModificationResponse {
        try await call("POST", "/requests/\(requestId)/cancel", body: [String: String]())
    }

    public func authorize(requestId: String, _ authorization: SignInAuthorization) async throws -> ModificationResponse
    {
        try await call("POST", "/requests/\(requestId)/sign-in-authorization", body: authorization)
    }

    func call<Body: Encodable>(_ method: String, _ path: String, body: Body?) async throws -> ModificationResponse {
        var request = HTTPClientRequest(url: endpoint + path)
        request.method = HTTPMethod(rawValue: method)
        request.headers.add(name: "User-Agent", value: "Keyhaven")
        request.headers.add(name: "Accept", value: "application/json")
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try JSONEncoder().encode(body)))
        }
        let response: HTTPClientResponse
        do {
            response = try await client.execute(
                request,
                timeout: .nanoseconds(
                    Int64(
                        timeout.components.seconds * 1_000_000_000
                            + timeout.components.attoseconds / 1_000_000_000
                    )
                )
            )
        } catch {
            throw ModificationTransportError(
                Self.describe(error, endpoint: endpoint),
                delivered: !Self.isRefused(error)
            )
        }
        let data: ByteBuffer
        do {
            data = try await response.body.collect(upTo: 1 << 20)
        } catch {
            throw ModificationTransportError("the answer from \(endpoint) was cut off", delivered: true)
        }
        if response.status == .notFound && path.hasPrefix("/requests/") {
            throw UnknownModificationRequest()
        }
        guard response.status == .ok else {
            let message = (try? JSONDecoder().decode(ProtocolErrorBody.self, from: Data(data.readableBytesView)))?
                .message
            throw ModificationTransportError(
                "the service answered HTTP \(response.status.code)\(message.map { ": \($0)" } ?? "")",
                delivered: true
            )
        }
        do {
            return try JSONDecoder().decode(ModificationResponse.self, from: Data(data.readableBytesView))
        } catch {
            throw ModificationTransportError(
                "the service answered something that is not the account-modification protocol",
                delivered: true
            )
        }
    }

    static func isRefused(_ error: any Error) -> Bool {
        if let error = error as? NIOConnectionError {
            return error.connectionErrors.allSatisfy { ($0.error as? IOError)?.errnoCode == ECONNREFUSED }
                && !error.connectionErrors.isEmpty || error.dnsAError != nil && error.dnsAAAAError != nil
        }
        if let error = error as? IOError { return error.errnoCode == ECONNREFUSED }
        let text = String(describing: error)
        return text.contains("connectionRefused") || text.contains("Connection refused") || text.contains("connect(")
    }

    static func describe(_ error: any Error, endpoint: String) -> String {
        if isRefused(error) { return "cannot reach \(endpoint) (connection refused)" }
        if let error = error as? HTTPClientError, error == .deadlineExceeded || error == .readTimeout {
            return "\(endpoint) did not answer in time"
        }
        return "the connection to \(endpoint) failed (\(error))"
    }
}

/// Reads a service's account-modification manifest.
public enum ManifestFetcher {
    /// The origin for a service named by the person: a URL's origin (http only on loopback), or
    /// `https://domain`.
    public static func origin(of service: String) -> String? {
        if service.contains("://") {
            guard let components = URLComponents(string: service), let scheme = components.scheme?.lowercased(),
                let host = components.host?.lowercased(), !host.isEmpty
            else { return nil }
            let loopback = ["127.0.0.1", "localhost", "::1"].contains(host)
            guard scheme == "https" || (scheme == "http" && loopback) else { return nil }
            return "\(scheme)://\(host)\(components.port.map { ":\($0)" } ?? "")"
        }
        let host = service.split(whereSeparator: { $0 == "/" }).first.map { $0.lowercased() } ?? ""
        return host.isEmpty ? nil : "https://\(host)"
    }

    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    public static func fetch(
        service: String,
        client: HTTPClient = HTTPModificationTransport.client
    ) async throws(Failure)
        -> AccountModificationManifest
    {
        guard let origin = origin(of: service) else {
            throw Failure(description: "\(service) is not a domain or an https URL")
        }
        var request = HTTPClientRequest(url: origin + "/.well-known/account-modification")
        request.headers.add(name: "User-Agent", value: "Keyhaven")
        do {
            let response = try await client.execute(request, timeout: .seconds(10))
            let body = try await response.body.collect(upTo: 256 << 10)
            guard response.status == .ok else {
                throw Failure(
                    description:
                        "\(origin) does not support one-tap upgrades (no account-modification manifest: HTTP \(response.status.code))"
                )
            }
            guard
                var manifest = try? JSONDecoder().decode(
                    AccountModificationManifest.self,
                    from: Data(body.readableBytesView)
                )
            else {
                throw Failure(description: "\(origin)'s account-modification manifest is malformed")
            }
            if manifest.endpoint.hasPrefix("/") { manifest.endpoint = origin + manifest.endpoint }
            return manifest
        } catch let failure as Failure {
            throw failure
        } catch {
            throw Failure(description: HTTPModificationTransport.describe(error, endpoint: origin))
        }
    }
}
