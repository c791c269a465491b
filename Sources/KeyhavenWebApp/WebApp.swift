public import AutoFill
import Crypto
public import Foundation
import Hummingbird
public import KeyhavenApp
import Logging
import NIOCore
import NIOPosix
public import SecurityRecommendations
import Synchronization
import Vault
import _KeyhavenSupport

/// Keyhaven's local web app (`keyhaven ui`): the vault, Security Recommendations, one-tap upgrades,
/// the generator, import and export, browser pairing and settings, served by the agent's process on
/// 127.0.0.1 and calling the same use cases as the CLI (``AuditService``, ``UpgradeService``,
/// ``ImportService``) on the agent's unlocked vault.
///
/// Security model (docs/web-app.md): only loopback is bound; every request's `Host` must be this
/// very `127.0.0.1:PORT` or `localhost:PORT` (DNS rebinding); a browser gets in only through a
/// one-time launch secret (``launchURL()``) exchanged for an HttpOnly, SameSite=Strict session
/// cookie; every state change carries the session's CSRF token and a same-origin `Origin`; the
/// Content-Security-Policy allows no inline script and no framing. Nothing secret is ever in a URL
/// after the launch, in a log or in an error page. The app locks with the agent.
///
/// Blocking work (the vault's synchronous SQLite, scrypt at unlock) runs on a thread pool of its own
/// (``blocking(_:)``), never on an event loop or Swift's cooperative pool; upgrades run on a
/// dedicated thread through a task executor preference.
public final class WebApp: Sendable {
    /// What the app may contact; the CLI wires HTTP, tests may wire their own.
    public struct Services: Sendable {
        /// The breach source the settings ask for.
        public var breachSource: @Sendable (WebSettings, URL) throws -> SecurityAudit.BreachSource
        /// What an audit may contact under the settings.
        public var auditNetwork: @Sendable (WebSettings) -> AuditService.Network
        /// Upgrades' manifests and transports.
        public var upgradeEnvironment: any UpgradeEnvironment

        public init(
            breachSource: @escaping @Sendable (WebSettings, URL) throws -> SecurityAudit.BreachSource,
            auditNetwork: @escaping @Sendable (WebSettings) -> AuditService.Network,
            upgradeEnvironment: any UpgradeEnvironment
        ) {
            self.breachSource = breachSource
            self.auditNetwork = auditNetwork
            self.upgradeEnvironment = upgradeEnvironment
        }
    }

    public struct Configuration: Sendable {
        public var now: @Sendable () -> Date
        /// Secrets (launch secrets, session tokens, CSRF tokens, ids).
        public var randomBytes: @Sendable (Int) -> [UInt8]
        /// How long a launch URL may wait to be opened.
        public var launchLifetime: TimeInterval
        /// How long a browser session lasts without a request.
        public var sessionIdle: TimeInterval
        /// How long an upgrade may wait for the service (its confirmation page included).
        public var upgradeDeadline: Duration

        public init(
            now: @escaping @Sendable () -> Date = { Date() },
            randomBytes: @escaping @Sendable (Int) -> [UInt8] = { count in
                var generator = SystemRandomNumberGenerator()
                return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
            },
            launchLifetime: TimeInterval = 5 * 60,
            sessionIdle: TimeInterval = 12 * 3600,
            upgradeDeadline: Duration = .seconds(600)
        ) {
            self.now = now
            self.randomBytes = randomBytes
            self.launchLifetime = launchLifetime
            self.sessionIdle = sessionIdle
            self.upgradeDeadline = upgradeDeadline
        }
    }

    struct Session: Sendable {
        var csrf: String
        var lastSeen: Date
        /// A message shown once on the next page ("Imported 3 credentials.").
        var flash: Flash?
    }

    struct Flash: Sendable {
        var text: String
        var kind: String
    }

    struct State: Sendable {
        var port: Int?
        /// SHA-256 of each unused launch secret → its expiry.
        var launchSecrets: [Data: Date] = [:]
        /// SHA-256 of each session token → the session.
        var sessions: [Data: Session] = [:]
        var previews: [String: ImportPreview] = [:]
        var audit: AuditCache?
        /// The settings read from the vault (``settings(_:)``).
        var settings: WebSettings?
        var server: Task<Void, any Error>?
    }

    public let agent: AutoFillAgent
    let services: Services
    let configuration: Configuration
    let state = Mutex(State())
    let runs = UpgradeRuns()

    public init(agent: AutoFillAgent, services: Services, configuration: Configuration = .init()) {
        self.agent = agent
        self.services = services
        self.configuration = configuration
        // Locks with the agent (idle time, `keyhaven lock`, the Lock button): what the app read from
        // the vault — the audit, import previews with their passwords — is dropped at once.
        _ = agent.addListener(pairingId: Self.listenerName) { [weak self] event in
            guard event["event"]?.string == "state", event["state"]?.string == "locked" else { return }
            self?.state.withLock {
                $0.audit = nil
                $0.settings = nil
                $0.previews = [:]
            }
        }
    }

    /// The agent's events reach the app under this name (it is no browser pairing).
    static let listenerName = "keyhaven-web-app"

    var now: Date { configuration.now() }

    /// The port the app listens on, once it does.
    public var port: Int? { state.withLock { $0.port } }

    /// The origin pages are served from.
    var origin: String { "http://127.0.0.1:\(port ?? 0)" }

    // MARK: Serving

    /// Starts listening on 127.0.0.1:`port` (0: any free port) unless already listening, and returns
    /// the bound port. Blocks the calling thread until the socket is bound: call it from a thread of
    /// the agent's own, never from async code.
    public func startBlocking(port requested: Int) throws -> Int {
        if let port { return port }
        let ready = DispatchSemaphore(value: 0)
        let outcome = Mutex<Result<Int, any Error>?>(nil)
        let task = Task<Void, any Error> {
            do {
                try await self.serve(port: requested) { bound in
                    outcome.withLock { $0 = .success(bound) }
                    ready.signal()
                }
            } catch {
                outcome.withLock { if $0 == nil { $0 = .failure(error) } }
                ready.signal()
            }
        }
        ready.wait()
        switch outcome.withLock({ $0 }) {
        case .success(let bound):
            state.withLock {
                $0.port = bound
                $0.server = task
            }
            return bound
        case .failure(let error):
            throw WebAppError(.cannotListen, "The web app cannot listen on 127.0.0.1:\(requested): \(error)")
        case nil:
            throw WebAppError(.cannotListen, "The web app stopped before it listened.")
        }
    }

    /// Serves until the task is cancelled; `onReady` gets the bound port.
    public func serve(port: Int, onReady: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        var logger = Logger(label: "keyhaven.web-app")
        // Requests are never logged: URLs of the launch carry a secret.
        logger.logLevel = .critical
        let app = Application(
            router: router(),
            configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: "keyhaven"),
            onServerRunning: { channel in
                let bound = channel.localAddress?.port ?? port
                self.state.withLock { $0.port = bound }
                await onReady(bound)
            },
            logger: logger
        )
        try await app.runService()
    }

    /// Stops serving (the agent is stopping).
    public func stop() {
        let task = state.withLock { state -> Task<Void, any Error>? in
            defer { state.server = nil }
            return state.server
        }
        task?.cancel()
    }

    // MARK: Launch secrets and sessions

    /// A new one-time launch URL (`/launch?secret=…`); the secret is good for one browser, once,
    /// within ``Configuration/launchLifetime``.
    public func launchURL() -> String {
        let secret = Base64URL.encode(Data(configuration.randomBytes(32)))
        let expiry = now.addingTimeInterval(configuration.launchLifetime)
        state.withLock { state in
            let now = self.now
            state.launchSecrets = state.launchSecrets.filter { $0.value > now }
            state.launchSecrets[Self.digest(secret)] = expiry
        }
        return "\(origin)/launch?secret=\(secret)"
    }

    /// Exchanges a launch secret for a new session token (nil when unknown, used or expired).
    func redeemLaunchSecret(_ secret: String) -> String? {
        let key = Self.digest(secret)
        let token = Base64URL.encode(Data(configuration.randomBytes(32)))
        let csrf = Base64URL.encode(Data(configuration.randomBytes(24)))
        return state.withLock { state -> String? in
            // Looked up by digest: the comparison never touches the secret itself.
            guard let expiry = state.launchSecrets.removeValue(forKey: key), expiry > now else { return nil }
            state.sessions[Self.digest(token)] = Session(csrf: csrf, lastSeen: now)
            return token
        }
    }

    /// The session a cookie names, touched; nil when unknown or idle too long.
    func session(token: String) -> Session? {
        let key = Self.digest(token)
        return state.withLock { state -> Session? in
            guard var session = state.sessions[key] else { return nil }
            guard now.timeIntervalSince(session.lastSeen) < configuration.sessionIdle else {
                state.sessions[key] = nil
                return nil
            }
            session.lastSeen = now
            state.sessions[key] = session
            return session
        }
    }

    func setFlash(token: String, _ text: String, kind: String = "ok") {
        state.withLock { $0.sessions[Self.digest(token)]?.flash = Flash(text: text, kind: kind) }
    }

    func takeFlash(token: String) -> Flash? {
        state.withLock { state -> Flash? in
            let key = Self.digest(token)
            defer { state.sessions[key]?.flash = nil }
            return state.sessions[key]?.flash
        }
    }

    /// The session cookie's name: one per port, so two apps on one machine do not share it.
    var cookieName: String { "keyhaven_session_\(port ?? 0)" }

    static func digest(_ text: String) -> Data { Data(SHA256.hash(data: Data(text.utf8))) }

    func newID() -> String { Base64URL.encode(Data(configuration.randomBytes(12))) }

    // MARK: Blocking work

    /// Runs `work` (synchronous SQLite, scrypt) on NIO's blocking thread pool.
    func blocking<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await NIOThreadPool.singleton.runIfActive(work)
    }

    /// The unlocked vault, with changes other processes made picked up (two `stat`s).
    func vault() async throws -> Vault {
        try await blocking {
            self.agent.refreshIfChangedOnDisk()
            return try self.agent.vault()
        }
    }
}

/// Why the web app refused or failed (its codes are stable; messages are for people).
public struct WebAppError: Error, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let name: String
        public var description: String { name }
        public static let cannotListen = Code(name: "cannotListen")
        public static let forbidden = Code(name: "forbidden")
        public static let notFound = Code(name: "notFound")
        public static let badRequest = Code(name: "badRequest")
        public static let locked = Code(name: "locked")
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
