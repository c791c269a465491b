import Foundation

/// One HTTP answer from a range endpoint.
public struct RangeHTTPResponse: Sendable {
    public var status: Int
    public var body: [UInt8]
    /// `Retry-After`, in seconds, if the server sent one.
    public var retryAfter: Double?

    public init(status: Int, body: [UInt8], retryAfter: Double? = nil) {
        self.status = status
        self.body = body
        self.retryAfter = retryAfter
    }
}

/// How the client reaches a range API (HTTP in production, a closure in tests).
public protocol RangeTransport: Sendable {
    /// `GET {base}/range/{prefix}` with `Add-Padding: true`. Throws when the server cannot be
    /// reached.
    func fetchRange(prefix: String) async throws -> RangeHTTPResponse
}

/// The k-anonymity range client: only the first five hex digits of a SHA-1 ever leave the machine.
///
/// Prefixes are fetched once per client (a per-run cache), with at most `maxConcurrency` requests
/// in flight; 429 and 5xx answers are retried with exponential backoff (honouring `Retry-After`);
/// padding rows (count 0) are dropped.
public actor RangeClient {
    public let transport: any RangeTransport
    public let baseDescription: String
    public let maxConcurrency: Int
    public let maxAttempts: Int
    public let baseDelay: Double
    let sleep: @Sendable (Double) async throws -> Void
    private var cache: [String: [String: Int]] = [:]
    /// Requests made (not counting cache hits), for reporting and tests.
    public private(set) var requests = 0

    public init(
        transport: any RangeTransport,
        baseDescription: String = "the range API",
        maxConcurrency: Int = 8,
        maxAttempts: Int = 5,
        baseDelay: Double = 0.5,
        sleep: @escaping @Sendable (Double) async throws -> Void = { try await Task.sleep(for: .seconds($0)) }
    ) {
        self.transport = transport
        self.baseDescription = baseDescription
        self.maxConcurrency = max(1, maxConcurrency)
        self.maxAttempts = max(1, maxAttempts)
        self.baseDelay = baseDelay
        self.sleep = sleep
    }

    /// The longest wait a server's `Retry-After` can impose before a retry.
    public static let maximumRetryAfter: Double = 60

    /// How long to wait before a retry: the server's `Retry-After` when it is a finite, non-negative
    /// number of seconds (at most ``maximumRetryAfter``), otherwise the backoff. A hostile or broken
    /// server cannot crash the client (`inf`) or hang it (`100000`).
    static func delay(retryAfter: Double?, backoff: Double) -> Double {
        guard let retryAfter, retryAfter.isFinite, retryAfter >= 0 else { return backoff }
        return min(retryAfter, maximumRetryAfter)
    }

    /// Breach counts for `digests`, in order (0 when absent).
    public func counts(for digests: [SHA1Digest]) async throws(BreachError) -> [Int] {
        let prefixes = Array(Set(digests.map(\.prefix)).filter { cache[$0] == nil }).sorted()
        do {
            try await withThrowingTaskGroup(of: (String, [String: Int]).self) { group in
                var next = 0
                func schedule() {
                    guard next < prefixes.count else { return }
                    let prefix = prefixes[next]
                    next += 1
                    group.addTask { (prefix, try await self.fetch(prefix)) }
                }
                for _ in 0..<min(maxConcurrency, prefixes.count) { schedule() }
                while let (prefix, rows) = try await group.next() {
                    cache[prefix] = rows
                    schedule()
                }
            }
        } catch let error as BreachError {
            throw error
        } catch {
            throw BreachError(.offline, "cannot reach \(baseDescription): \(error)")
        }
        return digests.map { cache[$0.prefix]?[$0.suffix] ?? 0 }
    }

    public func count(for digest: SHA1Digest) async throws(BreachError) -> Int {
        try await counts(for: [digest])[0]
    }

    private func recordRequest() { requests += 1 }

    /// One prefix, with retries.
    nonisolated func fetch(_ prefix: String) async throws -> [String: Int] {
        var lastProblem = ""
        for attempt in 0..<maxAttempts {
            await recordRequest()
            let response: RangeHTTPResponse
            do {
                response = try await transport.fetchRange(prefix: prefix)
            } catch is CancellationError {
                throw CancellationError()
            } catch let error as BreachError where error.code == .offline {
                // The transport knows nothing was sent (no route, no name, refused), or the server
                // stalled mid-answer past the deadline: waiting a second will not bring it back.
                throw BreachError(
                    .offline,
                    "cannot reach \(baseDescription) (\(error.message)); check the network, or use --index for offline checks"
                )
            } catch {
                lastProblem = "\(error)"
                // Unreachable servers rarely come back within seconds: retry twice at most.
                if attempt + 1 < min(maxAttempts, 3) {
                    try await sleep(baseDelay * pow(2, Double(attempt)))
                    continue
                }
                throw BreachError(
                    .offline,
                    "cannot reach \(baseDescription) (\(lastProblem)); check the network, or use --index for offline checks"
                )
            }
            switch response.status {
            case 200:
                return RangeBody.parse(response.body)
            case 429, 500...599:
                lastProblem = "HTTP \(response.status)"
                if attempt + 1 < maxAttempts {
                    try await sleep(
                        Self.delay(retryAfter: response.retryAfter, backoff: baseDelay * pow(2, Double(attempt)))
                    )
                    continue
                }
            default:
                throw BreachError(
                    .badResponse,
                    "\(baseDescription) answered HTTP \(response.status) for a range request"
                )
            }
        }
        throw BreachError(
            .badResponse,
            "\(baseDescription) kept failing (\(lastProblem)) after \(maxAttempts) attempts"
        )
    }
}
