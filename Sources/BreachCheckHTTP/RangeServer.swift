public import BreachCheck
import HTTPTypes
public import Hummingbird
public import Logging
public import NIOCore
import _KeyhavenSupport

/// A Pwned Passwords range server over a full breach index: `GET /range/{prefix}` answered exactly
/// as api.pwnedpasswords.com does — 200 with upper-case 35-digit suffixes in order as
/// `SUFFIX:COUNT` CRLF lines; with `Add-Padding: true`, random suffixes with count 0 bring the
/// response to 800–1,000 rows; 400 for a malformed prefix. Existing clients (KeePassXC, Bitwarden,
/// Keyhaven) work against it by changing the base URL.
public struct RangeServer: Sendable {
    public let index: BreachIndex

    public init(index: BreachIndex) throws(BreachError) {
        guard index.kind == .full else {
            throw BreachError(
                .needsFullIndex,
                "a compact index keeps only 64 bits per hash and cannot answer range requests; "
                    + "build a full index (keyhaven breach index build without --compact)"
            )
        }
        self.index = index
    }

    /// A row: the 18 record bytes (the first byte's high nibble is the prefix's last digit) and the
    /// count; ordered by the bytes.
    struct Row: Comparable {
        var high: UInt64
        var middle: UInt64
        var low: UInt16
        var count: Int

        @inline(__always)
        static func < (lhs: Row, rhs: Row) -> Bool {
            if lhs.high != rhs.high { return lhs.high < rhs.high }
            if lhs.middle != rhs.middle { return lhs.middle < rhs.middle }
            return lhs.low < rhs.low
        }
    }

    /// The response body for `prefix`, with padding when asked.
    public func body(prefix: UInt32, padding: Bool) throws -> ByteBuffer {
        let records = try index.range(prefix: prefix)
        var rows: [Row] = []
        rows.reserveCapacity(padding ? 1000 : records.count)
        for record in records {
            let bytes = record.suffix
            var high: UInt64 = 0
            var middle: UInt64 = 0
            for index in 0..<8 { high = high << 8 | UInt64(bytes[index]) }
            for index in 8..<16 { middle = middle << 8 | UInt64(bytes[index]) }
            rows.append(
                Row(high: high, middle: middle, low: UInt16(bytes[16]) << 8 | UInt16(bytes[17]), count: record.count)
            )
        }
        if padding {
            // Padding only hides the response size: a fast generator seeded from the system one per
            // request (the system generator costs a system call per number on Linux).
            var system = SystemRandomNumberGenerator()
            var generator = FastRandom(seed: system.next())
            let target = Int.random(in: 800...1000, using: &generator)
            if rows.count < target {
                // Random suffixes under the same prefix. A collision with a real row has
                // probability ~2^-136 per row; it is not worth a check.
                let nibble = UInt64(prefix & 0xF) << 60
                for _ in rows.count..<target {
                    rows.append(
                        Row(
                            high: nibble | (generator.next() >> 4),
                            middle: generator.next(),
                            low: UInt16(truncatingIfNeeded: generator.next()),
                            count: 0
                        )
                    )
                }
                rows.sort()
            }
        }
        var body = ByteBufferAllocator().buffer(capacity: rows.count * 48)
        let pairs = Self.hexPairs
        body.writeWithUnsafeMutableBytes(minimumWritableBytes: rows.count * 48) { raw in
            var at = 0
            for (position, row) in rows.enumerated() {
                if position > 0 {
                    raw[at] = 13
                    raw[at + 1] = 10
                    at += 2
                }
                // 35 digits: the low nibble of the first byte, then 17 more bytes.
                raw[at] = UInt8(truncatingIfNeeded: pairs[Int((row.high >> 56) & 0xFF)])
                at += 1
                for shift in stride(from: 48, through: 0, by: -8) {
                    let pair = pairs[Int((row.high >> UInt64(shift)) & 0xFF)]
                    raw[at] = UInt8(truncatingIfNeeded: pair >> 8)
                    raw[at + 1] = UInt8(truncatingIfNeeded: pair)
                    at += 2
                }
                for shift in stride(from: 56, through: 0, by: -8) {
                    let pair = pairs[Int((row.middle >> UInt64(shift)) & 0xFF)]
                    raw[at] = UInt8(truncatingIfNeeded: pair >> 8)
                    raw[at + 1] = UInt8(truncatingIfNeeded: pair)
                    at += 2
                }
                for shift in [8, 0] {
                    let pair = pairs[Int((row.low >> UInt16(shift)) & 0xFF)]
                    raw[at] = UInt8(truncatingIfNeeded: pair >> 8)
                    raw[at + 1] = UInt8(truncatingIfNeeded: pair)
                    at += 2
                }
                raw[at] = UInt8(ascii: ":")
                at += 1
                var count = row.count
                if count == 0 {
                    raw[at] = UInt8(ascii: "0")
                    at += 1
                } else {
                    var digits = 0
                    var rest = count
                    while rest > 0 {
                        digits += 1
                        rest /= 10
                    }
                    for offset in stride(from: digits - 1, through: 0, by: -1) {
                        raw[at + offset] = UInt8(48 + count % 10)
                        count /= 10
                    }
                    at += digits
                }
            }
            return at
        }
        return body
    }

    /// Two upper-case hex digits per byte value (high digit in the high byte).
    static let hexPairs: [UInt16] = (0..<256).map {
        UInt16(Hex.upperDigits[$0 >> 4]) << 8 | UInt16(Hex.upperDigits[$0 & 0xF])
    }

    /// A router with the range endpoint (and `GET /` describing the server).
    public func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.get("/range/:prefix") { request, context -> Response in
            let text = context.parameters.get("prefix") ?? ""
            guard let prefix = RangeBody.prefixValue(text) else {
                return Response(
                    status: .badRequest,
                    headers: [.contentType: "text/plain"],
                    body: .init(byteBuffer: ByteBuffer(string: "The hash prefix was not in a valid format"))
                )
            }
            let padding = request.headers[values: HTTPField.Name("Add-Padding")!].contains { $0.lowercased() == "true" }
            let body = try self.body(prefix: prefix, padding: padding)
            return Response(
                status: .ok,
                headers: [.contentType: "text/plain", .cacheControl: "public, max-age=2678400"],
                body: .init(byteBuffer: body)
            )
        }
        router.get("/") { _, _ in
            "Keyhaven range server: GET /range/{first 5 hex digits of a SHA-1}\n"
        }
        return router
    }

    /// An application serving the router on `host:port`; run it with `runService()` for graceful
    /// shutdown on SIGINT / SIGTERM.
    public func application(
        host: String = "127.0.0.1",
        port: Int = 8080,
        logger: Logger? = nil
    )
        -> some ApplicationProtocol
    {
        breachServerApplication(
            router(),
            host: host,
            port: port,
            logger: logger ?? Logger(label: "keyhaven.breach-server")
        )
    }

    /// Serves until SIGINT or SIGTERM, then shuts down gracefully (swift-service-lifecycle).
    public func run(host: String, port: Int) async throws {
        try await application(host: host, port: port).runService()
    }
}

/// The application both breach servers run: `router` on `host:port`, logging at info at most.
func breachServerApplication<Context: RequestContext>(
    _ router: Router<Context>,
    host: String,
    port: Int,
    logger: Logger
) -> some ApplicationProtocol where Context.Source == ApplicationRequestContextSource {
    var logger = logger
    if logger.logLevel > .info { logger.logLevel = .info }
    return Application(
        router: router,
        configuration: .init(address: .hostname(host, port: port), serverName: "Keyhaven"),
        logger: logger
    )
}

/// SplitMix64: fast, non-cryptographic; used only for padding rows.
struct FastRandom: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
