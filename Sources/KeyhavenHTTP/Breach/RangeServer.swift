public import BreachCheck
public import Hummingbird
public import Logging
import HTTPTypes
import NIOCore

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

    static let hex = Array("0123456789ABCDEF".utf8)

    /// The response body for `prefix`, with padding when asked.
    public func body(prefix: UInt32, padding: Bool) throws -> [UInt8] {
        let records = try index.range(prefix: prefix)
        var rows: [(suffix: [UInt8], count: Int)] = records.map { record in
            // The suffix is the low nibble of byte 2, then bytes 3 ..< 20: 35 hex digits.
            var digits = [UInt8]()
            digits.reserveCapacity(35)
            digits.append(Self.hex[Int(record.suffix[0] & 0xF)])
            for byte in record.suffix[1...] {
                digits.append(Self.hex[Int(byte >> 4)])
                digits.append(Self.hex[Int(byte & 0xF)])
            }
            return (digits, record.count)
        }
        if padding {
            var generator = SystemRandomNumberGenerator()
            let target = Int.random(in: 800...1000, using: &generator)
            if rows.count < target {
                var taken = Set(rows.map(\.suffix))
                while rows.count < target {
                    let digits = (0..<35).map { _ in Self.hex[Int.random(in: 0..<16, using: &generator)] }
                    if taken.insert(digits).inserted {
                        rows.append((digits, 0))
                    }
                }
                rows.sort { $0.suffix.lexicographicallyPrecedes($1.suffix) }
            }
        }
        var body: [UInt8] = []
        body.reserveCapacity(rows.count * 44)
        for (position, row) in rows.enumerated() {
            if position > 0 { body.append(contentsOf: [13, 10]) }
            body.append(contentsOf: row.suffix)
            body.append(UInt8(ascii: ":"))
            body.append(contentsOf: String(row.count).utf8)
        }
        return body
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
                body: .init(byteBuffer: ByteBuffer(bytes: body))
            )
        }
        router.get("/") { _, _ in
            "Keyhaven range server: GET /range/{first 5 hex digits of a SHA-1}\n"
        }
        return router
    }

    /// An application serving the router on `host:port`; run it with `runService()` for graceful
    /// shutdown on SIGINT / SIGTERM.
    public func application(host: String = "127.0.0.1", port: Int = 8080, logger: Logger? = nil)
        -> some ApplicationProtocol
    {
        var logger = logger ?? Logger(label: "keyhaven.breach-server")
        if logger.logLevel > .info { logger.logLevel = .info }
        return Application(
            router: router(),
            configuration: .init(address: .hostname(host, port: port), serverName: "Keyhaven"),
            logger: logger
        )
    }

    /// Serves until SIGINT or SIGTERM, then shuts down gracefully (swift-service-lifecycle).
    public func run(host: String, port: Int) async throws {
        try await application(host: host, port: port).runService()
    }
}
