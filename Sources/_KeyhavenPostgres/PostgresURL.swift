import Foundation
public import Logging
public import PostgresNIO
import ServiceLifecycle
public import _KeyhavenSupport

/// Why a PostgreSQL URL was refused.
public typealias PostgresURLError = KeyhavenError<PostgresURLErrorDomain>

/// The domain of ``PostgresURLError``.
public enum PostgresURLErrorDomain: KeyhavenErrorDomain {}

extension PostgresURLError.Code {
    /// Not `postgres://user[:password]@host[:port]/database[?sslmode=…]` (see the message).
    public static var invalidURL: Self { Self("invalidURL") }
}

/// The one reading of a `postgres://` URL for Keyhaven's servers (the identity provider's and the
/// sync server's PostgreSQL storage).
public enum PostgresURL {
    /// postgres-nio's client configuration for
    /// `postgres://user:password@host:port/database[?sslmode=disable|prefer|require]`, at most 8
    /// connections. TLS is `require` (certificate verified) by default for any host that is not
    /// loopback, so a network attacker cannot downgrade the connection to plain text; `prefer` by
    /// default on loopback. Returns the mode in use too.
    /// True for `localhost` and loopback IP addresses (127.0.0.0/8 written as an IPv4 address,
    /// `::1`): a DNS name such as `127.example.com` is not loopback.
    public static func isLoopback(host: String) -> Bool {
        let lowered = host.lowercased()
        if ["localhost", "::1", "[::1]"].contains(lowered) { return true }
        let octets = lowered.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4,
            octets.allSatisfy({
                (1...3).contains($0.count) && $0.allSatisfy { $0.isASCII && $0.isNumber } && UInt8($0) != nil
            })
        else { return false }
        return octets[0] == "127"
    }

    public static func configuration(
        _ url: String
    ) throws(PostgresURLError) -> (configuration: PostgresClient.Configuration, sslMode: String) {
        guard let components = URLComponents(string: url), ["postgres", "postgresql"].contains(components.scheme),
            let user = components.user, !user.isEmpty
        else {
            throw PostgresURLError(
                .invalidURL,
                "expected postgres://user[:password]@host[:port]/database, got another form"
            )
        }
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        let host = components.host ?? "127.0.0.1"
        let loopback = isLoopback(host: host)
        let mode = components.queryItems?.first { $0.name == "sslmode" }?.value ?? (loopback ? "prefer" : "require")
        let tls: PostgresClient.Configuration.TLS
        switch mode {
        case "disable": tls = .disable
        case "require": tls = .require(.makeClientConfiguration())
        case "prefer": tls = .prefer(.makeClientConfiguration())
        default: throw PostgresURLError(.invalidURL, "sslmode must be disable, prefer or require")
        }
        var configuration = PostgresClient.Configuration(
            host: host,
            port: components.port ?? 5432,
            username: user.removingPercentEncoding ?? user,
            password: components.password?.removingPercentEncoding,
            database: database.isEmpty ? nil : database,
            tls: tls
        )
        configuration.options.maximumConnections = 8
        return (configuration, mode)
    }
}

extension PostgresURL {
    /// The connection pool for `url` (``configuration(_:)``), logging its background work to
    /// `logger`, and the TLS mode in use. The pool works while it runs (`runUntilGracefulShutdown()`
    /// in a service group, or `withRunning(_:)`).
    public static func pool(
        _ url: String,
        logger: Logger
    ) throws(PostgresURLError) -> (client: PostgresClient, sslMode: String) {
        let (configuration, sslMode) = try configuration(url)
        return (PostgresClient(configuration: configuration, backgroundLogger: logger), sslMode)
    }
}

extension PostgresClient {
    /// Runs the connection pool until the task is cancelled or its service group shuts down
    /// gracefully (a group stops services in reverse order, so list the database first).
    public func runUntilGracefulShutdown() async {
        await cancelWhenGracefulShutdown { await self.run() }
    }

    /// Runs `body` while the connection pool runs, then stops the pool (code without a service
    /// group: commands, tests).
    public func withRunning<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await self.run() }
            defer { group.cancelAll() }
            return try await body()
        }
    }
}
