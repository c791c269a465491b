public import AsyncHTTPClient
public import BreachPSI
import Foundation
public import NIOCore
import NIOHTTP1
public import _KeyhavenHTTPSupport
import _KeyhavenSupport

/// A breach-PSI server over HTTP(S) with AsyncHTTPClient (`BreachPSIHTTPServer`'s endpoints):
/// 10 seconds per request, no retries. A server that cannot be reached, answers with an HTTP error
/// (429 included) or publishes something unreadable is a ``BreachPSIError``.
public struct HTTPBreachPSITransport: BreachPSITransport {
    public let base: String
    let client: HTTPClient
    let timeout: TimeAmount

    public init(base: String, client: HTTPClient = OutboundHTTP.shared, timeout: TimeAmount = .seconds(10)) {
        var base = base
        while base.hasSuffix("/") { base.removeLast() }
        self.base = base
        self.client = client
        self.timeout = timeout
    }

    public var serverDescription: String { base }

    struct Publication: Decodable {
        var version: Int
        var buckets: Int
        var entryLength: Int
        var publicKey: String
    }

    public func publication() async throws(BreachPSIError) -> BreachPSIPublication {
        let body = try await execute(HTTPClientRequest(url: "\(base)/psi/v1/key"), limit: 4096)
        guard let decoded = try? JSONDecoder().decode(Publication.self, from: Data(body)),
            let key = Hex.decode(decoded.publicKey)
        else {
            throw BreachPSIError(.malformedResponse, "\(base)/psi/v1/key is not a breach-PSI server's published key")
        }
        return BreachPSIPublication(
            version: decoded.version,
            bucketCount: decoded.buckets,
            entryLength: decoded.entryLength,
            publicKey: try BreachPSIPublicKey(representation: key)
        )
    }

    public func send(_ request: [UInt8]) async throws(BreachPSIError) -> [UInt8] {
        var http = HTTPClientRequest(url: "\(base)/psi/v1/query")
        http.method = .POST
        http.headers.add(name: "Content-Type", value: "application/octet-stream")
        http.body = .bytes(ByteBuffer(bytes: request))
        return try await execute(
            http,
            limit: PSIResponse.headerLength + BreachPSI.maximumBucketEntries * BreachPSI.entryLength + 1
        )
    }

    func execute(_ request: HTTPClientRequest, limit: Int) async throws(BreachPSIError) -> [UInt8] {
        var request = request
        request.headers.add(name: "User-Agent", value: "Keyhaven")
        do {
            let response = try await client.execute(request, timeout: timeout)
            let body = try await response.body.collect(upTo: limit)
            guard response.status == .ok else {
                if response.status == .tooManyRequests {
                    let wait = response.headers.first(name: "Retry-After") ?? "a while"
                    throw BreachPSIError(
                        .serverError,
                        "\(base) limits how often one address may ask (429); try again in \(wait) s"
                    )
                }
                throw BreachPSIError(.serverError, "\(base) answered HTTP \(response.status.code)")
            }
            return Array(buffer: body)
        } catch let error as BreachPSIError {
            throw error
        } catch {
            if OutboundFailure(error) == .unreachable {
                throw BreachPSIError(.unreachable, "cannot reach \(base) (no connection could be made: \(error))")
            }
            throw BreachPSIError(.unreachable, "cannot reach \(base): \(error)")
        }
    }
}
