public import AccountModification
public import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
public import _KeyhavenHTTPSupport
public import _KeyhavenSupport

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

    public init(
        endpoint: String,
        timeout: Duration = .seconds(30),
        client: HTTPClient = OutboundHTTP.shared
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
        case .convertToPasskey(let body): return try await call("POST", "/convert-to-passkey", body: body)
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

    public func registerPasskey(
        requestId: String,
        _ registration: PasskeyRegistration
    ) async throws
        -> ModificationResponse
    {
        try await call("POST", "/requests/\(requestId)/passkey-registration", body: registration)
    }

    func call<Body: Encodable>(_ method: String, _ path: String, body: Body?) async throws -> ModificationResponse {
        guard let origin = ServiceOrigin.of(url: endpoint), origin.isPotentiallyTrustworthy else {
            throw ModificationTransportError(
                .insecureEndpoint,
                "\(endpoint) is not an https endpoint; nothing was sent",
                delivered: false
            )
        }
        var request = HTTPClientRequest(url: endpoint + path)
        request.method = HTTPMethod(rawValue: method)
        request.headers.add(name: "User-Agent", value: "Keyhaven")
        request.headers.add(name: "Accept", value: "application/json")
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try JSONEncoder().encode(body)))
        }
        let response: HTTPClientResponse
        let deadline = NIODeadline.now() + TimeAmount(timeout)
        do {
            response = try await client.execute(request, deadline: deadline)
        } catch {
            throw Self.failure(error, endpoint: endpoint)
        }
        let data: ByteBuffer
        do {
            data = try await response.body.collect(upTo: 1 << 20, deadline: deadline)
        } catch {
            if OutboundFailure(error) == .timedOut { throw Self.failure(error, endpoint: endpoint) }
            throw ModificationTransportError(.badResponse, "the answer from \(endpoint) was cut off", delivered: true)
        }
        if response.status == .notFound && path.hasPrefix("/requests/") {
            throw ModificationTransportError(
                .unknownRequest,
                "\(endpoint) has no record of this request (HTTP 404)",
                delivered: true  // the question was answered; the request it names was never recorded
            )
        }
        guard response.status == .ok else {
            let message = (try? JSONDecoder().decode(ProtocolErrorBody.self, from: Data(data.readableBytesView)))?
                .message
            throw ModificationTransportError(
                .rejected,
                "the service answered HTTP \(response.status.code)\(message.map { ": \($0)" } ?? "")",
                delivered: true
            )
        }
        do {
            return try JSONDecoder().decode(ModificationResponse.self, from: Data(data.readableBytesView))
        } catch {
            throw ModificationTransportError(
                .badResponse,
                "the service answered something that is not the account-modification protocol",
                delivered: true
            )
        }
    }

    /// A failed HTTP call as a transport error: refused connections were certainly not delivered.
    static func failure(_ error: any Error, endpoint: String) -> ModificationTransportError {
        switch OutboundFailure(error) {
        case .unreachable:
            return .init(.unreachable, "cannot reach \(endpoint) (no connection could be made)", delivered: false)
        case .timedOut:
            return .init(.timedOut, "\(endpoint) did not answer in time", delivered: true)
        case .cancelled, .other:
            return .init(.unreachable, "the connection to \(endpoint) failed (\(error))", delivered: true)
        }
    }
}

/// Reads account-modification manifests over HTTP: at most 256 KiB, 10 seconds for the whole read
/// (every redirect and the body under one deadline), redirects followed only within the service's
/// origin (at most 5), the endpoint checked to be on the same origin.
public struct HTTPManifestReader: ManifestReader {
    let client: HTTPClient
    let timeout: Duration

    public init(client: HTTPClient = OutboundHTTP.shared, timeout: Duration = .seconds(10)) {
        self.client = client
        self.timeout = timeout
    }

    public func manifest(for origin: ServiceOrigin) async throws(ManifestError) -> AccountModificationManifest {
        guard origin.isPotentiallyTrustworthy else {
            throw ManifestError(.notAService, "\(origin) is plain http; upgrades need https")
        }
        var url = origin.url("/.well-known/account-modification")
        // One deadline for the chain: redirects (and the body) share it, not one each.
        let deadline = NIODeadline.now() + TimeAmount(timeout)
        do {
            for _ in 0...5 {
                var request = HTTPClientRequest(url: url)
                request.headers.add(name: "User-Agent", value: "Keyhaven")
                request.headers.add(name: "Accept", value: "application/json")
                let response = try await client.execute(request, deadline: deadline)
                if [301, 302, 303, 307, 308].contains(response.status.code),
                    let location = response.headers.first(name: "Location")
                {
                    guard let next = origin.resolveSameOrigin(location) else {
                        throw ManifestError(
                            .crossOrigin,
                            "\(origin)'s account-modification manifest redirects to another origin; refused"
                        )
                    }
                    url = next
                    continue
                }
                let body = try await response.body.collect(upTo: 256 << 10, deadline: deadline)
                guard response.status == .ok else {
                    throw ManifestError(
                        .notPublished,
                        "\(origin) does not support one-tap upgrades (no account-modification manifest: HTTP \(response.status.code))"
                    )
                }
                guard
                    let manifest = try? JSONDecoder().decode(
                        AccountModificationManifest.self,
                        from: Data(body.readableBytesView)
                    )
                else {
                    throw ManifestError(.malformed, "\(origin)'s account-modification manifest is malformed")
                }
                return try manifest.resolved(for: origin)
            }
            throw ManifestError(.notPublished, "\(origin)'s account-modification manifest redirects too often")
        } catch let error as ManifestError {
            throw error
        } catch {
            throw ManifestError(
                .unreachable,
                HTTPModificationTransport.failure(error, endpoint: origin.serialized).message
            )
        }
    }
}
