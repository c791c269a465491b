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
public import _KeyhavenSupport

@_exported public import struct _KeyhavenSupport.KeyhavenError

/// Keyhaven's local web app (`keyhaven ui`): the vault, Security Recommendations, one-tap upgrades,
/// the generator, import and export, browser pairing and settings, served by the agent's process on
/// 127.0.0.1 and calling the same use cases as the CLI (``AuditService``, ``UpgradeService``,
/// ``ImportService``) on the agent's unlocked vault.
///
/// Security model (docs/web-app.md): only loopback is bound, and connections from processes of
/// another user are closed before a byte is read (``SameUserOnly``); every request's `Host` must be
/// this very `127.0.0.1:PORT` (DNS rebinding); a browser gets in only through a one-time launch
/// secret (``launch(redirectFileIn:)``, handed to the browser in a private file, never on a command
/// line) exchanged for a session that needs *two* things on every request: an HttpOnly,
/// SameSite=Strict cookie and a capability in the path (`/s/CAPABILITY/…`) that only the app's own
/// pages carry. Cookies ignore ports, so a cookie that reaches another server on 127.0.0.1 opens
/// nothing by itself. Every state change carries the session's CSRF token and a same-origin
/// `Origin`; the Content-Security-Policy allows no inline script and no framing. Nothing secret is
/// in a log or an error page. The app locks with the agent.
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
        /// Sync's requests (`SessionRequest.syncStatus`, `.syncConflicts`, `.syncResolve`,
        /// `.syncNow`), answered by the agent's session with sync (`answerWithSync`); nil: the sync
        /// page says sync is not available here.
        public var sync: (@Sendable (SessionRequest) async -> SessionResponse)?

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
        /// How long a page waits for the audit's offline findings before it shows what it has
        /// (and updates itself when they are ready). Pages never wait for the network.
        public var auditPatience: Duration
        /// How the audit asks sites (in the background: a minute in all by default).
        public var auditLookups: SiteLookups.Limits

        public init(
            now: @escaping @Sendable () -> Date = { Date() },
            randomBytes: @escaping @Sendable (Int) -> [UInt8] = { count in
                var generator = SystemRandomNumberGenerator()
                return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
            },
            launchLifetime: TimeInterval = 5 * 60,
            sessionIdle: TimeInterval = 12 * 3600,
            upgradeDeadline: Duration = .seconds(600),
            auditPatience: Duration = .milliseconds(50),
            auditLookups: SiteLookups.Limits = SiteLookups.Limits(budget: .seconds(60))
        ) {
            self.now = now
            self.randomBytes = randomBytes
            self.launchLifetime = launchLifetime
            self.sessionIdle = sessionIdle
            self.upgradeDeadline = upgradeDeadline
            self.auditPatience = auditPatience
            self.auditLookups = auditLookups
        }
    }

    struct Session: Sendable {
        /// SHA-256 of the capability in the session's paths (`/s/CAPABILITY/…`).
        var capability: Data
        var csrf: String
        var lastSeen: Date
        /// A message shown once on the next page ("Imported 3 credentials.").
        var flash: Flash?
    }

    struct Flash: Sendable {
        var text: String
        var kind: String
    }

    /// An unused launch secret: when it expires, and the redirect file that carries it, if any.
    struct PendingLaunch: Sendable {
        var expiry: Date
        var file: URL?
    }

    struct State: Sendable {
        var port: Int?
        /// SHA-256 of each unused launch secret → its expiry and file.
        var launches: [Data: PendingLaunch] = [:]
        /// SHA-256 of each session token → the session.
        var sessions: [Data: Session] = [:]
        var previews: [String: ImportPreview] = [:]
        var audit: AuditCache?
        /// The audit running (or done) in the background for the latest key (``audit(_:need:)``).
        var auditRun: AuditRun?
        /// Audits started so far (each run's id).
        var auditRuns = 0
        /// The settings read from the vault (``settings(_:)``).
        var settings: WebSettings?
        var server: Task<Void, any Error>?
        /// Whether the session's lock reaches ``forgetWhatWasRead()``.
        var following = false
    }

    public let agent: AutoFillAgent
    let services: Services
    let configuration: Configuration
    let state = Mutex(State())
    let runs = UpgradeRuns()

    /// The unlocked Keyhaven the app shows (the agent's, which every front end shares).
    public var session: KeyhavenSession { agent.session }

    public init(agent: AutoFillAgent, services: Services, configuration: Configuration = .init()) {
        self.agent = agent
        self.services = services
        self.configuration = configuration
        // Locks with the session (idle time, `keyhaven lock`, the Lock button): what the app read
        // from the vault — the audit, import previews with their passwords — is dropped at once; an
        // unlock (here or `keyhaven unlock`) starts the audit, so the first page finds it under way
        // (`followSession`; every read of the vault makes sure of it too).
        Task { [weak self] in await self?.followSession() }
    }

    /// Observes the session (once): at its lock, ``forgetWhatWasRead()`` runs before the lock
    /// returns, so no page answers from what was read before it; at its unlock the audit starts.
    func followSession() async {
        let already = state.withLock { state in
            defer { state.following = true }
            return state.following
        }
        if already { return }
        await session.observe { [weak self] event in
            guard let self else { return }
            switch event {
            case .locked: self.forgetWhatWasRead()
            case .unlocked: self.auditAfterUnlock()
            case .changed: break
            }
        }
    }

    func forgetWhatWasRead() {
        state.withLock {
            self.dropAudit(&$0)
            $0.settings = nil
            $0.previews = [:]
        }
    }

    var now: Date { configuration.now() }

    /// The port the app listens on, once it does.
    public var port: Int? { state.withLock { $0.port } }

    /// The origin pages are served from. Only `127.0.0.1`, never `localhost`: browsers may resolve
    /// `localhost` to `::1`, where another user can listen on the same port.
    var origin: String { "http://127.0.0.1:\(port ?? 0)" }

    // MARK: Serving

    /// Starts listening on 127.0.0.1:`port` (0: any free port) unless already listening, and returns
    /// the bound port. Blocks the calling thread until the socket is bound: call it from a thread of
    /// the agent's own, never from async code.
    ///
    /// - Throws: ``WebAppError`` `.cannotListen` when the app already listens on another port than
    ///   the one asked for, or when the port is taken: the message says by whom when it can be
    ///   learned (another user, or which program of ours), so nobody is sent to a server that is
    ///   not this app.
    public func start(port requested: Int) async throws -> Int {
        if let port {
            guard requested == 0 || requested == port else {
                throw WebAppError(
                    .cannotListen,
                    "The web app already listens on 127.0.0.1:\(port), not \(requested): leave out --port, "
                        + "or stop the agent (`keyhaven agent stop`) to move it."
                )
            }
            return port
        }
        let (ready, signal) = AsyncStream.makeStream(of: Void.self)
        let outcome = Mutex<Result<Int, any Error>?>(nil)
        let task = Task<Void, any Error> {
            do {
                try await self.serve(port: requested) { bound in
                    outcome.withLock { $0 = .success(bound) }
                    signal.finish()
                }
            } catch {
                outcome.withLock { if $0 == nil { $0 = .failure(error) } }
                signal.finish()
            }
        }
        for await _ in ready {}
        switch outcome.withLock({ $0 }) {
        case .success(let bound):
            state.withLock {
                $0.port = bound
                $0.server = task
            }
            return bound
        case .failure(let error):
            if requested != 0, let holder = LoopbackTCP.describeHolder(ofPort: requested) {
                throw WebAppError(.cannotListen, holder)
            }
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
            // `/s/CAPABILITY/…` is routed as `/…` with the capability in the context (``SessionPaths``).
            responder: SessionPaths(inner: router().buildResponder()),
            // A process of another user gets its connection closed before it is read.
            server: .http1(configuration: .init(additionalChannelHandlers: [SameUserOnly()])),
            configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: "keyhaven"),
            onServerRunning: { channel in
                let bound = channel.localAddress?.port ?? port
                self.state.withLock { $0.port = bound }
                await onReady(bound)
            },
            logger: logger
        )
        // No signal handling of its own: the web app lives inside the agent, which locks and ends
        // on SIGTERM, SIGINT and SIGHUP (`TerminationSignals`). Hummingbird's default would
        // install its own (ignoring the signal, then reading it through Dispatch), and from the
        // first `keyhaven ui` on, `kill PID` or a logout stopped only the web app and left the
        // agent running unlocked.
        try await app.runService(gracefulShutdownSignals: [])
    }

    /// Stops serving (the agent is stopping); unused launch files are removed.
    public func stop() {
        let (task, launches) = state.withLock { state -> (Task<Void, any Error>?, [PendingLaunch]) in
            defer {
                state.server = nil
                state.launches = [:]
            }
            return (state.server, Array(state.launches.values))
        }
        task?.cancel()
        for case let file? in launches.map(\.file) { LaunchFile.remove(file) }
    }

    // MARK: Launch secrets and sessions

    /// A launch: the URL that lets one browser in once, and the private redirect file that carries
    /// it to the browser (when one was asked for).
    public struct Launch: Sendable {
        /// `http://127.0.0.1:PORT/launch?secret=…`.
        public var url: String
        /// A 0600 HTML file that sends the browser to ``url``: what `keyhaven ui` opens, so the
        /// secret is in no process's argv or environment (security review #3). It is removed once
        /// the secret is used or expired.
        public var file: URL?
    }

    /// A new one-time launch (`/launch?secret=…`): the secret is good for one browser, once, within
    /// ``Configuration/launchLifetime``. With `folder` (the agent's private runtime folder), the URL
    /// is also written into a redirect file there (``LaunchFile``) for the browser to open.
    public func launch(redirectFileIn folder: URL? = nil) throws -> Launch {
        let secret = Base64URL.encode(Data(configuration.randomBytes(32)))
        let url = "\(origin)/launch?secret=\(secret)"
        let file = try folder.map { try LaunchFile.write(url: url, in: $0, name: newID()) }
        let key = Self.digest(secret)
        let lifetime = configuration.launchLifetime
        expireLaunches()
        state.withLock { $0.launches[key] = PendingLaunch(expiry: now.addingTimeInterval(lifetime), file: file) }
        if file != nil {
            // The file goes when the secret expires, even if nobody asks the app anything meanwhile.
            Task.detached { [weak self] in
                try? await Task.sleep(for: .seconds(lifetime))
                self?.endLaunch(key)
            }
        }
        return Launch(url: url, file: file)
    }

    /// A new one-time launch URL without a file (`keyhaven ui --no-open`, the demo, tests).
    public func launchURL() -> String {
        // Without a folder nothing is written, so nothing can fail.
        (try? launch().url) ?? ""
    }

    /// Forgets launch secrets that expired, and removes their files.
    func expireLaunches() {
        let expired = state.withLock { state -> [PendingLaunch] in
            let now = self.now
            let expired = state.launches.filter { $0.value.expiry <= now }
            for key in expired.keys { state.launches[key] = nil }
            return Array(expired.values)
        }
        for case let file? in expired.map(\.file) { LaunchFile.remove(file) }
    }

    /// Forgets one launch secret (used, or its time is up) and removes its file.
    func endLaunch(_ key: Data) {
        let ended = state.withLock { $0.launches.removeValue(forKey: key) }
        if let file = ended?.file { LaunchFile.remove(file) }
    }

    /// A session's two halves: the cookie's token and the capability in its paths.
    struct SessionKeys: Sendable {
        var token: String
        var capability: String
        /// `/s/CAPABILITY`: what every page's links and the app's redirects start with.
        var base: String { "/s/\(capability)" }
    }

    /// Exchanges a launch secret for a new session (nil when unknown, used or expired); its
    /// redirect file is removed either way once the secret is known.
    func redeemLaunchSecret(_ secret: String) -> SessionKeys? {
        expireLaunches()
        let key = Self.digest(secret)
        let keys = SessionKeys(
            token: Base64URL.encode(Data(configuration.randomBytes(32))),
            capability: Base64URL.encode(Data(configuration.randomBytes(32)))
        )
        let csrf = Base64URL.encode(Data(configuration.randomBytes(24)))
        let (redeemed, launch) = state.withLock { state -> (Bool, PendingLaunch?) in
            // Looked up by digest: the comparison never touches the secret itself.
            guard let launch = state.launches.removeValue(forKey: key) else { return (false, nil) }
            guard launch.expiry > now else { return (false, launch) }
            state.sessions[Self.digest(keys.token)] = Session(
                capability: Self.digest(keys.capability),
                csrf: csrf,
                lastSeen: now
            )
            return (true, launch)
        }
        if let file = launch?.file { LaunchFile.remove(file) }
        return redeemed ? keys : nil
    }

    /// The session that both the cookie's token and the path's capability name, touched; nil when
    /// either is missing or wrong, or the session was idle too long. The cookie alone (which
    /// browsers send to every port of 127.0.0.1) opens nothing.
    func session(token: String, capability: String?) -> Session? {
        guard let capability else { return nil }
        let key = Self.digest(token)
        let given = Self.digest(capability)
        return state.withLock { state -> Session? in
            guard var session = state.sessions[key], constantTimeEqual(given, session.capability) else { return nil }
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

    /// The session cookie's name. Its `Path` is the session's own `/s/CAPABILITY/`, so two apps on
    /// one machine never share it, and the browser sends it to no other path of any port.
    static let cookieName = "keyhaven_session"

    static func digest(_ text: String) -> Data { Data(SHA256.hash(data: Data(text.utf8))) }

    func newID() -> String { Base64URL.encode(Data(configuration.randomBytes(12))) }

    // MARK: Blocking work

    /// Runs `work` (synchronous SQLite) on the session's own thread (``KeyhavenSession``: the one
    /// rule for blocking work), never on an event loop or the cooperative pool.
    func blocking<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await session.perform(work)
    }

    /// The unlocked vault, with changes other processes made picked up (two `stat`s).
    func vault() async throws -> Vault {
        await followSession()
        do {
            return try await session.withVault { $0 }
        } catch let error as SessionError where error.code == .locked {
            throw WebAppError(.locked, "Keyhaven is locked.")
        }
    }
}

/// Why the web app refused or failed (its codes are stable: the API answers `{"error": code}`;
/// messages are for people).
public typealias WebAppError = KeyhavenError<WebAppErrorDomain>

/// The domain of ``WebAppError``.
public enum WebAppErrorDomain: KeyhavenErrorDomain {}

extension WebAppError.Code {
    /// The app cannot listen on its port.
    public static var cannotListen: Self { Self("cannotListen") }
    /// Refused: a request from elsewhere, a stale form, a folder that is not the person's own.
    public static var forbidden: Self { Self("forbidden") }
    /// No session: the page asks for the launch link again.
    public static var unauthorized: Self { Self("unauthorized") }
    public static var notFound: Self { Self("notFound") }
    public static var badRequest: Self { Self("badRequest") }
    /// The vault is locked.
    public static var locked: Self { Self("locked") }
}
