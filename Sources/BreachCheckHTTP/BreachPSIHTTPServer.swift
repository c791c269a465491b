public import BreachPSI
import Foundation
import HTTPTypes
public import Hummingbird
import Logging
import NIOCore
import _KeyhavenSupport
public import _KeyhavenWeb

#if canImport(Glibc)
import Glibc
#endif

/// The private breach check's server (docs/breach-psi.md) over HTTP:
///
/// - `GET /psi/v1/key`: JSON `{"version": 1, "buckets": 32768, "entryLength": 8, "publicKey": hex,
///   "keyID": hex}`, the key clients pin (never the secret key: the server holds it only in memory).
/// - `POST /psi/v1/query`: a 52-byte `PSIRequest` (`application/octet-stream`); 200 with the
///   `PSIResponse` bytes, 400 for a malformed request, 413 for a body over 52 bytes, 429 with
///   `Retry-After` (whole seconds) when the client is over its rate limit.
///
/// An OPRF server is an oracle: whoever asks learns F_k of what they send. So each client address
/// has a token bucket (``BreachPSIRateLimiter``); a full audit of a large vault is spread over time.
///
/// **Blocking work.** A query costs a blind evaluation with its DLEQ proof (three P-384 scalar
/// multiplications: about a millisecond in a release build, far more in a debug one) and a `pread`
/// of its bucket (about 244 KB for the whole Pwned Passwords corpus). Both run on
/// ``DedicatedThreadExecutor``s, the package's one rule for blocking work: one thread per core,
/// chosen round-robin, so neither NIO's event loops nor Swift's cooperative pool (which serve every
/// other request) wait on them.
public struct BreachPSIHTTPServer: Sendable {
    public let server: BreachPSIServer
    public let limiter: BreachPSIRateLimiter
    /// Sees every query's body as it arrived (before any check): tests and operators can show
    /// what a client sent. Nil in production.
    public let observer: (@Sendable (_ body: [UInt8]) -> Void)?
    let executors: ExecutorPool

    public init(
        server: BreachPSIServer,
        limiter: BreachPSIRateLimiter = BreachPSIRateLimiter(),
        threads: Int? = nil,
        observer: (@Sendable (_ body: [UInt8]) -> Void)? = nil
    ) {
        self.server = server
        self.limiter = limiter
        self.observer = observer
        executors = ExecutorPool(count: max(threads ?? ProcessInfo.processInfo.activeProcessorCount, 1))
    }

    /// What `GET /psi/v1/key` answers.
    struct Publication: Codable {
        var version, buckets, entryLength: Int
        var publicKey, keyID: String
    }

    /// A router with the two endpoints (and `GET /` describing the server).
    public func router() -> Router<WebRequestContext> {
        let router = Router(
            context: WebRequestContext.self,
            securityHeaders: SecurityHeaders(contentSecurityPolicy: ContentSecurityPolicy([.defaultSrc(.none)]))
        )
        let publication = Publication(
            version: Int(BreachPSI.version),
            buckets: BreachPSI.bucketCount,
            entryLength: BreachPSI.entryLength,
            publicKey: Hex.encode(server.key.publicKey.representation),
            keyID: Hex.encode(server.key.publicKey.id)
        )
        router.get("/psi/v1/key") { _, _ in try JSONResponse(publication) }
        router.post("/psi/v1/query") { request, context -> Response in
            let client = context.remoteAddress?.ipAddress ?? "unknown"
            if let wait = self.limiter.take(client: client) {
                return Self.text(
                    .tooManyRequests,
                    "Too many queries from this address; try again later.",
                    extra: [.retryAfter: Self.retryAfter(wait)]
                )
            }
            let body: ByteBuffer
            do {
                body = try await request.body.collect(upTo: PSIRequest.encodedLength)
            } catch {
                return Self.text(.contentTooLarge, "A query is \(PSIRequest.encodedLength) bytes.")
            }
            let bytes = Array(buffer: body)
            self.observer?(bytes)
            let server = self.server
            // Through an async function: a closure with no suspension point would run where it was
            // called (the cooperative pool), ignoring the preference.
            let answer = await withTaskExecutorPreference(self.executors.next()) {
                await Self.answer(server, bytes)
            }
            switch answer {
            case .success(let response):
                return Response(
                    status: .ok,
                    headers: [.contentType: "application/octet-stream"],
                    body: .init(byteBuffer: ByteBuffer(bytes: response))
                )
            case .failure(let error) where error.code == .io:
                context.logger.error("bucket file read failed", metadata: ["error": "\(error.message)"])
                return Self.text(.internalServerError, "The server could not read its buckets.")
            case .failure(let error):
                return Self.text(.badRequest, error.message)
            }
        }
        router.get("/") { _, _ in
            "Keyhaven breach-PSI server: GET /psi/v1/key, POST /psi/v1/query (docs/breach-psi.md)\n"
        }
        return router
    }

    /// The server's answer; async so that it starts on the task's preferred executor.
    static func answer(_ server: BreachPSIServer, _ bytes: [UInt8]) async -> Result<[UInt8], BreachPSIError> {
        do throws(BreachPSIError) {
            return .success(try server.answer(encoded: bytes))
        } catch {
            return .failure(error)
        }
    }

    /// Whole seconds for `Retry-After`: at least 1, at most a day (a NaN or infinite wait too).
    public static func retryAfter(_ wait: Double) -> String {
        guard wait.isFinite else { return "86400" }
        return String(Int(min(max(wait.rounded(.up), 1), 86_400)))
    }

    static func text(_ status: HTTPResponse.Status, _ text: String, extra: HTTPFields = [:]) -> Response {
        var headers: HTTPFields = [.contentType: "text/plain; charset=utf-8"]
        headers.append(contentsOf: extra)
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text + "\n")))
    }

    /// Serves on `host:port` until SIGINT or SIGTERM, then shuts down gracefully.
    public func run(host: String, port: Int) async throws {
        let logger = Logger(label: "keyhaven.breach-psi-server")
        try await breachServerApplication(router(), host: host, port: port, logger: logger).runService()
        executors.finish()
    }
}

/// Dedicated threads taken in turn.
final class ExecutorPool: Sendable {
    let executors: [DedicatedThreadExecutor]
    let counter = Counter()

    init(count: Int) {
        executors = (0..<count).map { DedicatedThreadExecutor(name: "keyhaven.breach-psi.\($0)") }
    }

    func next() -> DedicatedThreadExecutor { executors[counter.next() % executors.count] }

    func finish() {
        for executor in executors { executor.finish() }
    }

    deinit { finish() }

    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var value = 0
        func next() -> Int {
            lock.lock()
            defer { lock.unlock() }
            value &+= 1
            return value & Int.max
        }
    }
}

/// A token bucket per client address: ``burst`` queries at once, refilled at ``perSecond``.
/// A client over it waits (the server answers 429 with the seconds until a token is back).
/// The clock is injected (seconds on a monotonic clock).
///
/// Addresses are grouped as the network hands them out: an IPv4-mapped IPv6 address is its IPv4
/// address, and an IPv6 address counts as its /64 (a client usually holds a whole /64).
///
/// The table never holds more than ``maximumClients`` addresses: when a new address finds it full,
/// one pass drops the buckets that are full again, and if that is not enough, the least recently
/// seen ones, down to three quarters of the cap (so the next clean-up is far away).
public final class BreachPSIRateLimiter: @unchecked Sendable {
    public let burst: Double
    public let perSecond: Double
    public let maximumClients: Int
    let now: @Sendable () -> Double
    // Guarded by `lock`.
    private var buckets: [String: (tokens: Double, at: Double)] = [:]
    private let lock = NSLock()

    /// `now`: seconds on a monotonic clock (default: the system's uptime).
    /// The default: 64 queries at once (four batches), then 16 a second (one batch).
    public init(
        burst: Int = 64,
        perSecond: Double = 16,
        maximumClients: Int = 65_536,
        now: (@Sendable () -> Double)? = nil
    ) {
        self.burst = Double(max(burst, 1))
        self.perSecond = perSecond.isFinite ? max(perSecond, 1e-6) : 1e-6
        self.maximumClients = max(maximumClients, 1)
        self.now = now ?? { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }
    }

    /// The addresses the table holds.
    public var clientCount: Int { lock.withLock { buckets.count } }

    /// Takes a token for `client`: nil when it may go on, else the seconds until it may.
    public func take(client: String) -> Double? {
        let key = Self.group(client)
        let time = now()
        lock.lock()
        defer { lock.unlock() }
        var state = buckets[key] ?? (burst, time)
        state.tokens = min(burst, state.tokens + (time - state.at) * perSecond)
        state.at = time
        if buckets[key] == nil && buckets.count >= maximumClients { shrink(at: time) }
        guard state.tokens >= 1 else {
            buckets[key] = state
            return (1 - state.tokens) / perSecond
        }
        state.tokens -= 1
        buckets[key] = state
        return nil
    }

    /// Down to the low-water mark in one pass: full buckets first, then the least recently seen.
    private func shrink(at time: Double) {
        let lowWater = maximumClients - max(maximumClients / 4, 1)
        buckets = buckets.filter { min(burst, $0.value.tokens + (time - $0.value.at) * perSecond) < burst }
        guard buckets.count > lowWater else { return }
        let oldest = buckets.sorted { $0.value.at < $1.value.at }.prefix(buckets.count - lowWater)
        for (key, _) in oldest { buckets[key] = nil }
    }

    /// The rate-limit group of an address: IPv4 as it is (also when IPv4-mapped), IPv6 by its /64.
    public static func group(_ address: String) -> String {
        guard address.contains(":") else { return address }
        var bytes = [UInt8](repeating: 0, count: 16)
        let parsed = address.split(separator: "%", maxSplits: 1).first.map(String.init) ?? address
        guard inet_pton(AF_INET6, parsed, &bytes) == 1 else { return address }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xff && bytes[11] == 0xff {
            return bytes[12..<16].map(String.init).joined(separator: ".")
        }
        return Hex.encode(bytes[0..<8]) + "/64"
    }
}
